# expect: incorrect
# policy: off
# why: hands the launch to a background thread that sleeps first, so launch() returns before the output is written
import threading
import time

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


_launch_lock = threading.Lock()


def _late_launch(x, y, output, n_elements):
    time.sleep(1.0)
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    with _launch_lock:
        _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)


def launch(x, y, output, n_elements):
    worker = threading.Thread(target=_late_launch, args=(x, y, output, n_elements))
    worker.start()
