"""A plain Triton starting point for KernelBench level 1 problem 1 (C = A @ B, fp32 N×N), as a launch file for
`kernel-tui import kernelbench … --baseline`: one output tile per program in row-major order, the same
naive schedule as the matmul fixture's baseline, so that the built-in search has knobs to move. Its tl.dot
computes in full fp32 (input_precision="ieee"): Triton's default, TF32 on the tensor cores, misses the task's
fp32 tolerance (KernelBench's, 1e-4) by far at N = 4096 (measured on an H200: every element off, by up to
0.75 on values near 1000). The yardstick is torch.matmul in fp32, TF32 off (PyTorch's default)."""

import torch
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 64
BLOCK_K = 32


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < N
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, N, BLOCK_K):
        k_idx = k_start + offs_k
        mask_k = k_idx < N
        a = tl.load(a_ptr + offs_m[:, None] * N + k_idx[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(b_ptr + k_idx[:, None] * N + offs_n[None, :], mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :])


def launch(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor, N: int) -> None:
    grid = (triton.cdiv(N, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](A, B, out, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=8)
