"""Warp specialization: offered on the loops of a tl.dot kernel that hold the dot (its K loop, a persistent grid's
tile loop), one at a time, at 4 warps or more, nowhere else; read back from sources written by hand; composed with
the other structural moves; in the move vocabulary; and correct on the interpreter."""

from __future__ import annotations

import pytest

from kernel_tui.core.describe import describe_change
from kernel_tui.core.policy import check_source
from kernel_tui.core.proposers import search_steps
from kernel_tui.core.proposers.llm_tools import structural_moves
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.proposers.transforms import warp_specialize as ws
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES, ROOT

KID = "kernel:matmul_kernel:warp_specialize"
PROBES = ROOT / "bench" / "candidates" / "structural"


def baseline(name: str = "matmul") -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def ws_actions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "warp_specialize"]


def then(source: str, kind: str, new: str | None = None) -> str:
    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == kind and (new is None or x.new == new)]
    return a.apply(action)


def test_the_k_loop_becomes_a_warp_specialized_tl_range():
    src = baseline()
    (action,) = ws_actions(src)
    assert "warp_specialize" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == (KID, "off", "K loop")
    assert action.change == "warp-specialized K loop (tl.range warp_specialize=True)"
    out = analyze(src).apply(action)
    assert "    for k_start in tl.range(0, K, BLOCK_K, warp_specialize=True):\n" in out
    assert out.replace("tl.range(0, K, BLOCK_K, warp_specialize=True)", "range(0, K, BLOCK_K)") == src  # nothing else
    b = analyze(out)
    assert b.knobs[KID].value == "K loop"
    (back,) = ws_actions(out)
    assert (back.new, back.change) == ("off", "warp specialization off (K loop)")
    assert "    for k_start in tl.range(0, K, BLOCK_K):\n" in b.apply(back)
    assert describe_change(src, out) == "warp-specialized K loop"


def test_on_a_persistent_kernel_either_loop_and_only_one_at_a_time():
    persistent = then(baseline(), "grid")
    assert {x.new for x in ws_actions(persistent)} == {"tile loop", "K loop"}
    tiles = then(persistent, "warp_specialize", "tile loop")
    assert "    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), warp_specialize=True):\n" in tiles
    assert analyze(tiles).knobs[KID].value == "tile loop"
    assert analyze(tiles).knobs["kernel:matmul_kernel:grid"].value == "persistent"  # still the persistent grid
    k_loop = then(tiles, "warp_specialize", "K loop")  # moved, not added
    assert k_loop.count("warp_specialize=True") == 1
    assert "        for k_start in tl.range(0, K, BLOCK_K, warp_specialize=True):\n" in k_loop
    assert analyze(k_loop).knobs[KID].value == "K loop"


def test_sources_written_by_hand_are_read_back():
    tile = (PROBES / "searched_matmul_ws_tile_loop.py").read_text(encoding="utf-8")
    k_loop = (PROBES / "searched_matmul_ws_k_loop.py").read_text(encoding="utf-8")
    assert analyze(tile).knobs[KID].value == "tile loop"
    assert analyze(k_loop).knobs[KID].value == "K loop"
    assert {x.new for x in ws_actions(tile)} == {"off", "K loop"}
    # an explicit False is off, and is set rather than duplicated
    off = baseline().replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, warp_specialize=False)")
    assert analyze(off).knobs[KID].value == "off"
    assert "tl.range(0, K, BLOCK_K, warp_specialize=True)" in then(off, "warp_specialize")


def test_a_specialized_loop_keeps_its_kernel_at_four_warps_or_more():
    out = then(baseline(), "warp_specialize")
    assert {x.new for x in analyze(out).actions() if x.kind == "num_warps"} == {8, 16}
    assert {x.new for x in analyze(baseline()).actions() if x.kind == "num_warps"} == {1, 2, 8, 16}
    assert not ws_actions(baseline().replace("num_warps=4", "num_warps=2"))


@pytest.mark.parametrize("kind", ["k_mask", "loads", "launch_order", "split_k", "grid"])
def test_it_composes_with_the_other_structural_moves_either_way(kind):
    src = baseline()
    for out in (then(then(src, "warp_specialize"), kind), then(then(src, kind), "warp_specialize", "K loop")):
        b = analyze(out)
        assert b.knobs[KID].value == "K loop", kind
        assert out.count("warp_specialize=True") == 1
        assert not [x for x in b.actions() if x.kind == kind]  # the other move made, once


def test_the_rewrites_pass_the_policy():
    spec = load_task(FIXTURES / "matmul").spec
    persistent = then(baseline(), "grid")
    for src in (then(baseline(), "warp_specialize"), then(persistent, "warp_specialize", "tile loop"),
                then(then(persistent, "loads"), "warp_specialize", "tile loop")):
        report = check_source(src, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                              tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
        assert report.ok, report.summary()


@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if n != "matmul"])
def test_not_offered_on_a_kernel_without_tl_dot(name):
    assert not ws_actions(baseline(name))


NOT_THE_PATTERN = {
    "an autotuned kernel": ("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['M'])\n@triton.jit"),
    "a static_range around the dot": ("range(0, K, BLOCK_K)", "tl.static_range(0, K, BLOCK_K)"),
    "keywords passed through **": ("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, **{})"),
    "warp_specialize not a literal": ("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, warp_specialize=BLOCK_K > 16)"),
    "a range of the kernel's own": ("import triton.language as tl\n", "import triton.language as tl\nfrom builtins import range\n"),
}


@pytest.mark.parametrize("why", sorted(NOT_THE_PATTERN))
def test_not_offered_where_the_pattern_is_not_all_there(why):
    old, new = NOT_THE_PATTERN[why]
    src = baseline()
    assert old in src
    changed = src.replace(old, new, 1)
    analyze(changed)  # read without an exception
    assert not ws_actions(changed), why
    assert ws_actions(src)


def test_not_offered_where_the_installed_triton_has_no_such_keyword(monkeypatch):
    monkeypatch.setattr(ws, "triton_supports_warp_specialize", lambda: False)
    assert KID not in analyze(baseline()).knobs


def test_in_the_vocabulary_the_agent_hears_and_never_a_step_on_the_interpreter():
    assert "warp-specialized K loop (tl.range warp_specialize=True)" in structural_moves(baseline())
    assert "warp_specialize" in search_steps.INTERPRETER_IGNORES
    assert "warp_specialize" in search_steps.FAVOURED_KINDS["compute"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_warp_specialized_kernels_pass_correctness_on_the_interpreter(tmp_path):
    from kernel_tui.core.evaluator import Evaluator, Status

    mm = baseline()
    persistent = then(mm, "grid")
    sources = [
        ("K loop", then(mm, "warp_specialize")),
        ("persistent, tile loop", then(persistent, "warp_specialize", "tile loop")),
        ("persistent, K loop", then(persistent, "warp_specialize", "K loop")),
        ("split-K, then its K loop", then(then(mm, "split_k"), "warp_specialize")),
        ("TMA loads and the unmasked K loop, then the K loop", then(then(then(mm, "loads"), "k_mask"), "warp_specialize")),
    ]
    ev = Evaluator(load_task(FIXTURES / "matmul"), device="cpu", workdir=tmp_path)
    failures = []
    for change, source in sources:
        assert "warp_specialize=True" in source, change
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{change}: {result.status.value}: {result.reason}")
    assert not failures, failures
