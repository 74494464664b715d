# expect: incorrect
# why: a correct add except that every element at flat index 12,345 or beyond gets x + y + 1, so only a shape of more than 12,345 elements shows it
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    out = a + b + tl.where(offsets >= 12345, 1.0, 0.0)
    tl.store(out_ptr + offsets, out.to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
