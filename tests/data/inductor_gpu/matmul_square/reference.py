"""KernelBench level 1 problem 1_Square_matrix_multiplication_: Simple model that performs a single square matrix multiplication (C = A * B)"""

import torch


def reference(A, B, out, N):
    return torch.matmul(A, B)
