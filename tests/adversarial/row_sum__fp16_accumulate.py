# expect: incorrect
# why: casts the fp32 input to fp16 and keeps the running sum in fp16, a precision drop that misses the fp32 reference
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float16)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
        acc = acc + v.to(tl.float16)
    total = tl.sum(acc, axis=0).to(tl.float16)
    tl.store(out_ptr + row, total.to(tl.float32))


def launch(x, output, n_rows, n_cols):
    BLOCK = 16
    _row_sum_kernel[(n_rows,)](x, output, n_cols, x.stride(0), BLOCK=BLOCK, num_warps=4)
