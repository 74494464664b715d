# expect: rejected
# policy: off
# why: a thread that starves the other side: a slower kernel (the work twice) that leaves a thread spinning whenever it is not being called, to take the processor (and the interpreter lock) from whatever runs next
import threading

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


_idle = threading.Event()


def _spin():
    while True:
        _idle.wait()
        sum(range(10_000))


threading.Thread(target=_spin, daemon=True).start()


def launch(x, y, output, n_elements):
    _idle.clear()
    grid = (triton.cdiv(n_elements, 256),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
    _idle.set()
