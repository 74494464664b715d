"""Several benchmark shapes: the gate decides on the weighted geometric mean and vetoes a regression."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_tui.core import gate
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.evaluator.models import Status, TimingBlock, WorkerResult
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES


def block(speedup: float, seed: int, n: int = 25) -> gate.Block:
    rng = np.random.default_rng(seed)
    inc = 1e-4 * (1 + 0.01 * rng.standard_normal(n))
    return gate.Block(incumbent=inc, candidate=inc / speedup * (1 + 0.01 * rng.standard_normal(n)))


def test_shapes_combine_as_a_weighted_geometric_mean_of_paired_ratios():
    fast, slow = block(1.2, 1), block(1 / 1.2, 2)
    even = gate.combine_shapes([fast, slow], [1, 1])
    assert abs(float(np.median(even.log_ratios))) < 0.02
    leaning = gate.combine_shapes([fast, slow], [3, 1])
    assert float(np.median(leaning.log_ratios)) == pytest.approx(np.log(1.2) / 2, abs=0.02)


def test_a_winner_slower_beyond_the_tolerance_at_one_shape_is_rejected():
    win = gate.decide([block(1.3, i) for i in range(4)], gate.GatePolicy(confirm_blocks=0))
    assert win.accepted
    per_shape = {"main": [block(1.3, 7)], "ragged": [block(0.95, 8)]}
    vetoed = gate.veto_regressions(win, per_shape, 0.02)
    assert not vetoed.accepted and vetoed.decision == "reject"
    assert "slower at ragged" in vetoed.reason and "main" not in vetoed.reason.split("(")[0]
    assert gate.veto_regressions(win, {"main": [block(1.3, 7)], "ragged": [block(0.995, 8)]}, 0.02).accepted
    lost = gate.decide([block(0.9, i) for i in range(4)], gate.GatePolicy(confirm_blocks=0))
    assert gate.veto_regressions(lost, per_shape, 0.02) is lost


def multishape_task(tmp_path):
    root = tmp_path / "task"
    root.mkdir()
    for f in ("reference.py", "baseline.py"):
        (root / f).write_text((FIXTURES / "vector_add" / f).read_text())
    data = json.loads((FIXTURES / "vector_add" / "task.json").read_text())
    data["benchmark"]["shapes"] = [{"shape": "main"}, {"shape": "ragged", "weight": 0.5}]
    (root / "task.json").write_text(json.dumps(data))
    return load_task(root)


@pytest.mark.parametrize("ragged_speedup, accepted", [(0.9, False), (0.995, True)])
def test_the_evaluator_gates_on_every_benchmark_shape(tmp_path, monkeypatch, ragged_speedup, accepted):
    """Worker results are made up here (the shapes are timed on a GPU); what is tested is how the
    evaluator combines them: one gate block per process, the veto, and the per-shape figures."""
    task = multishape_task(tmp_path)
    ev = Evaluator(task, device="cuda", workdir=tmp_path / "ev", fork_server=False)
    assert [c.name for c, _ in task.spec.benchmark_shapes("cuda")] == ["main", "ragged"]

    def timed(shape: str, speedup: float, index: int) -> TimingBlock:
        b = block(speedup, 100 * index + len(shape))
        return TimingBlock(block=index, method="flush", shape=shape, incumbent=list(b.incumbent),
                           candidate=list(b.candidate), order=["AB"] * len(b.incumbent), inner_repeats=5)

    def fake_worker(candidate, incumbent, *, block, **kw):
        return WorkerResult(status=Status.ok, reason="correct and timed", timing=timed("main", 1.3, block),
                            more_timings=[timed("ragged", ragged_speedup, block)])

    monkeypatch.setattr(ev, "_worker", fake_worker)
    monkeypatch.setattr(ev, "check_policy", lambda source: None)
    result = ev.evaluate("candidate")
    assert result.accepted is accepted
    assert [f.shape for f in result.shapes] == ["main", "ragged"]
    assert result.shapes[1].weight == 0.5
    assert result.shapes[0].improvement == pytest.approx(1 - 1 / 1.3, abs=0.01)
    assert "per shape: main +" in result.reason
    if not accepted:
        assert "slower at ragged" in result.reason
    ev.close()
