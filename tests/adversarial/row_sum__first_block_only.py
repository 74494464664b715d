# expect: incorrect
# why: one program per row but it only sums the first BLOCK (64) columns, dropping the rest of each wider row
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(v, axis=0))


def launch(x, output, n_rows, n_cols):
    BLOCK = 64
    _row_sum_kernel[(n_rows,)](x, output, n_cols, x.stride(0), BLOCK=BLOCK, num_warps=4)
