"""KernelBench L1-88 MinGPT new GELU (tanh approximation): one fused pass instead of torch's chain of
elementwise kernels; tanh from one exp of -2|u| (Triton has no tanh)."""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def new_gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2 / pi)
    t = tl.exp(-2.0 * tl.abs(u))
    th = (1.0 - t) / (1.0 + t)
    th = tl.where(u < 0.0, -th, th)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + th), mask=mask)


def launch(x: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, dim (the size is read from x)."""
    n = x.numel()
    new_gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=8)
