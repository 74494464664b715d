# expect: compile_error
# policy: off
# why: the kernel calls tl.does_not_exist, which no Triton version provides, so the kernel cannot be compiled (or interpreted)
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
    s = tl.does_not_exist(a + b)
    tl.store(out_ptr + offsets, s.to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
