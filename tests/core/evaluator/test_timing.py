"""What the GPU timing does where it cannot do everything, and the small rules it decides by: a torch
without torch.cuda._sleep (no hold: the block says so), the worker's capture check, the window's length,
and the probe's reading of a busy GPU. The GPU itself is not needed: these run on the CPU."""

from __future__ import annotations

import pytest
import torch

from kernel_tui.core.evaluator import streams
from kernel_tui.core.evaluator.models import TimingBlock
from kernel_tui.core.evaluator.timing import (
    MAX_WINDOW_CALLS,
    WINDOW_BYTES,
    WINDOW_SECONDS,
    busy,
    interference_verdict,
    window_calls,
)
from kernel_tui.core.report import RunRecords, _section_environment


def test_a_torch_without_the_sleep_says_the_gpu_is_not_held(monkeypatch):
    monkeypatch.delattr(torch.cuda, "_sleep", raising=False)
    assert not streams.can_sleep()
    (line,) = streams.sleep_warnings()
    assert "torch.cuda._sleep is missing" in line and "not held" in line
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None, raising=False)
    assert streams.sleep_warnings() == []


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
def test_the_workers_capture_names_a_fork_that_never_joins(monkeypatch, forks):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: object())
    monkeypatch.setattr(torch.cuda, "graph", FakeGraphCapture)

    def candidate(x):
        x.add_(1)
        FakeGraphCapture.forked = forks

    why = streams.capture_error(candidate, [torch.zeros(3)])
    assert (why is not None and "unjoined" in why) if forks else why is None


def test_a_window_lasts_long_enough_and_stays_within_memory():
    assert window_calls(24e-6, 5, 512) == pytest.approx(WINDOW_SECONDS / 24e-6, abs=1)  # 21 calls of 24 µs
    assert window_calls(3e-3, 5, 512) == 5  # long kernels: the task's inner repeats
    assert window_calls(1e-7, 5, 10_000) == MAX_WINDOW_CALLS
    assert window_calls(24e-6, 5, 3) == 3  # memory allows three sets: three calls
    assert window_calls(24e-6, 5, 0) == 1
    big = 200 * 2**20  # 200 MiB a call: five calls' footprint, not the 21 that the time alone would take
    assert window_calls(24e-6, 5, 512, big) == 5 and window_calls(24e-6, 2, 512, big) == WINDOW_BYTES // big


def test_the_probe_names_the_candidate_only_when_the_gpu_was_busy_after_its_own_windows():
    quiet = 280e-6
    assert not busy(300e-6, quiet) and busy(2e-3, quiet)  # a time slice of another process's work
    assert interference_verdict({"candidate": 0, "incumbent": 0}, 25) is None
    assert interference_verdict({"candidate": 1, "incumbent": 0}, 25) is None  # one hiccup is no pattern
    status, reason = interference_verdict({"candidate": 9, "incumbent": 1}, 25)
    assert status == "tampering" and "left work running" in reason
    status, reason = interference_verdict({"candidate": 9, "incumbent": 8}, 25)
    assert status == "evaluator_fault" and "another process" in reason


def test_old_timing_blocks_still_load_and_a_time_must_be_a_time():
    old = {"block": 0, "method": "flush", "shape": "main", "incumbent": [1.0], "candidate": [1.0], "order": ["AB"],
           "inner_repeats": 5, "hold_seconds": 2.5e-4}
    assert TimingBlock.model_validate(old).warnings == []
    for bad in ([0.0], [-1e-6], [float("inf")], [float("nan")]):
        with pytest.raises(ValueError):
            TimingBlock.model_validate({**old, "candidate": bad})


def test_the_report_lists_the_timing_warnings_with_the_timing_labels(tmp_path):
    block = TimingBlock(block=0, method="window", shape="main", incumbent=[2e-5], candidate=[2e-5], order=["AB"],
                        inner_repeats=80, warnings=streams.sleep_warnings() or ["a warning the block carried"])
    records = RunRecords(workspace=tmp_path, baseline_eval={"status": "ok", "timing": block.model_dump(mode="json")})
    lines = _section_environment(records)
    assert [ln for ln in lines if ln.startswith("- timing warning: ")] == [
        f"- timing warning: {w}" for w in block.warnings]
    assert _section_environment(RunRecords(workspace=tmp_path, baseline_eval={"timing": "broken"}))  # lenient


def test_a_window_label_says_how_many_calls_it_holds_in_words_that_read():
    from kernel_tui.core.evaluator.labels import timing_label
    from kernel_tui.core.evaluator.models import TimingBlock

    def label(k: int) -> str:
        return timing_label(TimingBlock(block=0, method="window", shape="main", incumbent=[1.0], candidate=[1.0],
                                        order=["AB"], inner_repeats=k, rotating_sets=3, handoff_seconds=2.6e-4), "H200")

    assert label(1).startswith("GPU kernel time on H200: 1 call per window over rotating input sets")
    assert label(5).startswith("GPU kernel time on H200: 5 calls back to back per window")
    assert label(5).endswith("260 µs handoff subtracted")
