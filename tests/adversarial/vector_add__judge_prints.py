# expect: rejected
# policy: off
# why: not an attack: an honest kernel (doing its work twice, so never faster) that writes to its standard output and error on every call (a warning, a debug print); it must be judged like any other (a worker once closed its console and the next file it opened, an arena of its own buffers, became it)
import sys

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
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def launch(x, y, output, n_elements):
    print("launching", n_elements)
    sys.stderr.write("a warning on stderr\n")
    sys.stderr.flush()
    grid = (triton.cdiv(n_elements, 256),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)  # the work twice: clearly slower, so only a trick that worked could win
