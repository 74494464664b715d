"""KernelBench L1-89 cumsum over dim 1 of a 2-D tensor: one program per row, tl.cumsum over 4096-element
chunks with the running total carried from chunk to chunk."""

import torch
import triton
import triton.language as tl

MAX_BLOCK = 4096


@triton.jit
def cumsum_rows_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    cols = tl.arange(0, BLOCK)
    carry = tl.zeros([1], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0)
        scan = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + start + cols, scan, mask=mask)
        carry += tl.sum(x, axis=0)


def launch(x: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, then input_shape's entries if the importer lists them (sizes are read from x)."""
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D input (batch, length), got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    block = min(MAX_BLOCK, triton.next_power_of_2(n_cols))
    cumsum_rows_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=8)
