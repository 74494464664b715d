# expect: policy_violation
# rule: torch-compute
# why: launches a kernel, then overwrites the output with torch.softmax computed in host code
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    v = v - tl.max(v, axis=0)
    e = tl.where(mask, tl.exp(v), 0.0)
    p = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, p.to(tl.float16), mask=mask)


def launch(x, output, n_rows, n_cols):
    BLOCK = triton.next_power_of_2(n_cols)
    _softmax_kernel[(n_rows,)](x, output, n_cols, x.stride(0), output.stride(0), BLOCK=BLOCK, num_warps=4)
    output.copy_(torch.softmax(x.float(), dim=-1))
