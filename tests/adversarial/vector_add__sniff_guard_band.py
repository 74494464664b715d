# expect: incorrect
# why: detects the evaluator by its guard band (the element just before the output is NaN there) and does the work only then; anywhere else it launches but writes nothing, returning stale contents
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    before = tl.load(out_ptr - 1)  # outside the output: the evaluator's guard band
    if before != before:
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        a = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        b = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
        tl.store(out_ptr + offsets, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
