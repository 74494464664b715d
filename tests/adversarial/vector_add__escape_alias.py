# expect: policy_violation
# rule: module-alias
# why: binds triton.language to a plain variable, whose attribute chains a path check keyed on module names never sees, and opens a file through its builtins
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


def launch(x, y, output, n_elements):
    lang = tl
    with lang.core.builtins.open("/tmp/kernel-tui-escape-alias", "w") as f:
        f.write("escaped")
    grid = (triton.cdiv(n_elements, 256),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256, num_warps=4)
