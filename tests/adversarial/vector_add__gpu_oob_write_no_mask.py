# expect: incorrect
# device: cuda
# why: stores without a mask in blocks of 1024, so on a ragged shape it writes up to 1023 elements past the output, beyond the 256-element guard band
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (a + b).to(tl.float16))


def launch(x, y, output, n_elements):
    grid = (triton.cdiv(n_elements, 1024),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024, num_warps=4)
