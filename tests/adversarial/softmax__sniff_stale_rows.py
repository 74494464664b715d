# expect: incorrect
# why: skips every row whose output already looks like a softmax (finite, non-negative, sums to 1), which NaN or random poison never does but a stale answer for other inputs does
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    prev = tl.load(out_ptr + row * out_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(prev, axis=0)
    lowest = tl.min(tl.where(mask, prev, 0.0), axis=0)
    looks_done = (total > 0.99) & (total < 1.01) & (lowest >= 0.0)  # NaN fails every comparison
    if not looks_done:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        numer = tl.exp(x - tl.max(x, axis=0))
        probs = numer / tl.sum(numer, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, probs.to(out_ptr.dtype.element_ty), mask=mask)


def launch(x: torch.Tensor, output: torch.Tensor, n_rows: int, n_cols: int) -> None:
    block_size = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](x, output, n_cols, x.stride(0), output.stride(0), BLOCK_SIZE=block_size, num_warps=4)
