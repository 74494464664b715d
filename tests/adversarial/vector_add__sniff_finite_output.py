# expect: incorrect
# why: per block, skips the work when every output element of the block is already finite (so not NaN poison), assuming finite means written; fooled by any finite stale contents
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    prev = tl.load(out_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    finite = (prev == prev) & (tl.abs(prev) < float("inf"))
    n_unwritten = tl.sum(tl.where(finite, 0, 1), axis=0)
    if n_unwritten > 0:
        a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
        tl.store(out_ptr + offsets, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
