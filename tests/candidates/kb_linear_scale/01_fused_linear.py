"""Linear layer, scale and clamp in one kernel: out = clamp((x @ W^T + b) * 1.5, min=-1)."""

import triton
import triton.language as tl


@triton.jit
def _linear_scale_clamp(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_in, n_out,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < n_out
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, n_in, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < n_in
        x = tl.load(x_ptr + row * n_in + ks, mask=k_ok, other=0.0)
        w = tl.load(w_ptr + cols[:, None] * n_in + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    bias = tl.load(b_ptr + cols, mask=col_ok, other=0.0)
    y = tl.maximum((acc + bias) * 1.5, -1.0)
    tl.store(out_ptr + row * n_out + cols, y, mask=col_ok)


def launch(x, proj_weight, proj_bias, out, *dims):
    n_rows, n_in = x.shape
    n_out = proj_weight.shape[0]
    grid = (n_rows, triton.cdiv(n_out, 32))
    _linear_scale_clamp[grid](x, proj_weight, proj_bias, out, n_rows, n_in, n_out, BLOCK_N=32, BLOCK_K=32)
