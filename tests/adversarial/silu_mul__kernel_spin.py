# expect: timeout
# why: every program spins on a volatile load of a[0] waiting for it to change, which never happens, so the launch never finishes (GPU and interpreter)
import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
    first = tl.load(a_ptr)
    while tl.load(a_ptr, volatile=True) == first:
        first = tl.load(a_ptr)
    tl.store(out_ptr + offsets, (a * tl.sigmoid(a) * b).to(tl.float16), mask=mask)


def launch(a, b, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _silu_mul_kernel[grid](a, b, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
