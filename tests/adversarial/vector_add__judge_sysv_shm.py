# expect: sandbox_violation
# rule: sandbox-native
# policy: off
# why: effects outside the worker: creates a System V shared memory segment (through libc) and leaves it, where a later process could find it; a correct kernel otherwise
import ctypes

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


SHM_KEY = 0x4B545348  # 'KTSH'


def launch(x, y, output, n_elements):
    libc = ctypes.CDLL(None)
    libc.shmget(SHM_KEY, 4096, 0o1666)  # IPC_CREAT | 0666
    grid = (triton.cdiv(n_elements, 256),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
