# expect: incorrect
# why: one program per column, normalising down each column (over rows) instead of along each row
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_cols_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride,
                         BLOCK_ROWS: tl.constexpr):
    col = tl.program_id(axis=0)
    rows = tl.arange(0, BLOCK_ROWS)
    mask = rows < n_rows
    v = tl.load(x_ptr + rows * x_row_stride + col, mask=mask, other=-float("inf")).to(tl.float32)
    v = v - tl.max(v, axis=0)
    e = tl.where(mask, tl.exp(v), 0.0)
    p = e / tl.sum(e, axis=0)
    tl.store(out_ptr + rows * out_row_stride + col, p.to(tl.float16), mask=mask)


def launch(x, output, n_rows, n_cols):
    BLOCK_ROWS = triton.next_power_of_2(n_rows)
    _softmax_cols_kernel[(n_cols,)](x, output, n_rows, n_cols, x.stride(0), output.stride(0),
                                    BLOCK_ROWS=BLOCK_ROWS, num_warps=4)
