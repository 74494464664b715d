# expect: incorrect
# why: rounds both inputs through fp8 e5m2 (2 mantissa bits) inside the kernel before adding, a precision drop far beyond atol/rtol 1e-3
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=mask)
    b = tl.load(y_ptr + offsets, mask=mask)
    a = a.to(tl.float8e5).to(tl.float32)
    b = b.to(tl.float8e5).to(tl.float32)
    tl.store(out_ptr + offsets, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
