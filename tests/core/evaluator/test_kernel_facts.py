"""Compiled-kernel facts: the occupancy calculation, reading Triton's caches, and where the facts show."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kernel_tui.core.evaluator.kernel_facts import DeviceLimits, FirstShapes, KernelFacts, facts_of, occupancy
from kernel_tui.core.proposers.base import Feedback
from kernel_tui.core.proposers.llm_tools import verdict_result
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.report import write_report
from tests.core.report.test_report import make_workspace, trajectory

HOPPER = DeviceLimits()


@pytest.mark.parametrize(("regs", "warps", "shared", "blocks", "occ", "limiter"), [
    (32, 4, 0, 16, 1.0, "threads"),  # 16 blocks of 128 threads fill the 2048 threads
    (128, 4, 0, 4, 0.25, "registers"),  # 128 regs × 32 = 4096 per warp: 16 warps per SM
    (255, 8, 0, 1, 0.125, "registers"),  # 8192 per warp: 8 warps, one block of 8
    (64, 8, 100 * 1024, 2, 0.25, "shared memory"),  # 228 KiB / (100 + 1) KiB
    (40, 1, 0, 32, 0.5, "blocks"),  # one warp per block: the 32-block limit
])
def test_occupancy_follows_the_tightest_limit(regs, warps, shared, blocks, occ, limiter):
    assert occupancy(regs, warps, shared, HOPPER) == (blocks, pytest.approx(occ), limiter)


def test_register_allocation_rounds_up_per_warp():
    # 33 registers × 32 threads = 1056, allocated as 1280: 51 warps fit, 12 blocks of 4 warps
    assert occupancy(33, 4, 0, HOPPER)[0] == 12


def compiled(name, regs, spills, shared, warps, stages):
    return SimpleNamespace(n_regs=regs, n_spills=spills,
                           metadata=SimpleNamespace(name=name, shared=shared, num_warps=warps, num_stages=stages))


def test_facts_are_read_from_triton_caches_through_autotuner_wrappers():
    jit = SimpleNamespace(device_caches={0: ({"k1": compiled("add_kernel", 32, 0, 0, 4, 1),
                                              "k2": compiled("add_kernel", 96, 8, 49152, 8, 3)}, {}, "target", "be")})
    autotuner = SimpleNamespace(fn=jit)  # Autotuner and Heuristics keep what they wrap in .fn
    legacy = SimpleNamespace(cache={0: {"k": compiled("old_kernel", 24, 0, 0, 2, 2)}})
    facts = facts_of({"add_kernel": autotuner, "old": legacy, "broken": SimpleNamespace(device_caches=None)}, HOPPER)
    names = [(f.name, f.registers) for f in facts]
    assert names == [("add_kernel", 32), ("add_kernel", 96), ("old_kernel", 24)]
    spilled = facts[1]
    assert spilled.spills == 8 and spilled.shared_bytes == 49152 and spilled.num_stages == 3
    assert spilled.blocks_per_sm == 2 and spilled.limited_by == "registers"  # 96 × 32 = 3072/warp: 21 warps
    text = spilled.summary()
    assert text == "add_kernel, 96 regs (8 spilled), 48.0 KiB shared, 8 warps, 3 stages, occupancy 25% (2 blocks/SM, registers)"


def test_each_variant_is_named_by_the_shape_it_was_first_compiled_for():
    # a ragged correctness shape gets a variant of its own (sizes not divisible by 16): its spills are not
    # the timed variant's
    cache: dict = {}
    jit = SimpleNamespace(device_caches={0: (cache, {}, "target", "be")})
    shapes = FirstShapes({"matmul_kernel": jit})
    cache["main"] = compiled("matmul_kernel", 128, 0, 65536, 8, 3)
    shapes.note("main")
    shapes.note("aligned")  # ran the same variant: nothing new to name
    cache["ragged"] = compiled("matmul_kernel", 255, 74, 49152, 8, 3)
    shapes.note("ragged")
    shapes.note("main")  # a shape noted again does not take a variant over
    facts = facts_of({"matmul_kernel": jit}, HOPPER, shapes)
    assert [(f.shape, f.spills) for f in facts] == [("main", 0), ("ragged", 74)]
    assert facts[1].summary().startswith("matmul_kernel [shape ragged], 255 regs (74 spilled)")
    assert [f.shape for f in facts_of({"matmul_kernel": jit}, HOPPER)] == [None, None]  # nothing noted


def test_missing_facts_leave_the_occupancy_out():
    facts = facts_of({"k": SimpleNamespace(device_caches={0: ({"x": compiled("k", None, None, None, 4, None)},)})}, HOPPER)
    assert facts == [KernelFacts(name="k", num_warps=4)]
    assert facts[0].summary() == "k, 4 warps"


FACTS = KernelFacts(name="add_kernel", registers=96, spills=8, shared_bytes=49152, num_warps=8, num_stages=3,
                    blocks_per_sm=2, occupancy=0.25, limited_by="registers")


def test_the_agent_hears_what_the_compiler_made_of_its_kernel():
    fb = Feedback(round=3, status="ok", accepted=False, reason="slower", kernels=[FACTS.summary()])
    assert json.loads(verdict_result(fb, "src"))["compiled_kernels"] == [FACTS.summary()]
    assert "compiled_kernels" not in json.loads(verdict_result(Feedback(round=3, status="ok", accepted=False,
                                                                       reason="slower"), "src"))


def test_the_report_lists_compiled_kernels_per_version(tmp_path):
    lines: list[TrajectoryLine] = trajectory()
    lines[0] = lines[0].model_copy(update={"kernels": [FACTS]})
    ws = make_workspace(tmp_path / "ws", lines)
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "## Compiled kernels" in md and "occupancy 25% (2 blocks/SM, registers)" in md
    plain = make_workspace(tmp_path / "plain")
    write_report(plain)
    assert "## Compiled kernels" not in (plain / "report.md").read_text()


def test_the_screen_shows_the_selected_verdicts_kernels():
    from kernel_tui.tui.present import rows
    from kernel_tui.tui.widgets.run import detail_text

    line = trajectory()[0].model_copy(update={"kernels": [FACTS]})
    (row,) = rows([line])
    assert row.kernels == (FACTS.summary(),)
    assert FACTS.summary() in detail_text(row).plain
    (plain,) = rows([trajectory()[0]])
    assert "occupancy" not in detail_text(plain).plain
