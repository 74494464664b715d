"""The search replay over the committed H200 sweep tables (bench/sweep/replay.py): knobs the sweep did
not measure are offered and measured as no effect, and the search is told the incumbent's bottleneck from
the sweep's own roofline. No GPU: the tables are read from bench/results."""

from __future__ import annotations

import json
import math

import pytest

from kernel_tui.core.proposers.base import Proposal, ProposerContext
from kernel_tui.core.records import ProposerInfo
from tests.conftest import FIXTURES, ROOT

SWEEP = ROOT / "bench" / "results" / "2026-11-29-h200-benchmark" / "sweep"
HINT = "kernel:matmul_kernel:eviction_policy"


@pytest.fixture(scope="module")
def matmul():
    from bench.sweep.replay_recorded import recorded_hardware
    from bench.sweep.space import build_space
    from kernel_tui.core.task import load_task

    data = json.loads((SWEEP / "matmul.json").read_text(encoding="utf-8"))
    task = load_task(FIXTURES / "matmul")
    return task, build_space(task.baseline_source, data["values"]), data, recorded_hardware(SWEEP)


def payload(matmul, unswept: str) -> dict:
    from bench.sweep.replay import replay_payloads

    task, configs, data, hardware = matmul
    return replay_payloads("matmul", task, configs, data, 1, hardware=hardware, unswept=unswept)[0]


def test_the_recorded_roofline_says_compute_for_the_matmul_and_memory_for_the_vector_add(matmul):
    from bench.sweep.replay import roof_of, start_bottleneck
    from kernel_tui.core.metrics import Roof
    from kernel_tui.core.task import load_task

    hardware = matmul[3]
    assert hardware["copy_bandwidth_bytes_per_s"] > 1e12 and hardware["matmul_flops_per_s"]["float16"] > 1e14
    assert start_bottleneck(payload(matmul, "no-effect")) == "compute"
    vector_add = json.loads((SWEEP / "vector_add.json").read_text(encoding="utf-8"))
    roof = roof_of(load_task(FIXTURES / "vector_add"), hardware)
    assert roof is not None
    place = Roof(**roof).place(vector_add["baseline_s"])
    assert place is not None and place.bottleneck == "memory"


def test_unswept_knobs_are_offered_only_when_they_are_measured_as_no_effect(matmul):
    from bench.sweep.replay import restricted_analyze, unswept_key

    p = payload(matmul, "no-effect")
    start = p["start_source"]
    free = restricted_analyze(p["allowed"], free_unswept=True)(start)
    cut = restricted_analyze(p["allowed"])(start)
    assert {a.knob for a in free.actions()} - {a.knob for a in cut.actions()} >= {HINT}
    assert not [a for a in free.actions() if a.knob in p["allowed"] and a.new not in p["allowed"][a.knob]]
    hinted = next(a for a in free.actions() if a.knob == HINT)
    assignment = free.assignment_after(hinted)
    entry = p["table"][p["swept"][unswept_key(assignment, p["allowed"])]]
    assert entry["index"] == p["start_index"]  # measured as the config it leaves unchanged


class Scripted:
    """Proposes a load hint on the start, then the sweep's best; records what it was told."""

    def __init__(self, sources: list[str]) -> None:
        self.sources, self.told, self.heard = sources, [], []

    def __call__(self, **_kw) -> Scripted:
        return self

    def propose(self, context: ProposerContext) -> Proposal | None:
        self.told.append(context.bottleneck)
        if context.round > len(self.sources):
            return None
        return Proposal(source=self.sources[context.round - 1], change="scripted",
                        proposer=ProposerInfo(kind="search", name="scripted"))

    def feedback(self, feedback) -> None:
        self.heard.append(feedback)


@pytest.mark.parametrize("unswept", ["no-effect", "cut"])
def test_a_load_hint_on_the_matmul_is_measured_as_no_effect_and_the_search_is_told_compute(matmul, monkeypatch, unswept):
    import kernel_tui.core.proposers.search as search
    from bench.sweep.replay import replay_task
    from kernel_tui.core.proposers.transforms import analyze

    p = payload(matmul, unswept)
    a = analyze(p["start_source"])
    hinted = a.apply(next(x for x in a.actions() if x.knob == HINT))
    best = matmul[2]["best"]["source"]
    scripted = Scripted([hinted, best])
    monkeypatch.setattr(search, "SearchProposer", scripted)
    result = replay_task(p)
    first = scripted.heard[0]
    if unswept == "no-effect":
        assert first.status == "ok" and not first.accepted
        assert abs(first.improvement) < 6 * math.sqrt(2) * p["noise_sd"]  # 0% give or take the timing noise
        assert result["no_effect"] == 1 and result["outside"] == 0
    else:
        assert first.status == "runtime_error" and result["outside"] == 1 and result["no_effect"] == 0
    assert result["evaluations_to_target"] == 2
    assert scripted.told == ["compute", "compute"]
