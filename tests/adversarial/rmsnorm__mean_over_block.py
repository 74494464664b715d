# expect: incorrect
# why: divides the sum of squares by the padded power-of-two BLOCK instead of n_cols, so every row is scaled by sqrt(BLOCK / n_cols)
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(v * v, axis=0) / BLOCK
    inv_rms = 1.0 / tl.sqrt(mean_sq + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (v * inv_rms * w).to(tl.float16), mask=mask)


def launch(x, weight, output, n_rows, n_cols, eps):
    BLOCK = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight, output, n_cols, eps, x.stride(0), output.stride(0),
                               BLOCK=BLOCK, num_warps=4)
