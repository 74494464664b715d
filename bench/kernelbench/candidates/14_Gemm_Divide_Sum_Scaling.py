"""KernelBench L2-14 Gemm, / 2, sum over features, * 1.5: the sum of x @ W^T over the hidden dim equals
x @ (column sums of W), so the 137-GFLOP GEMM becomes one streaming pass over W plus a matrix-vector product.
Both sums run in float64, so the reassociation adds no rounding error of its own."""

import torch
import triton
import triton.language as tl

HALF_TIMES_SCALE = 0.5 * 1.5  # x / 2, then * scaling_factor
BLOCK_H = 16
BLOCK_K = 128
TARGET_PROGRAMS = 1024
ROWS_PER_PROGRAM = 2
DOT_BLOCK_K = 1024


@triton.jit
def colsum_partial_kernel(w_ptr, part_ptr, H, K, h_per_split, n_kblocks, stride_wh,
                          BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    split = pid // n_kblocks
    ks = (pid % n_kblocks) * BLOCK_K + tl.arange(0, BLOCK_K)
    k_mask = ks < K
    h_lo = split * h_per_split
    h_hi = tl.minimum(h_lo + h_per_split, H)
    hs = tl.arange(0, BLOCK_H)
    acc = tl.zeros([BLOCK_H, BLOCK_K], tl.float64)
    for start in range(h_lo, h_hi, BLOCK_H):
        h = start + hs
        mask = (h < h_hi)[:, None] & k_mask[None, :]
        w = tl.load(w_ptr + h.to(tl.int64)[:, None] * stride_wh + ks[None, :], mask=mask, other=0.0)
        acc += w.to(tl.float64)
    tl.store(part_ptr + split.to(tl.int64) * K + ks, tl.sum(acc, axis=0), mask=k_mask)


@triton.jit
def colsum_finish_kernel(part_ptr, colsum_ptr, K, n_splits, BLOCK: tl.constexpr):
    ks = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    k_mask = ks < K
    acc = tl.zeros([BLOCK], tl.float64)
    for s in range(0, n_splits):
        acc += tl.load(part_ptr + s * K + ks, mask=k_mask, other=0.0)
    tl.store(colsum_ptr + ks, acc, mask=k_mask)


@triton.jit
def row_dot_kernel(x_ptr, colsum_ptr, out_ptr, B, K, stride_xb, stride_ob, scale,
                   ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < B
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_xb
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros([ROWS, BLOCK_K], tl.float64)
    for start in range(0, K, BLOCK_K):
        k = start + ks
        k_mask = k < K
        c = tl.load(colsum_ptr + k, mask=k_mask, other=0.0)
        x = tl.load(x_rows + k[None, :], mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        acc += x.to(tl.float64) * c[None, :]
    total = tl.sum(acc, axis=1) * scale
    tl.store(out_ptr + rows.to(tl.int64) * stride_ob, total.to(tl.float32), mask=row_mask)


def launch(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, input_size, hidden_size (sizes are read from the tensors)."""
    batch, k = x.shape
    h = weight.shape[0]
    n_kblocks = triton.cdiv(k, BLOCK_K)
    n_splits = max(1, min(triton.cdiv(h, BLOCK_H), triton.cdiv(TARGET_PROGRAMS, n_kblocks)))
    h_per_split = triton.cdiv(triton.cdiv(h, n_splits), BLOCK_H) * BLOCK_H
    n_splits = max(1, triton.cdiv(h, h_per_split))  # no empty trailing slice
    part = torch.empty((n_splits, k), dtype=torch.float64, device=x.device)
    colsum = torch.empty(k, dtype=torch.float64, device=x.device)
    colsum_partial_kernel[(n_splits * n_kblocks,)](
        weight, part, h, k, h_per_split, n_kblocks, weight.stride(0), BLOCK_H=BLOCK_H, BLOCK_K=BLOCK_K, num_warps=4,
    )
    colsum_finish_kernel[(triton.cdiv(k, 256),)](part, colsum, k, n_splits, BLOCK=256, num_warps=4)
    row_dot_kernel[(triton.cdiv(batch, ROWS_PER_PROGRAM),)](
        x, colsum, out, batch, k, x.stride(0), out.stride(0), HALF_TIMES_SCALE,
        ROWS=ROWS_PER_PROGRAM, BLOCK_K=DOT_BLOCK_K, num_warps=8,
    )
