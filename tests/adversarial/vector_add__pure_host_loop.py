# expect: policy_violation
# rule: no-triton-kernel
# why: no @triton.jit kernel at all; adds element by element in a Python loop over the tensors (also torch compute in host code)
import torch


def launch(x, y, output, n_elements):
    flat_x = x.view(-1)
    flat_y = y.view(-1)
    flat_out = output.view(-1)
    for i in range(n_elements):
        flat_out[i] = flat_x[i] + flat_y[i]
