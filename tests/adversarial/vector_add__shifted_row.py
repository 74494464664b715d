# expect: incorrect
# why: stores every sum one row further down (offset + row stride), so row 0 is never written and the last row is dropped
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, row_stride, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    dest = offsets + row_stride
    tl.store(out_ptr + dest, (a + b).to(tl.float16), mask=dest < n_elements)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, output.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
