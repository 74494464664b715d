"""Naive Triton baseline for vector-add: one 1-D block of elements per program."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 8192


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    total = x + y
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def launch(x: torch.Tensor, y: torch.Tensor, output: torch.Tensor, n_elements: int) -> None:
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=16)
