# expect: incorrect
# why: applies silu to b and multiplies by a (silu(b) * a) instead of silu(a) * b
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
    act = b * tl.sigmoid(b)
    tl.store(out_ptr + offsets, (act * a).to(tl.float16), mask=mask)


def launch(a, b, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _silu_mul_kernel[grid](a, b, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
