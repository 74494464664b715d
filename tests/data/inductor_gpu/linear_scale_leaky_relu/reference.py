"""KernelBench level 2 problem 12_Gemm_Multiply_LeakyReLU: Simple model that performs a Gemm, multiplies the result, and applies LeakyReLU."""

import torch


def reference(x, gemm_weight, gemm_bias, out, batch_size, in_features, out_features):
    return torch.nn.functional.leaky_relu(torch.nn.functional.linear(x, gemm_weight, gemm_bias) * 2.0, 0.1)
