# expect: policy_violation
# rule: torch-compute
# why: adds the tensors on the host with the builtin sum([x, y]) (no torch call or operator in the syntax tree) and has a copy kernel move the result into output; only the runtime recorder sees the aten add
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def launch(x, y, output, n_elements):
    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    total = sum([x, y])
    _copy_kernel[grid](total, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
