"""Tensor-descriptor loads: offered where a tl.dot kernel loads both tiles with the recognised pointer arithmetic
and masks, nowhere else; once only; composed with the other structural moves; the rewrite passes the policy;
and correct on the interpreter, through the descriptors where the guard holds and the pointers where it does not."""

from __future__ import annotations

import os

import pytest

from kernel_tui.core.policy import check_source
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES, ROOT

BEST = ROOT / "bench" / "results" / "2026-11-29-h200-benchmark" / "sweep" / "best_matmul.py"
CANDIDATES = ROOT / "bench" / "candidates" / "structural"
KID = "kernel:matmul_kernel:loads"


def baseline(name: str = "matmul") -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def loads_actions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "loads"]


def then(source: str, kind: str) -> str:
    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == kind]
    return a.apply(action)


def tma(source: str) -> str:
    return then(source, "loads")


def test_the_matmul_loads_its_tiles_through_descriptors_once():
    src = baseline()
    (action,) = loads_actions(src)
    assert "loads" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == (KID, "pointers", "tensor descriptors")
    assert action.change == "tl.dot operands loaded through tensor descriptors (TMA; USE_TMA guard at launch)"
    out = analyze(src).apply(action)
    assert "    BLOCK_K: tl.constexpr,\n    USE_TMA: tl.constexpr,\n):\n" in out
    assert (
        "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
        "    if USE_TMA:\n"
        "        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])\n"
        "        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])\n"
        "    for k_start in range(0, K, BLOCK_K):\n"
        "        k_idx = k_start + offs_k\n"
        "        mask_k = k_idx < K\n"
        "        if USE_TMA:\n"
        "            a_tile = a_desc.load([pid_m * BLOCK_M, k_start])\n"
        "            b_tile = b_desc.load([k_start, pid_n * BLOCK_N])\n"
        "        else:\n"
        "            a_ptrs = a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak\n"
        "            b_ptrs = b_ptr + k_idx[:, None] * stride_bk + offs_n[None, :] * stride_bn\n"
        "            a_tile = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)\n"
        "            b_tile = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)\n"
        "        acc = tl.dot(a_tile, b_tile, acc)\n"
    ) in out
    assert "    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])\n" in out
    assert (
        "def tma_scratch(size, alignment, stream):\n"
        '    """Global memory for the tensor descriptors a kernel makes on the GPU: Triton asks for it at each launch."""\n'
        '    return torch.empty(size, device="cuda", dtype=torch.int8)\n'
    ) in out
    assert '    if tensor.device.type == "cuda":\n        triton.set_allocator(tma_scratch)\n\n\ndef launch(' in out
    assert "    set_tma_allocator(a)\n    matmul_kernel[grid](\n" in out
    assert ("        num_stages=2,\n        USE_TMA=(a.stride(1) == 1 and b.stride(1) == 1"
            " and a.stride(0) * a.element_size() % 16 == 0 and b.stride(0) * b.element_size() % 16 == 0"
            " and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0),\n    )\n") in out
    b = analyze(out)
    assert b.knobs[KID].value == "tensor descriptors"
    assert not loads_actions(out)  # once
    # the rest still moves, the tiles as far as before (the guarded descriptors read out of bounds as zero, as
    # the masks did); the load hints are gone: the pointer loads only run where TMA can't
    assert b.knobs["const:BLOCK_M"].domain == analyze(src).knobs["const:BLOCK_M"].domain
    assert {"block", "launch_order", "k_mask", "grid", "num_stages"} <= {x.kind for x in b.actions()}
    assert not {"eviction_policy", "cache_modifier"} & {k.kind for k in b.knobs.values()}


def test_the_rewrites_for_the_gpu_are_the_moves_own():
    """bench/candidates/structural holds the rewrite of the fixture and of the swept best, for a GPU run."""
    assert (CANDIDATES / "matmul_tma.py").read_text(encoding="utf-8") == tma(baseline())
    best = BEST.read_text(encoding="utf-8")
    out = tma(best)
    assert (CANDIDATES / "best_matmul_tma.py").read_text(encoding="utf-8") == out
    assert "        GROUP_M=8,\n        USE_TMA=(a.stride(1) == 1" in out  # the grouped order kept as it was
    assert "block_shape=[BLOCK_K, BLOCK_N])\n" in out


def test_the_guard_follows_what_the_launch_passes():
    src = baseline().replace("        a.stride(0),\n        a.stride(1),\n", "        K,\n        1,\n")
    out = tma(src)
    assert "USE_TMA=(1 == 1 and b.stride(1) == 1 and K * a.element_size() % 16 == 0 and " in out
    src = baseline().replace("        a.stride(0),\n", "        a.stride(0) + 0,\n")
    assert "and (a.stride(0) + 0) * a.element_size() % 16 == 0 and " in tma(src)


@pytest.mark.parametrize("first", ["k_mask", "grid", "launch_order"])
def test_it_composes_with_the_other_structural_moves_either_way(first):
    src = baseline()
    knob = {"k_mask": "kernel:matmul_kernel:k_mask", "grid": "kernel:matmul_kernel:grid",
            "launch_order": "kernel:matmul_kernel:launch_order"}[first]
    for out in (tma(then(src, first)), then(tma(src), first)):
        b = analyze(out)
        assert b.knobs[KID].value == "tensor descriptors"
        assert b.knobs[knob].value != analyze(src).knobs[knob].value
        assert "a_tile = a_desc.load([pid_m * BLOCK_M, k_start])" in out
        assert not loads_actions(out) and not [x for x in b.actions() if x.kind == first]


def test_all_four_structural_moves_together():
    out = tma(then(then(then(baseline(), "launch_order"), "grid"), "k_mask"))
    assert ("        if USE_TMA:\n"  # in the loop over tiles, before the K loop
            "            a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], "
            "block_shape=[BLOCK_M, BLOCK_K])\n") in out
    assert "            if EVEN_K:\n" in out and "            if USE_TMA:\n                a_tile = a_desc.load(" in out
    b = analyze(out)
    assert {b.knobs[f"kernel:matmul_kernel:{kind}"].value for kind in ("grid", "launch_order", "k_mask", "loads")} == {
        "persistent", "grouped", "unmasked when even", "tensor descriptors"}


def test_the_rewrites_pass_the_policy():
    spec = load_task(FIXTURES / "matmul").spec
    mm = baseline()
    sources = [tma(mm), tma(BEST.read_text(encoding="utf-8")), tma(then(then(mm, "grid"), "k_mask")),
               then(tma(mm), "launch_order")]
    for src in sources:
        report = check_source(src, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                              tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
        assert report.ok, report.summary()


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if n != "matmul"])
def test_not_offered_on_a_kernel_without_tl_dot(name):
    assert not loads_actions(baseline(name))


NOT_THE_PATTERN = {
    "an autotuned kernel": ("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['M'])\n@triton.jit"),
    "two launches": ("        num_stages=2,\n    )\n", "        num_stages=2,\n    )\n    matmul_kernel[grid](a, b, c, M, N, K, "
                     "1, 1, 1, 1, 1, 1, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)\n"),
    "a load with no other": (", mask=mask_m[:, None] & mask_k[None, :], other=0.0)", ", mask=mask_m[:, None] & mask_k[None, :])"),
    "a load whose other is not zero": ("mask_k[None, :], other=0.0)", "mask_k[None, :], other=1.0)"),
    "an unmasked load": ("tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)", "tl.load(a_ptrs)"),
    "a mask of a computed bound": ("mask_m = offs_m < M", "mask_m = offs_m < M - 1"),
    "a mask of a constant bound": ("mask_m = offs_m < M", "mask_m = offs_m < BLOCK_M"),
    "a mask of another index": ("mask=mask_m[:, None] & mask_k[None, :]", "mask=mask_n[:, None] & mask_k[None, :]"),
    "a mask bound twice": ("        mask_k = k_idx < K\n", "        mask_k = k_idx < K\n        mask_k = mask_k & (k_idx >= 0)\n"),
    "a stride written in the kernel": ("k_idx[None, :] * stride_ak", "k_idx[None, :] * 1"),
    "a parameter rebound": ("    acc = tl.zeros(", "    stride_am = stride_am * 1\n    acc = tl.zeros("),
    "an offset rebound in the K loop": ("        k_idx = k_start + offs_k\n",
                                        "        k_idx = k_start + offs_k\n        pid_m = pid_m + 0\n"),
    "an index bound twice": ("    mask_m = offs_m < M\n", "    mask_m = offs_m < M\n    offs_m = offs_m % M\n"),
    "a statement among the loads": ("        a_tile = tl.load(", "        acc = acc * 1.0\n        a_tile = tl.load("),
    "the pointers read twice": ("        acc = tl.dot(a_tile, b_tile, acc)\n",
                                "        acc = tl.dot(a_tile, b_tile, acc)\n        a_ptrs += 0\n"),
    "a tile that is no plain name": ("acc = tl.dot(a_tile, b_tile, acc)", "acc = tl.dot(a_tile * 2, b_tile, acc)"),
    "a pointer passed as an expression": ("        a,\n        b,\n        c,\n", "        a[:],\n        b,\n        c,\n"),
    "a name it adds taken": ("    grid = (", "    a_desc = 0\n    grid = ("),
    "no torch for the scratch memory": ("import torch\n", ""),
}


@pytest.mark.parametrize("why", sorted(NOT_THE_PATTERN))
def test_not_offered_where_the_pattern_is_not_all_there(why):
    old, new = NOT_THE_PATTERN[why]
    src = baseline()
    assert old in src
    changed = src.replace(old, new)
    analyze(changed)  # read without an exception
    assert not loads_actions(changed), why
    assert loads_actions(src)


def test_the_recognised_form_is_not_only_the_fixtures_spelling():
    """The address's terms in another order, a product the other way round, an arange written in place."""
    src = baseline().replace(
        "a_ptrs = a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak",
        "a_ptrs = a_ptr + (k_idx[None, :] * stride_ak + stride_am * offs_m[:, None])",
    ).replace("offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "offs_n = tl.arange(0, BLOCK_N) + BLOCK_N * pid_n")
    out = tma(src)
    assert "            b_tile = b_desc.load([k_start, BLOCK_N * pid_n])\n" in out
    assert "a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1]" in out
    # a descriptor's shape is the bounds its load's mask compares with, whatever they are
    out = tma(baseline().replace("mask_m = offs_m < M", "mask_m = offs_m < N"))
    assert "a_desc = tl.make_tensor_descriptor(a_ptr, shape=[N, K], strides=[stride_am, 1]" in out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_descriptors_run_where_the_guard_holds_and_the_pointers_elsewhere(tmp_path):
    """The pointer branch spoilt (its A tile doubled): right for contiguous operands, which take the descriptors,
    and wrong for a transposed B, which takes the pointers; so the interpreter ran each branch. In a process of
    its own: Triton picks the interpreter when a kernel is decorated, so once another test imported it for the
    GPU path, kernels launched in this process would not be interpreted."""
    import subprocess
    import sys

    out = tma(baseline())
    spoilt = out.replace("            a_tile = tl.load(a_ptrs,", "            a_tile = 2 * tl.load(a_ptrs,")
    assert spoilt != out
    (tmp_path / "tma_matmul.py").write_text(spoilt, encoding="utf-8")
    # no dimension a multiple of its block, so the descriptors read out-of-bounds elements (as zero); rows of
    # 16-byte multiples, as TMA needs (the task's ragged shapes, rows of 93 or 75 halves, take the pointers)
    script = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("tma_matmul", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
M, N, K = 67, 72, 88
gen = torch.Generator().manual_seed(0)
a = torch.randn(M, K, generator=gen).to(torch.float16)
b = torch.randn(K, N, generator=gen).to(torch.float16)
for operand in (b, b.t().contiguous().t()):
    c = torch.empty(M, N, dtype=torch.float16)
    module.launch(a, operand, c, M, N, K)
    print(torch.allclose(c.float(), a.float() @ operand.float(), atol=0.05, rtol=0.01))
"""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "tma_matmul.py")], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]  # descriptors (right), then pointers (spoilt)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tensor_descriptor_kernels_pass_correctness_on_the_interpreter(tmp_path):
    from kernel_tui.core.evaluator import Evaluator, Status

    mm = baseline()
    sources = [
        ("tensor descriptors", tma(mm)),
        ("the swept best, tensor descriptors", tma(BEST.read_text(encoding="utf-8"))),
        ("tensor descriptors, then the unmasked K loop", then(tma(mm), "k_mask")),
        ("grouped, persistent, unmasked K loop, then tensor descriptors",
         tma(then(then(then(mm, "launch_order"), "grid"), "k_mask"))),
    ]
    ev = Evaluator(load_task(FIXTURES / "matmul"), device="cpu", workdir=tmp_path / "matmul")
    failures = []
    for change, source in sources:
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{change}: {result.status.value}: {result.reason}")
    assert not failures, failures
