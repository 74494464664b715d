# torch.compile's kernels (Inductor, torch 2.11.0): the kernels torch.compile generated for this task's reference, rewritten as a start.
"""Triton start from torch.compile (Inductor): its kernels as plain @triton.jit functions and its wrapper's
launches in one launch(); block sizes are the module-level constants, warps and stages the launch's keywords."""

import torch
import triton
import triton.language as tl


BLOCK_M_0 = 128
BLOCK_N_0 = 128
BLOCK_K_0 = 32
GROUP_M_0 = 8


@triton.jit
def triton_tem_fused_mm_permute_0(arg_A, arg_B, out_ptr0, ks0, ks1, ks2, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    EVEN_K: tl.constexpr = False
    USE_FAST_ACCUM: tl.constexpr = False
    ACC_TYPE: tl.constexpr = tl.float32
    INDEX_DTYPE: tl.constexpr = tl.int32
    A = arg_A
    B = arg_B
    M = ks0
    N = ks1
    K = ks2
    if M * N == 0:
        return
    stride_am = ks2
    stride_ak = 1
    stride_bk = 1
    stride_bn = ks2
    pid = tl.program_id(0).to(INDEX_DTYPE)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + pid % group_size
    pid_n = pid % width // group_size
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if (stride_am == 1 and stride_ak == M or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
        offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_a_m = rm % M
    if (stride_bk == 1 and stride_bn == K or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
        offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_b_n = rn % N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):
        a_mask = offs_k[None, :] < K - k_idx * BLOCK_K
        b_mask = offs_k[:, None] < K - k_idx * BLOCK_K
        a_k_idx_vals = offs_k[None, :] + k_idx * BLOCK_K
        b_k_idx_vals = offs_k[:, None] + k_idx * BLOCK_K
        idx_m = offs_a_m[:, None]
        idx_n = a_k_idx_vals
        xindex = idx_n + idx_m * ks2
        a = tl.load(A + xindex, mask=a_mask, other=0.0)
        idx_m = b_k_idx_vals
        idx_n = offs_b_n[None, :]
        xindex = idx_n + idx_m * ks1
        b = tl.load(B + tl.broadcast_to(idx_m + idx_n * ks2, [BLOCK_K, BLOCK_N]).broadcast_to(xindex.shape), mask=b_mask, other=0.0)
        acc += tl.dot(a, b, input_precision='ieee', out_dtype=ACC_TYPE)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)
    xindex = idx_n + idx_m * ks1
    tl.store(out_ptr0 + tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N]), acc, mask)


def launch(A, B, out, M, K, N):
    s55 = B.shape[0]
    s84 = B.shape[1]
    s85 = A.shape[0]
    triton_tem_fused_mm_permute_0[(triton.cdiv(s85, BLOCK_M_0) * triton.cdiv(s55, BLOCK_N_0), 1, 1)](A, B, out, s85, s55, s84, BLOCK_M=BLOCK_M_0, BLOCK_N=BLOCK_N_0, BLOCK_K=BLOCK_K_0, GROUP_M=GROUP_M_0, num_warps=4, num_stages=3)
