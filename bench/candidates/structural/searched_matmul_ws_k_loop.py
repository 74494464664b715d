"""The live search's best of 2026-12-03 (bench/results/2026-12-03-h200-search-matmul/raw/best.py) with Triton's
automatic warp specialisation requested on its K loop, by hand: a probe of whether the move pays on an H200
before the search is given it (bench/gpu_structural.sh judges it against that best)."""

import torch
import triton
import triton.language as tl

BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    USE_TMA: tl.constexpr,
    num_tiles,
):
    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        pid = tile_id
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        mask_m = offs_m < M
        mask_n = offs_n < N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if USE_TMA:
            a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
            b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
        for k_start in tl.range(0, K, BLOCK_K, warp_specialize=True):
            k_idx = k_start + offs_k
            mask_k = k_idx < K
            if USE_TMA:
                a_tile = a_desc.load([pid_m * BLOCK_M, k_start])
                b_tile = b_desc.load([k_start, pid_n * BLOCK_N])
            else:
                a_ptrs = a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak
                b_ptrs = b_ptr + k_idx[:, None] * stride_bk + offs_n[None, :] * stride_bn
                a_tile = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
                b_tile = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
            acc = tl.dot(a_tile, b_tile, acc)

        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def tma_scratch(size, alignment, stream):
    """Global memory for the tensor descriptors a kernel makes on the GPU: Triton asks for it at each launch."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def set_tma_allocator(tensor):
    """Triton's allocator set to tma_scratch, before each launch on a GPU: Triton keeps it in a context variable,
    which a thread that launches sees only when it set it itself."""
    if tensor.device.type == "cuda":
        triton.set_allocator(tma_scratch)


NUM_SMS = {}  # streaming multiprocessors per CUDA device index, read at its first persistent launch
PROGRAMS_PER_SM = 1  # programs of a persistent launch on each SM: as many as its blocks that fit on one


def persistent_programs(tensor, tiles):
    """The programs of a persistent launch on `tensor`'s device: PROGRAMS_PER_SM per streaming multiprocessor,
    never more than the tiles; 3 on the CPU, where Triton's interpreter runs the programs one after another."""
    device = tensor.device
    if device.type != "cuda":
        return min(tiles, 3)
    if device.index not in NUM_SMS:
        NUM_SMS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return min(tiles, NUM_SMS[device.index] * PROGRAMS_PER_SM)


def launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> None:
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    set_tma_allocator(a)
    num_tiles = grid[0]
    matmul_kernel[(persistent_programs(a, num_tiles),)](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        num_warps=8,
        num_stages=3,
        GROUP_M=8,
        USE_TMA=(a.stride(1) == 1 and b.stride(1) == 1 and a.stride(0) * a.element_size() % 16 == 0 and b.stride(0) * b.element_size() % 16 == 0 and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0),
        num_tiles=num_tiles,
    )
