"""Reference for matmul-leaky-relu: a @ b with float32 accumulation, rounded to the output dtype, then leaky ReLU."""

import torch


def reference(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int, slope: float) -> torch.Tensor:
    t = (a.float() @ b.float()).to(c.dtype)
    return torch.where(t > 0, t, t * slope)
