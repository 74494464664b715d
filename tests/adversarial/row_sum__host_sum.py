# expect: policy_violation
# rule: torch-compute
# why: launches a do-nothing kernel and computes the row sums on the host with torch.sum(..., out=output)
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_rows):
    pid = tl.program_id(axis=0)
    v = tl.load(out_ptr + pid, mask=pid < n_rows)
    tl.store(out_ptr + pid, v, mask=pid < n_rows)


def launch(x, output, n_rows, n_cols):
    _noop_kernel[(n_rows,)](output, n_rows)
    torch.sum(x, dim=1, out=output)
