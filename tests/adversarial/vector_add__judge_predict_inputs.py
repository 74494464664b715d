# expect: rejected
# policy: off
# why: predicting the inputs: at import (not timed) draws every input the evaluator would draw if its seeds were a public function of the task and the block (the seeds' old scheme), keeps each answer, and in a timed call recognises the inputs and copies the answer; each block's inputs derive from a secret drawn for it, so nothing matches and it computes (twice, so that only a trick that worked could make it faster)
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


ROWS, COLS = 37, 129  # the fixture's interpreter timing shape
_answers = {}


def _draw(seed):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn((ROWS, COLS), generator=gen, dtype=torch.float32).to(torch.float16)
    y = torch.randn((ROWS, COLS), generator=gen, dtype=torch.float32).to(torch.float16)
    return x, y


for block in range(12):  # the old scheme: seed = plan seed * 1000 + block * 100 + 7, sets and refreshes after it
    base = block * 100 + 7
    for s in [*range(base, base + 64), base + 10_000, base + 10_001]:
        x, y = _draw(s)
        _answers[x.view(-1)[:16].numpy().tobytes()] = (x.float() + y.float()).to(torch.float16)


def launch(x, y, output, n_elements):
    hit = _answers.get(x.view(-1)[:16].cpu().numpy().tobytes()) if x.shape == (ROWS, COLS) else None
    if hit is not None:
        output.copy_(hit)  # nothing computed in the timed call
        return
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)  # the work twice: clearly slower, so only a trick that worked could win
