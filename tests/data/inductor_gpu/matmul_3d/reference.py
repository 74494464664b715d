"""KernelBench level 1 problem 10_3D_tensor_matrix_multiplication: Performs 3D tensor-matrix multiplication."""

import torch


def reference(A, B, out, N, M, K, L):
    return torch.matmul(A, B)
