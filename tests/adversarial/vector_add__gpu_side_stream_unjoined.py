# expect: tampering|rejected|incorrect
# policy: off
# device: cuda
# why: with the static policy off, launches on a private stream that never waits for the timed window: written before the window opens (tampering), or timed whole (its context holds the GPU until its work is done), never faster than it is
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
    tl.store(out_ptr + offsets, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    grid = (triton.cdiv(n_elements, 256),)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
