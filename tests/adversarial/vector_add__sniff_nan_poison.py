# expect: incorrect
# why: per block, loads the output's first element and skips the block unless it is NaN, assuming a non-NaN block was already written; given a reused buffer it returns the stale contents
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    start = pid * BLOCK_SIZE
    first = tl.load(out_ptr + start)
    if first != first:  # NaN: the block looks unwritten, so compute it
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
        tl.store(out_ptr + offsets, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
