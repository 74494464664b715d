"""A torch without torch.cuda._sleep: the GPU hold and the stream-order probe cannot run, and the timing
block, the result and the report say so instead of passing silently.

The GPU code runs here on the CPU: torch.cuda's events, synchronisation, device properties and graph
capture are replaced by fakes, the argument sets live on the CPU and the "kernel" is host torch code.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch

from kernel_tui.core.evaluator import streams, timing
from kernel_tui.core.evaluator.harness import ArgumentSet
from kernel_tui.core.evaluator.models import TimingBlock, TimingPlan
from kernel_tui.core.report import RunRecords, _section_environment
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES


class FakeEvent:
    def __init__(self, enable_timing: bool = False) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) * 1e3


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda without a GPU, and without torch.cuda._sleep (delete `_sleep` removed, or set it again)."""
    monkeypatch.delattr(torch.cuda, "_sleep", raising=False)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(L2_cache_size=4096))
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    return monkeypatch


def reference(x, y, output, n_elements):
    return (x.float() + y.float()).to(output.dtype)


def vector_add(x, y, output, n_elements):
    output.copy_(reference(x, y, output, n_elements))


def flush_block() -> TimingBlock:
    task = load_task(FIXTURES / "vector_add")
    timer = timing.BlockTimer(task.spec, task.spec.timing_shape("cpu"), "cpu", reference,
                              TimingPlan(pairs=2, inner_repeats=2, warmup=1, method="flush"), 1,
                              lambda *a: None, enforce_policy=False)
    a = timing._Kernel("incumbent", vector_add, verify=False)
    b = timing._Kernel("candidate", vector_add, verify=True)
    b.enforce = False
    return timer._run_gpu(a, b)  # the GPU path, on CPU tensors


def test_a_flush_block_without_the_sleep_reports_no_hold_and_says_why(fake_cuda):
    block = flush_block()
    assert block.method == "flush" and block.timed_outputs_checked > 0
    assert block.hold_seconds is None  # no hold happened, so none is reported
    assert block.hold_retakes == 0  # and no sample was retaken to lengthen a hold that does not exist
    assert len(block.warnings) == 2
    assert all("torch.cuda._sleep is missing" in w for w in block.warnings)
    assert any("not held" in w for w in block.warnings) and any("stream-order" in w for w in block.warnings)


def test_a_flush_block_with_the_sleep_holds_and_warns_of_nothing(fake_cuda):
    slept = []
    fake_cuda.setattr(torch.cuda, "_sleep", slept.append, raising=False)
    fake_cuda.setattr(streams, "_sleep_cycles_per_second", lambda: 1e9)
    block = flush_block()
    assert block.hold_seconds is not None and slept
    assert block.warnings == []


def test_old_timing_blocks_still_load():
    old = {"block": 0, "method": "flush", "shape": "main", "incumbent": [1.0], "candidate": [1.0], "order": ["AB"],
           "inner_repeats": 5, "hold_seconds": 2.5e-4}
    assert TimingBlock.model_validate(old).warnings == []


class FakeGraphCapture:
    """torch.cuda.graph: ending a capture while a fork is unjoined fails, as CUDA's does."""

    forked = False

    def __init__(self, graph) -> None:
        pass

    def __enter__(self) -> None:
        FakeGraphCapture.forked = False

    def __exit__(self, *exc) -> None:
        if FakeGraphCapture.forked:
            raise RuntimeError("operation failed due to a previous error during capture: unjoined work")


@pytest.mark.parametrize("forks", [True, False])
def test_stream_order_check_without_the_sleep_still_captures(fake_cuda, forks):
    # the probe needs a blocked stream and cannot run; the capture needs none and still catches a fork
    fake_cuda.setattr(torch.cuda, "CUDAGraph", lambda: object())
    fake_cuda.setattr(torch.cuda, "graph", FakeGraphCapture)
    probes = []
    fake_cuda.setattr(streams, "_stray_output", lambda *a: probes.append(a))
    task = load_task(FIXTURES / "vector_add")
    s = ArgumentSet.build(task.spec, task.spec.timing_shape("cpu").dims, "cpu", 0)

    def candidate(*args):
        vector_add(*args)
        FakeGraphCapture.forked = forks

    why = streams.check_stream_order(candidate, s)
    if forks:
        assert why is not None and why.startswith("side-stream: the candidate forks work"), why
    else:
        assert why is None
    assert not probes
    assert any("stream-order check cannot block" in w for w in streams.sleep_warnings())


def test_the_report_lists_the_timing_warnings_with_the_timing_labels(tmp_path, fake_cuda):
    block = flush_block()
    assert block.warnings
    records = RunRecords(workspace=tmp_path, baseline_eval={"status": "ok", "timing": block.model_dump(mode="json")})
    lines = _section_environment(records)
    assert [ln for ln in lines if ln.startswith("- timing warning: ")] == [
        f"- timing warning: {w}" for w in block.warnings]
    assert _section_environment(RunRecords(workspace=tmp_path, baseline_eval={"timing": "broken"}))  # lenient
