"""torch.matmul for KernelBench level 1 problem 1, as PyTorch runs it by default: full fp32 (no TF32). A
yardstick, compared with `kernel-tui compare --no-policy` only."""

import torch


def launch(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor, N: int) -> None:
    torch.matmul(A, B, out=out)
