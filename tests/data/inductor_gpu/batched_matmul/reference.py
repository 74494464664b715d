"""KernelBench level 1 problem 3_Batched_matrix_multiplication: Performs batched matrix multiplication (C = A * B) where A, B, and C have the same batch dimension."""

import torch


def reference(A, B, out, batch_size, m, k, n):
    return torch.bmm(A, B)
