"""KernelBench level 2 problem 59_Matmul_Swish_Scaling: Simple model that performs a matrix multiplication, applies Swish activation, and scales the result."""

import torch


def _swish(y):
    return y * torch.sigmoid(y)


def reference(x, matmul_weight, matmul_bias, out, batch_size, in_features, out_features):
    return _swish(torch.nn.functional.linear(x, matmul_weight, matmul_bias)) * 2.0
