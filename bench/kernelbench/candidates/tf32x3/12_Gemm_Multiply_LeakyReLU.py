"""KernelBench L2-12 Gemm, *2.0, LeakyReLU(0.1):
x @ W^T + b with the multiply and LeakyReLU fused into the GEMM epilogue, so the (batch, out_features)
intermediate never goes to memory; grouped tile order, autotuned tiles on the GPU."""

import torch
import triton
import triton.language as tl

# "ieee": plain fp32 on FMA units; "tf32x3": three TF32 tensor-core products, with fp32-level error.
# The correctness tolerance is 1e-4, which one-pass TF32 would miss.
PRECISION = "tf32x3"
GROUP_M = 8
# the interpreter cannot autotune (no benchmarker); one modest tile there
CPU_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
GPU_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
]


@triton.jit
def linear_kernel(
    a_ptr, b_ptr, bias_ptr, out_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, PRECISION: tl.constexpr,
):
    # grouped tile order: GROUP_M row-tiles share each B column-panel while it is in L2
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_pid_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # wrapped indices keep every load in bounds without an M/N mask; wrapped rows/cols are never stored
    rm = (offs_m % M).to(tl.int64)
    rn = (offs_n % N).to(tl.int64)
    a_ptrs = a_ptr + rm[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kb * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    y = (acc + bias[None, :]) * 2.0
    y = tl.where(y >= 0.0, y, y * 0.1)
    out_ptrs = out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n.to(tl.int64)[None, :] * stride_on
    tl.store(out_ptrs, y, mask=(offs_m < M)[:, None] & (offs_n < N)[None, :])


linear_kernel_tuned = triton.autotune(configs=GPU_CONFIGS, key=["M", "N", "K"])(linear_kernel)


def launch(x: torch.Tensor, gemm_weight: torch.Tensor, gemm_bias: torch.Tensor, out: torch.Tensor, *dims: int) -> None:
    """dims: batch_size, in_features, out_features (sizes are read from the tensors)."""
    m, k = x.shape
    n = gemm_weight.shape[0]
    args = (x, gemm_weight, gemm_bias, out, m, n, k, x.stride(0), x.stride(1), gemm_weight.stride(1), gemm_weight.stride(0),
            out.stride(0), out.stride(1))
    if x.is_cuda:
        def grid(meta: dict) -> tuple[int]:
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

        linear_kernel_tuned[grid](*args, GROUP_M=GROUP_M, PRECISION=PRECISION)
    else:
        grid_cpu = (triton.cdiv(m, CPU_CONFIG["BLOCK_M"]) * triton.cdiv(n, CPU_CONFIG["BLOCK_N"]),)
        linear_kernel[grid_cpu](*args, **CPU_CONFIG, GROUP_M=GROUP_M, PRECISION=PRECISION)
