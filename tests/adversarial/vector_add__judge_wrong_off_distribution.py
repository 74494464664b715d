# expect: incorrect
# why: right on every value the benchmark's normal draw is likely to hold, wrong where an input is exactly zero or far out in the tail (|x| > 4): inputs with edge values catch it
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    odd = (x == 0.0) | (x > 4.0) | (x < -4.0)
    total = tl.where(odd, x, x + y)
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def launch(x, y, output, n_elements):
    grid = (triton.cdiv(n_elements, 256),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
