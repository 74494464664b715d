"""Split-K: offered where a tl.dot kernel launched with one program per tile sums one K loop into an fp32 accumulator
and stores it once, nowhere else; once only; SPLIT_K a knob of its own after; composed with the other structural
moves; passing the policy; and correct on the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_tui.core.proposers.search_steps import FAVOURED_KINDS, INTERPRETER_IGNORES
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.proposers.transforms.split_k import SPLITS
from tests.conftest import FIXTURE_NAMES, FIXTURES, ROOT

BEST = ROOT / "bench" / "results" / "2026-11-29-h200-benchmark" / "sweep" / "best_matmul.py"
STRUCTURAL = ROOT / "bench" / "candidates" / "structural"


def baseline(name: str = "matmul") -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def split_actions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "split_k"]


def split(source: str) -> str:
    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == "split_k"]
    return a.apply(action)


def then(source: str, kind: str) -> str:
    a = analyze(source)
    return a.apply(next(x for x in a.actions() if x.kind == kind))


def test_the_matmul_shares_its_k_loop_among_split_k_programs_once():
    src = baseline()
    (action,) = split_actions(src)
    assert "split_k" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == ("kernel:matmul_kernel:split_k", "one pass over K", "split K")
    assert action.change == "split-K into SPLIT_K=4 partial sums, reduced in a second kernel (for small M·N, large K)"
    out = analyze(src).apply(action)
    assert "\nBLOCK_K = 32\n\n\nSPLIT_K = 4  # programs per output tile of matmul_kernel, each summing every SPLIT_K-th block of K\n\n\n@triton.jit\n" in out
    assert ("    BLOCK_K: tl.constexpr,\n    partial_ptr,\n    stride_pk,\n    stride_pm,\n    stride_pn,\n"
            "    SPLIT_K: tl.constexpr,\n):\n") in out
    assert "    pid = tl.program_id(axis=0)\n    pid_k = tl.program_id(axis=1)\n" in out
    assert "    for k_start in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):\n" in out
    assert ("    c_ptrs = partial_ptr + pid_k.to(tl.int64) * stride_pk + offs_m[:, None] * stride_pm"
            " + offs_n[None, :] * stride_pn\n"
            "    tl.store(c_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])\n") in out
    assert "def matmul_kernel_sum_splits(\n    c_ptr, partial_ptr, M, N, stride_cm, stride_cn," in out
    assert "    for _ in tl.static_range(1, SPLIT_K):\n        ptrs += stride_pk\n" in out  # split order, every run
    assert "    tl.store(c_ptr + row * stride_cm + col * stride_cn, total.to(c_ptr.dtype.element_ty), mask=mask)\n" in out
    assert ("    partial = torch.empty((SPLIT_K, M, N), device=c.device, dtype=torch.float32)\n"
            "    matmul_kernel[(grid[0], SPLIT_K)](\n") in out
    assert ("        num_stages=2,\n        partial_ptr=partial,\n        stride_pk=partial.stride(0),\n"
            "        stride_pm=partial.stride(1),\n        stride_pn=partial.stride(2),\n        SPLIT_K=SPLIT_K,\n    )\n"
            "    matmul_kernel_sum_splits[(triton.cdiv(M * N, 1024),)](\n"
            "        c, partial, M, N, c.stride(0), c.stride(1), partial.stride(0), partial.stride(1), partial.stride(2),\n"
            "        SPLIT_K=SPLIT_K, BLOCK=1024,\n    )") in out
    assert "tl.atomic" not in out
    b = analyze(out)
    assert b.knobs["kernel:matmul_kernel:split_k"].value == "split K"
    assert not split_actions(out)  # once
    # the tiles still move (the K block is no tile of the grid although pid_k multiplies it), the reduction has none
    assert {"const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K", "loop:matmul_kernel:0:unroll"} <= set(b.knobs)
    assert [k for k in b.knobs if "sum_splits" in k] == ["kernel:matmul_kernel_sum_splits:sizes"]  # its sizes alone


def test_split_k_is_a_knob_of_its_own_after_the_split():
    assert "const:SPLIT_K" not in analyze(baseline()).knobs
    b = analyze(split(baseline()))
    knob = b.knobs["const:SPLIT_K"]
    assert (knob.kind, knob.value, knob.domain, knob.numeric) == ("splits", 4, SPLITS, True)
    assert SPLITS == (2, 4, 8, 16)
    (eight,) = [x for x in b.actions() if x.knob == "const:SPLIT_K" and x.new == 8]
    assert eight.change == "split_k 4 → 8"
    out = b.apply(eight)
    assert "\nSPLIT_K = 8  # " in out and analyze(out).knobs["const:SPLIT_K"].value == 8
    assert b.assignment_after(eight)["const:SPLIT_K"] == 8


def test_the_other_forms_of_the_loop_and_the_accumulation():
    src = baseline().replace("acc = tl.dot(a_tile, b_tile, acc)", "acc += tl.dot(a_tile, b_tile)")
    assert "    for k_start in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):\n" in split(src)
    src = baseline().replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, loop_unroll_factor=2)")
    assert "tl.range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K, loop_unroll_factor=2):" in split(src)
    src = baseline().replace("tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),", "tl.store(c_ptrs, acc.to(tl.float16),")
    out = split(src)
    assert "tl.store(c_ptrs, acc, mask=" in out and "total.to(tl.float16), mask=mask)" in out


def test_it_composes_with_the_unmasked_k_loop_and_the_grouped_order_either_way():
    src = baseline()
    for first, second in (("split_k", "k_mask"), ("k_mask", "split_k"), ("split_k", "launch_order"),
                          ("launch_order", "split_k")):
        out = then(then(src, first), second)
        assert "    for k_start in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):\n" in out, (first, second)
        b = analyze(out)
        assert b.knobs["kernel:matmul_kernel:split_k"].value == "split K"
        assert "const:BLOCK_K" in b.knobs and "const:SPLIT_K" in b.knobs
    k_mask = then(then(src, "split_k"), "k_mask")
    assert "        if EVEN_K:\n            mask_k = tl.full([BLOCK_K], 1, tl.int1)\n" in k_mask
    assert "EVEN_K=K % BLOCK_K == 0," in k_mask  # every split's blocks start at a multiple of BLOCK_K
    grouped = then(then(src, "split_k"), "launch_order")
    assert "    pid_k = tl.program_id(axis=1)\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n    num_pid_m = " in grouped
    assert analyze(grouped).knobs["kernel:matmul_kernel:launch_order"].value == "grouped"
    assert split_actions(BEST.read_text(encoding="utf-8"))  # grouped already


def test_never_with_the_persistent_grid_in_either_order():
    src = baseline()
    persistent = then(src, "grid")
    assert not split_actions(persistent)  # its program id comes from the loop over tiles
    assert not [x for x in analyze(split(src)).actions() if x.kind == "grid"]  # two program ids read
    assert analyze(split(src)).knobs.get("kernel:matmul_kernel:grid") is None


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if n != "matmul"])
def test_not_offered_on_a_kernel_without_tl_dot(name):
    assert not split_actions(baseline(name))
    assert "kernel:" + next(iter(analyze(baseline(name)).kernels)) + ":split_k" not in analyze(baseline(name)).knobs


def test_not_offered_on_the_autotuned_tall_skinny_candidate():
    path = ROOT / "bench" / "kernelbench" / "candidates" / "9_Tall_skinny_matrix_multiplication_.py"
    assert not split_actions(path.read_text(encoding="utf-8"))  # autotuned, two launches, pointers carried over K


STORE = "    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])\n"
NOT_THE_PATTERN = {
    "a 2-D grid": ("* triton.cdiv(N, BLOCK_N),)", "* triton.cdiv(N, BLOCK_N), 1)"),
    "an early return": ("    num_pid_n = tl.cdiv", "    if pid < 0:\n        return\n    num_pid_n = tl.cdiv"),
    "a second program axis read": ("num_pid_n = tl.cdiv(N, BLOCK_N)", "num_pid_n = tl.cdiv(N, BLOCK_N) + tl.program_id(axis=1)"),
    "the program count read": ("num_pid_n = tl.cdiv(N, BLOCK_N)", "num_pid_n = tl.cdiv(N, BLOCK_N) + tl.num_programs(0) * 0"),
    "an atomic": (STORE, STORE + "    tl.atomic_add(c_ptr, 0.0, mask=pid < 0)\n"),
    "an epilogue on the accumulator": (STORE, "    acc = acc * 2.0\n" + STORE),
    "something else stored": ("tl.store(c_ptrs, acc.to(", "tl.store(c_ptrs, (acc * 2).to("),
    "two stores": (STORE, STORE + STORE),
    "an fp16 accumulator": ("dtype=tl.float32)", "dtype=tl.float16)"),
    "a second loop": ("    acc = tl.zeros(", "    for _i in range(0, 1):\n        pid_m = pid_m + 0\n    acc = tl.zeros("),
    "a pointer carried over the K steps": (
        "        k_idx = k_start + offs_k\n",
        "        k_idx = k_start + offs_k\n        a_ptr += 0\n"),
    "a name of the loop bound outside it too": ("    acc = tl.zeros(", "    k_idx = offs_k\n    acc = tl.zeros("),
    "a value read before its step binds it": (
        "        k_idx = k_start + offs_k\n", "        k_idx = k_start + offs_k + 0 * b_tile.shape[0]\n"),
    "no dot in the accumulation": ("acc = tl.dot(a_tile, b_tile, acc)", "acc = acc + a_tile * b_tile"),
    "a loop that does not start at 0": ("range(0, K, BLOCK_K)", "range(BLOCK_K, K, BLOCK_K)"),
    "the output's strides not passed as its own": ("        c.stride(0),\n", "        N,\n"),
    "a store mask without the column bound": ("mask=mask_m[:, None] & mask_n[None, :])", "mask=mask_m[:, None])"),
    "an autotuned kernel": ("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['M'])\n@triton.jit"),
    "two launches": ("        num_stages=2,\n    )\n", "        num_stages=2,\n    )\n    matmul_kernel[grid](a, b, c, M, N, K, "
                     "a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, "
                     "BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)\n"),
    "a name it adds taken": ("    grid = (", "    partial = 0\n    grid = ("),
}


@pytest.mark.parametrize("why", sorted(NOT_THE_PATTERN))
def test_not_offered_where_the_pattern_is_not_all_there(why):
    old, new = NOT_THE_PATTERN[why]
    src = baseline()
    assert old in src, why
    changed = src.replace(old, new)
    analyze(changed)  # read without an exception
    assert not split_actions(changed), why
    assert split_actions(src)


def test_the_rewrites_pass_the_policy():
    from kernel_tui.core.evaluator.evaluator import policy_rejection
    from kernel_tui.core.task import load_task

    task = load_task(FIXTURES / "matmul")
    for source in (split(baseline()), split(BEST.read_text(encoding="utf-8")), then(split(baseline()), "k_mask")):
        assert policy_rejection(task, source, "cpu") is None


def test_the_search_favours_it_where_tiles_are_few_and_leaves_it_on_the_interpreter():
    assert "split_k" in FAVOURED_KINDS["latency"] and "split_k" in FAVOURED_KINDS["compute"]
    assert "split_k" not in FAVOURED_KINDS["memory"]
    assert {"split_k", "splits"} <= INTERPRETER_IGNORES


def test_the_rewrites_kept_for_a_gpu_run_are_the_current_ones():
    assert (STRUCTURAL / "matmul_split_k.py").read_text(encoding="utf-8") == split(baseline())
    assert (STRUCTURAL / "best_matmul_split_k.py").read_text(encoding="utf-8") == split(BEST.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_split_kernels_pass_correctness_on_the_interpreter(tmp_path: Path):
    from kernel_tui.core.evaluator import Evaluator, Status
    from kernel_tui.core.task import load_task

    mm, best = baseline(), BEST.read_text(encoding="utf-8")
    eight = analyze(split(mm))
    sources = [
        ("split", split(mm)),
        ("split, SPLIT_K 16", eight.apply(next(x for x in eight.actions() if x.knob == "const:SPLIT_K" and x.new == 16))),
        ("split, then the unmasked K loop", then(split(mm), "k_mask")),
        ("the unmasked K loop, then split", split(then(mm, "k_mask"))),
        ("grouped, then split", split(then(mm, "launch_order"))),
        ("the swept best, split", split(best)),
    ]
    ev = Evaluator(load_task(FIXTURES / "matmul"), device="cpu", workdir=tmp_path)
    failures = []
    for change, source in sources:
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{change}: {result.status.value}: {result.reason}")
    assert not failures, failures
