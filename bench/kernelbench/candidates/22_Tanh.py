"""KernelBench L1-22 Tanh: one flat pass; tanh from one exp of -2|x| (Triton has no tanh), exact to ~1e-7 absolute."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # exp of a non-positive argument never overflows
    t = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - t) / (1.0 + t)
    tl.store(out_ptr + offs, tl.where(x < 0.0, -y, y), mask=mask)


def launch(x: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, dim (the size is read from x)."""
    n = x.numel()
    tanh_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=8)
