# expect: runtime_error|crashed
# device: cuda
# why: the last program stores 2**40 elements past the output: an illegal address that poisons the CUDA context of the worker
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
    far = offsets.to(tl.int64) + (pid == tl.num_programs(0) - 1).to(tl.int64) * (1 << 40)
    tl.store(out_ptr + far, (a + b).to(tl.float16), mask=mask)


def launch(x, y, output, n_elements):
    grid = (triton.cdiv(n_elements, 256),)
    _add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
