"""KernelBench L1-24 LogSoftmax over dim 1: one program per row, online max/sum in per-lane registers, then
x - (max + log(sum)) in one more pass: two reads and one write of x."""

import torch
import triton
import triton.language as tl

MAX_BLOCK = 4096


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    cols = tl.arange(0, BLOCK)
    # a finite floor: exp(m - m_new) stays 1, not NaN, on lanes that have only seen padding
    m = tl.full([BLOCK], -3.0e38, tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    shift = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0)
        tl.store(out_row + start + cols, x - shift, mask=mask)


def launch(x: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, dim (sizes are read from x)."""
    n_rows, n_cols = x.shape
    block = min(MAX_BLOCK, triton.next_power_of_2(n_cols))
    log_softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=8)
