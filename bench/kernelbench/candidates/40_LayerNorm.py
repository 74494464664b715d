"""KernelBench L1-40 LayerNorm over the last three dims (4M elements per row, only 16 rows): a row is far
too long for one program, so (1) every 4096-element chunk gets its own mean and centred sum of squares,
(2) one small program per row merges them exactly (Chan's parallel formula, no E[x^2] - E[x]^2
cancellation), (3) a chunk-major grid normalises, so the 16 rows share each weight/bias chunk in L2."""

import torch
import triton
import triton.language as tl

EPS = 1e-5
CHUNK = 4096
MERGE_BLOCK = 1024


@triton.jit
def chunk_stats_kernel(x_ptr, mean_ptr, m2_ptr, N, n_chunks, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    row = (pid // n_chunks).to(tl.int64)
    start = (pid % n_chunks) * CHUNK
    offs = start + tl.arange(0, CHUNK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    count = tl.minimum(N - start, CHUNK).to(tl.float32)
    mean = tl.sum(x, axis=0) / count
    d = tl.where(mask, x - mean, 0.0)
    tl.store(mean_ptr + pid, mean)
    tl.store(m2_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def merge_stats_kernel(mean_ptr, m2_ptr, row_mean_ptr, row_rstd_ptr, N, n_chunks, eps,
                       CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_chunks
    idx = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_chunks, BLOCK):
        c = start + idx
        mask = c < n_chunks
        count = tl.minimum(N - c * CHUNK, CHUNK).to(tl.float32)
        total += tl.where(mask, count * tl.load(mean_ptr + base + c, mask=mask, other=0.0), 0.0)
    mean = tl.sum(total, axis=0) / N
    m2 = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_chunks, BLOCK):
        c = start + idx
        mask = c < n_chunks
        count = tl.minimum(N - c * CHUNK, CHUNK).to(tl.float32)
        d = tl.load(mean_ptr + base + c, mask=mask, other=0.0) - mean
        m2 += tl.where(mask, tl.load(m2_ptr + base + c, mask=mask, other=0.0) + count * d * d, 0.0)
    tl.store(row_mean_ptr + row, mean)
    tl.store(row_rstd_ptr + row, 1.0 / tl.sqrt(tl.sum(m2, axis=0) / N + eps))


@triton.jit
def normalize_kernel(x_ptr, w_ptr, b_ptr, out_ptr, row_mean_ptr, row_rstd_ptr, N, n_rows, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    row = (pid % n_rows).to(tl.int64)
    offs = (pid // n_rows) * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(row_mean_ptr + row)
    rstd = tl.load(row_rstd_ptr + row)
    tl.store(out_ptr + row * N + offs, (x - mean) * rstd * w + b, mask=mask)


def launch(x: torch.Tensor, ln_weight: torch.Tensor, ln_bias: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, features, dim1, dim2 (sizes are read from the tensors)."""
    n = ln_weight.numel()
    n_rows = x.numel() // n
    n_chunks = triton.cdiv(n, CHUNK)
    chunk_mean = torch.empty(n_rows * n_chunks, dtype=torch.float32, device=x.device)
    chunk_m2 = torch.empty(n_rows * n_chunks, dtype=torch.float32, device=x.device)
    row_mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    row_rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    chunk_stats_kernel[(n_rows * n_chunks,)](x, chunk_mean, chunk_m2, n, n_chunks, CHUNK=CHUNK, num_warps=8)
    merge_block = min(MERGE_BLOCK, triton.next_power_of_2(n_chunks))
    merge_stats_kernel[(n_rows,)](chunk_mean, chunk_m2, row_mean, row_rstd, n, n_chunks, EPS,
                                  CHUNK=CHUNK, BLOCK=merge_block, num_warps=4)
    normalize_kernel[(n_rows * n_chunks,)](x, ln_weight, ln_bias, out, row_mean, row_rstd, n, n_rows,
                                           CHUNK=CHUNK, num_warps=8)
