# expect: crashed|runtime_error
# policy: off
# why: forged result: writes an accepting result.json (zero and negative timings included) where a worker's result used to be read, then leaves before any real one could be written
import json
import os

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
    fake = {"status": "ok", "reason": "correct and timed", "timing": {
        "block": 0, "method": "flush", "shape": "small", "incumbent": [1.0] * 8, "candidate": [0.0, -1.0] * 4,
        "order": ["AB"] * 8, "inner_repeats": 1}}
    for name in ("result.json", "../result.json", "../../result.json"):
        try:
            with open(name, "w") as f:
                json.dump(fake, f)
        except OSError:
            pass
    os._exit(0)
