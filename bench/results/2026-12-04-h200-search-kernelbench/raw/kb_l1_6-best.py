"""A plain Triton starting point for KernelBench level 1 problem 6 (C = A @ B, fp32, M = N = 256, K = 524288),
as a launch file for `kernel-tui import kernelbench … --baseline`: the matmul fixture's naive schedule (one
output tile per program, row-major), so at the native shape 16 programs of 64×64 share 132 SMs and each walks
all of K. The shape split-K is for. tl.dot computes in full fp32 (input_precision="ieee"): one-pass TF32 misses
the task's 1e-4 tolerance over half a million products. The yardstick is torch.matmul in fp32, TF32 off."""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 64


SPLIT_K = 4  # programs per output tile of matmul_kernel, each summing every SPLIT_K-th block of K


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    partial_ptr,
    stride_pk,
    stride_pm,
    stride_pn,
    SPLIT_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    USE_TMA: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    pid_k = tl.program_id(axis=1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if USE_TMA:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    for k_start in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        k_idx = k_start + offs_k
        mask_k = k_idx < K
        if USE_TMA:
            a_tile = a_desc.load([pid_m * BLOCK_M, k_start])
            b_tile = b_desc.load([k_start, pid_n * BLOCK_N])
        else:
            a_ptrs = a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak
            b_ptrs = b_ptr + k_idx[:, None] * stride_bk + offs_n[None, :] * stride_bn
            a_tile = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b_tile = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a_tile, b_tile, acc, input_precision="tf32x3")

    c_ptrs = partial_ptr + pid_k.to(tl.int64) * stride_pk + offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
    tl.store(c_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def matmul_kernel_sum_splits(
    c_ptr, partial_ptr, M, N, stride_cm, stride_cn, stride_pk, stride_pm, stride_pn,
    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
):
    """c_ptr = the SPLIT_K partial sums of matmul_kernel, added in split order (the same sum on every run)."""
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    row = offs // N
    col = offs % N
    ptrs = partial_ptr + row * stride_pm + col * stride_pn
    total = tl.load(ptrs, mask=mask, other=0.0)
    for _ in tl.static_range(1, SPLIT_K):
        ptrs += stride_pk
        total += tl.load(ptrs, mask=mask, other=0.0)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, total.to(c_ptr.dtype.element_ty), mask=mask)


def tma_scratch(size, alignment, stream):
    """Global memory for the tensor descriptors a kernel makes on the GPU: Triton asks for it at each launch."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def set_tma_allocator(tensor):
    """Triton's allocator set to tma_scratch, before each launch on a GPU: Triton keeps it in a context variable,
    which a thread that launches sees only when it set it itself."""
    if tensor.device.type == "cuda":
        triton.set_allocator(tma_scratch)


def launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> None:
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    partial = torch.empty((SPLIT_K, M, N), device=c.device, dtype=torch.float32)
    set_tma_allocator(a)
    matmul_kernel[(grid[0], SPLIT_K)](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        num_warps=2,
        num_stages=3,
        partial_ptr=partial,
        stride_pk=partial.stride(0),
        stride_pm=partial.stride(1),
        stride_pn=partial.stride(2),
        SPLIT_K=SPLIT_K,
        GROUP_M=8,
        USE_TMA=(a.stride(1) == 1 and b.stride(1) == 1 and a.stride(0) * a.element_size() % 16 == 0 and b.stride(0) * b.element_size() % 16 == 0 and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0),
    )
    matmul_kernel_sum_splits[(triton.cdiv(M * N, 1024),)](
        c, partial, M, N, c.stride(0), c.stride(1), partial.stride(0), partial.stride(1), partial.stride(2),
        SPLIT_K=SPLIT_K, BLOCK=1024,
    )
