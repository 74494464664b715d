"""torch.matmul for KernelBench level 1 problem 1 with TF32 allowed: cuBLAS on the tensor cores, the fair
yardstick for a Triton kernel whose fp32 tl.dot runs as TF32. Compared with `kernel-tui compare --no-policy`
only."""

import torch


def launch(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor, N: int) -> None:
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        torch.matmul(A, B, out=out)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed
