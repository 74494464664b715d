"""Tests of the run report: a fake workspace in tmp_path, no GPU, no worker processes."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_tui.core.compare import Comparison
from kernel_tui.core.compare import RunSummary as CompareRun
from kernel_tui.core.records import AgentStatus, ProposerInfo, RunSummary, TrajectoryLine
from kernel_tui.core.report import (
    ACCEPTED,
    REJECTED,
    ReportError,
    accepted_record,
    format_latency,
    is_interpreter,
    load_records,
    status_counts,
    write_report,
)

TASK = Path(__file__).resolve().parents[3] / "fixtures" / "vector_add" / "task.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GPU_LABEL = "GPU kernel time on NVIDIA H200: L2 flushed (512 MiB) before each call"
CPU_LABEL = "CPU interpreter — timings are not GPU timings"
SEARCH = ProposerInfo(kind="search", name="built-in search")
LLM = ProposerInfo(kind="llm", name="openai/gpt-x", model="gpt-x")
PERSON = ProposerInfo(kind="person", name="Ada")


def line(round_: int, status: str = "ok", accepted: bool = False, latency: float | None = None,
         improvement: float | None = None, reason: str = "", change: str = "", minute: int = 0,
         label: str = GPU_LABEL, **kw) -> TrajectoryLine:
    ci = {} if improvement is None else {"ci_low": improvement - 0.01, "ci_high": improvement + 0.01}
    return TrajectoryLine(
        round=round_, change=change or f"change {round_}", proposer=kw.pop("proposer", SEARCH),
        commit=f"{round_:040x}", status=status, reason=reason or status, accepted=accepted, latency=latency,
        improvement=improvement, device="cuda", timing_label=label,
        time=f"2026-12-01T10:{minute:02d}:00+00:00", **ci, **kw,
    )


def trajectory(label: str = GPU_LABEL) -> list[TrajectoryLine]:
    return [
        line(1, accepted=True, latency=40e-6, incumbent_latency=50e-6, improvement=0.20, p_value=0.001,
             reason="accepted: +20.0% [19%, 21%], p=0.001", change="BLOCK_SIZE 1024 -> 4096", minute=1, label=label),
        line(2, latency=44e-6, incumbent_latency=40e-6, improvement=-0.10, reason="clearly slower after one block",
             change="num_warps 8", minute=3, label=label, proposer=LLM),
        line(3, status="incorrect", reason="max abs error 0.5 at shape ragged seed 17", minute=4, label=label),
        line(4, status="policy_violation", reason="rule no-torch-compute: torch.add in host code line 12",
             minute=5, label=label, proposer=LLM),
        line(5, status="rejected_by_person", reason="person said no: touches the mask", minute=6, label=label,
             proposer=PERSON),
        line(6, accepted=True, latency=None, improvement=0.05, reason="accepted: +5.0% (latency lost)",
             change="vectorized loads", minute=8, label=label),
    ]


def comparison(speedup: float = 1.234, label: str = GPU_LABEL) -> Comparison:
    runs = [CompareRun(run=i, incumbent_median=50e-6, candidate_median=50e-6 / speedup,
                       median_paired_improvement=imp, method="flush") for i, imp in enumerate((0.18, 0.19, 0.21))]
    return Comparison(status="ok", reason=f"S = {speedup:.3f}x", device="cuda", timing_label=label, runs=runs,
                      speedup=speedup, median_paired_improvement=0.19, improvement_range=(0.18, 0.21))


def make_workspace(root: Path, lines: list[TrajectoryLine] | None = None, *, label: str = GPU_LABEL,
                   speedup: float = 1.234, device: str = "cuda") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASK, root / "task.json")
    lines = trajectory(label) if lines is None else lines
    (root / "trajectory.jsonl").write_text("".join(ln.model_dump_json() + "\n" for ln in lines))
    (root / "final-comparison.json").write_text(comparison(speedup, label).model_dump_json())
    summary = RunSummary(task="vector-add", device=device, timing_label=label, rounds=6, accepted=2,
                         statuses={"ok": 3, "incorrect": 1, "policy_violation": 1, "rejected_by_person": 1},
                         baseline_commit="b" * 40, best_commit="6" * 40, best_round=6, baseline_latency=50e-6,
                         best_latency=None, final_speedup=speedup, final_median_paired_improvement=0.19,
                         stopped_because="patience exhausted")
    (root / "run_summary.json").write_text(summary.model_dump_json())
    (root / "agent-status.json").write_text(AgentStatus(status="complete_with_warning",
                                                        warnings=["one accepted round lost its latency"]).model_dump_json())
    (root / "environment.json").write_text(json.dumps({"device": device, "device_name": "NVIDIA H200",
                                                       "torch": "2.5.1", "triton": "3.1.0", "python": "3.11.9"}))
    hw = {"copy_bandwidth_bytes_per_s": 4.0e12} if device == "cuda" else {"statement": "no GPU: no hardware figures"}
    (root / "hardware.json").write_text(json.dumps(hw))
    return root


def assert_png(path: Path) -> None:
    assert path.exists() and path.stat().st_size > 1000, path
    assert path.read_bytes()[:8] == PNG_SIGNATURE, path


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


def test_record_line_changes_only_on_accept_starts_at_first_accept_and_gaps_on_missing_latency():
    lines = [
        line(1, latency=60e-6, improvement=-0.2),  # rejected before any accept: no record yet
        line(2, status="crashed"),
        line(3, accepted=True, latency=40e-6, improvement=0.2),
        line(4, latency=30e-6, improvement=0.25),  # faster but rejected: the record must not move
        line(5, status="timeout"),
        line(6, accepted=True, latency=None, improvement=0.05),  # accepted, latency lost: a gap
        line(7, latency=35e-6, improvement=-0.01),
        line(8, accepted=True, latency=33e-6, improvement=0.04),
    ]
    rounds, record = accepted_record(lines)
    assert rounds == [1, 2, 3, 4, 5, 6, 7, 8]
    assert math.isnan(record[0]) and math.isnan(record[1])
    assert record[2:5] == [40e-6, 40e-6, 40e-6]
    assert math.isnan(record[5]) and math.isnan(record[6])
    assert record[7] == 33e-6


def test_record_line_is_all_nan_without_accepts_and_empty_without_verdicts():
    assert accepted_record([]) == ([], [])
    _, record = accepted_record([line(1, latency=1e-5), line(2, status="incorrect")])
    assert all(math.isnan(v) for v in record)


def test_status_counts_keep_accepted_apart_from_ok_but_rejected():
    counts = status_counts(trajectory())
    assert counts == {ACCEPTED: 2, REJECTED: 1, "incorrect": 1, "policy_violation": 1, "rejected_by_person": 1}
    assert list(counts)[:2] == [ACCEPTED, REJECTED]


def test_format_latency_uses_us_below_one_ms_and_ms_from_there():
    assert format_latency(42.5e-6) == "42.5 µs"
    assert format_latency(1.5e-3) == "1.50 ms"
    assert format_latency(0.25) == "250 ms"
    assert format_latency(None) == "—"


def test_is_interpreter():
    assert is_interpreter("cpu")
    assert is_interpreter("", CPU_LABEL)
    assert not is_interpreter("cuda", GPU_LABEL)


# --------------------------------------------------------------------------------------------
# The whole report
# --------------------------------------------------------------------------------------------


def test_full_workspace_writes_report_and_four_pngs(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    written = write_report(ws)
    names = {p.name for p in written}
    assert names == {"report.md", "rounds_overview.png", "process_timeline.png", "status_breakdown.png", "roofline.png"}
    for p in written:
        assert p.parent == ws
        if p.suffix == ".png":
            assert_png(p)
    md = (ws / "report.md").read_text()
    for section in ("# Run report: vector-add", "## Task and baseline", "## Environment", "## Run status",
                    "## Key attempts", "## Final re-test", "## Limits"):
        assert section in md, section
    # task, cost model, environment, status
    assert "Element-wise add of two fp16 tensors" in md
    assert "rows=4096, cols=2048" in md
    assert "5.033e+07 bytes" in md  # 3 * 4096 * 2048 * 2
    assert "NVIDIA H200" in md and "4000.0 GB/s" in md
    assert "complete, with warnings" in md and "one accepted round lost its latency" in md
    assert "patience exhausted" in md
    # attempts: numbers, CI, proposer, shortened reason, both verdicts
    assert "BLOCK_SIZE 1024 -> 4096" in md
    assert "40.0 µs" in md and "+20.00% [+19.00%, +21.00%]" in md
    assert "clearly slower after one block" in md
    assert "rule no-torch-compute: torch.add in host code line 12" in md
    assert "openai/gpt-x (gpt-x) [llm]" in md
    assert "**accepted**" in md and "| rejected by the gate |" in md and "| rejected by the person |" in md
    # % of roofline: 50331648 bytes / 40e-6 s / 4e12 B/s = 31.5%
    assert "31.5%" in md
    # final re-test and its spread
    assert "S = 1.234×" in md
    assert "+19.00%" in md and "+18.00% to +21.00%" in md
    assert md.count("| flush |") == 3
    assert "best version 40.5 µs (31.1% of roofline)" in md  # 50331648 B / 40.52 µs / 4 TB/s
    # limits
    assert "4 of 6 verdicts failed" not in md  # rejected_by_person is not a failure
    assert "2 of 6 verdicts failed" in md and "incorrect: 1" in md
    assert "1 candidate(s) were rejected by a person" in md
    assert "Accepted round(s) 6 have no recorded latency" in md
    assert "CPU INTERPRETER" not in md  # no banner on a GPU run
    assert "Missing or unreadable records" in md and "preflight.json" in md  # the optional ones are listed


def test_cpu_interpreter_timings_are_flagged_loudly(tmp_path):
    ws = make_workspace(tmp_path / "ws", label=CPU_LABEL, device="cpu")
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "CPU INTERPRETER — THESE TIMINGS ARE NOT GPU TIMINGS" in md
    assert "Timings are CPU-interpreter timings, NOT GPU timings" in md
    assert "shape `small`" in md  # says which shape was really timed
    assert "no GPU: no hardware figures" in md
    assert "% roofline" not in md


def test_retest_slower_than_baseline_is_a_limit(tmp_path):
    ws = make_workspace(tmp_path / "ws", speedup=0.97)
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "S = 0.970×" in md
    assert "**slower** than the baseline (S = 0.970× < 1)" in md


def test_retest_over_several_shapes_reports_their_weighted_s(tmp_path):
    """Faster at the main shape, slower weighted over the shapes the gate weighs: the report's S is the latter."""
    ws = make_workspace(tmp_path / "ws", speedup=1.30)
    c = comparison(1.30).model_copy(update={"shape_speedups": {"main": 1.30, "half": 0.40},
                                            "shape_weights": {"main": 1.0, "half": 0.5}, "weighted_speedup": 0.872})
    (ws / "final-comparison.json").write_text(c.model_dump_json())
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "Speedup **S = 0.872×**" in md
    assert "weighted geometric mean: main 1.300× (weight 1), half 0.400× (weight 0.5)" in md
    assert "Median paired improvement at the main shape" in md
    assert "**slower** than the baseline (S = 0.872× weighted over its shapes (main 1.3x, half 0.4x) < 1)" in md


def test_corrupt_trajectory_line_is_skipped_and_reported(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    good = (ws / "trajectory.jsonl").read_text().splitlines()
    broken = [good[0], '{"round": 2, "change": "trunc', good[1], '{"round": "x"}', "", *good[2:]]
    (ws / "trajectory.jsonl").write_text("\n".join(broken) + "\n")
    records = load_records(ws)
    assert len(records.lines) == 6
    assert [s.split(":")[0] for s in records.skipped_lines] == ["line 2", "line 4"]
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "skipped 2 corrupt line(s)" in md and "line 2: invalid JSON" in md
    assert "2 corrupt line(s) of trajectory.jsonl were skipped" in md
    assert_png(ws / "rounds_overview.png")


def test_empty_workspace_still_yields_a_report_saying_what_is_missing(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(TASK, ws / "task.json")
    written = write_report(ws)
    assert len(written) == 5
    for name in ("rounds_overview.png", "process_timeline.png", "status_breakdown.png"):
        assert_png(ws / name)
    md = (ws / "report.md").read_text()
    assert "# Run report: vector-add" in md
    for name in ("trajectory.jsonl", "run_summary.json", "agent-status.json", "final-comparison.json",
                 "environment.json", "hardware.json"):
        assert f"**missing** `{name}`" in md, name
    assert "No verdicts yet." in md
    assert "No final re-test was recorded" in md
    assert "Status: unknown" in md
    assert "the run was interrupted or has not finished" in md


def test_workspace_without_task_and_with_broken_json_files(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    (ws / "task.json").unlink()
    (ws / "run_summary.json").write_text("{not json")
    (ws / "agent-status.json").write_text(json.dumps({"status": "exploded"}))
    (ws / "environment.json").write_text("[1, 2]")
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "**missing** `task.json`" in md
    assert "run_summary.json: unreadable" in md
    assert "agent-status.json: does not match AgentStatus" in md
    assert "environment.json: expected a JSON object" in md
    assert "## Key attempts" in md and "BLOCK_SIZE 1024 -> 4096" in md


def test_single_verdict_and_same_time_still_plot(tmp_path):
    ws = make_workspace(tmp_path / "ws", [line(1, status="timeout", minute=0)])
    write_report(ws)
    for name in ("rounds_overview.png", "process_timeline.png", "status_breakdown.png"):
        assert_png(ws / name)
    assert "Nothing was accepted" in (ws / "report.md").read_text()


def test_unreadable_verdict_time_is_left_out_of_the_timeline_only(tmp_path):
    lines = trajectory()
    lines[2] = lines[2].model_copy(update={"time": "yesterday"})
    ws = make_workspace(tmp_path / "ws", lines)
    write_report(ws)
    assert_png(ws / "process_timeline.png")
    assert "max abs error 0.5 at shape ragged seed 17" in (ws / "report.md").read_text()


def test_baseline_latency_falls_back_to_the_baseline_evaluation_timing_block(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    (ws / "run_summary.json").unlink()
    (ws / "baseline-evaluation.json").write_text(json.dumps({
        "status": "ok", "reason": "timed", "timing": {"candidate": [61e-6, 60e-6, 59e-6], "incumbent": [60e-6] * 3}}))
    latency, source = load_records(ws).baseline_latency()
    assert latency == pytest.approx(60e-6) and source == "baseline-evaluation.json"
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "Baseline latency: 60.0 µs, 21.0% of roofline (from baseline-evaluation.json)" in md


def test_missing_workspace_is_a_typed_error(tmp_path):
    with pytest.raises(ReportError, match="no such workspace"):
        write_report(tmp_path / "nope")


def test_report_module_never_imports_textual_or_pyplot_at_import():
    code = ("import sys, kernel_tui.core.report; "
            "print('textual' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_no_raw_status_names_reach_the_report(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    write_report(ws)
    md = (ws / "report.md").read_text()
    for raw in ("complete_with_warning", "policy_violation", "rejected_by_person", "ok, rejected", "| ok |"):
        assert raw not in md, raw
    assert "policy violation: 1" in md and "complete, with warnings" in md
    assert "| 2 | num_warps 8 |" in md and "| rejected by the gate |" in md


def test_the_timeline_axis_is_minutes_from_one_named_start():
    from datetime import UTC, datetime

    from kernel_tui.core.report.figures import timeline_axis

    times = [datetime(2026, 11, 30, 19, 5, 0, tzinfo=UTC), datetime(2026, 11, 30, 19, 5, 30, tzinfo=UTC),
             datetime(2026, 11, 30, 19, 17, 0, tzinfo=UTC)]
    xs, label = timeline_axis(times)
    assert xs == [0.0, 0.5, 12.0]  # one unit, minutes: no clock times mixed with seconds
    assert label == "minutes since the first verdict (2026-11-30 19:05 UTC)"


def test_a_run_whose_candidates_were_not_confined_says_so_at_the_top_and_in_the_environment(tmp_path):
    from kernel_tui.core.records import Preflight
    from kernel_tui.core.report import RunRecords
    from kernel_tui.core.report.markdown import render_markdown

    warning = "candidates are not confined: Landlock: not available in this kernel"
    records = RunRecords(workspace=tmp_path, preflight=Preflight(status="ok", reference="ok", baseline="ok",
                                                                 device="cpu", not_confined=warning))
    text = render_markdown(records)
    head = text.split("## ", 1)[0]
    assert "**Candidates are not confined: Landlock: not available in this kernel.**" in head
    assert f"- **{warning}**" in text
    confined = RunRecords(workspace=tmp_path, preflight=Preflight(status="ok", reference="ok", baseline="ok",
                                                                  device="cpu"))
    assert "not confined" not in render_markdown(confined)


def test_the_status_line_says_candidates_are_not_confined_whenever_the_preflight_said_so():
    from rich.text import Text

    from kernel_tui.core.records import ProposerInfo
    from kernel_tui.tui import present
    from kernel_tui.tui.widgets.run import StatusLine

    class Ws:  # what status_view reads of a workspace
        def __init__(self, preflight: dict) -> None:
            self.preflight = preflight

        def read_json(self, name: str):
            return self.preflight if name == "preflight.json" else None

    info = ProposerInfo(kind="search", name="built-in search")
    shown: list[str] = []
    line = StatusLine()
    line.update = lambda text: shown.append(text.plain if isinstance(text, Text) else str(text))  # type: ignore[method-assign]
    line.show(present.status_view(Ws({"not_confined": "candidates are not confined: Landlock: not available"}),
                                  "cpu", info, 1, 5))
    assert "candidates are not confined" in shown[-1]
    line.show(present.status_view(Ws({"not_confined": ""}), "cpu", info, 1, 5))
    assert "not confined" not in shown[-1]


def test_timing_labels_that_differ_only_in_measured_numbers_are_one_method_with_their_range():
    from kernel_tui.core.report.records import merged_labels

    gpu = "GPU kernel time on NVIDIA H200: 5 calls back to back per window, {} µs handoff subtracted"
    labels = [gpu.format(267), gpu.format(259), gpu.format(262.5), "CPU interpreter — timings are not GPU timings"]
    assert merged_labels(labels) == [gpu.format("259–267"), "CPU interpreter — timings are not GPU timings"]
    assert merged_labels([gpu.format(260)]) == [gpu.format(260)]


def test_the_report_names_a_labelled_start_and_an_unlabelled_one_not_at_all(tmp_path):
    plain = make_workspace(tmp_path / "plain")
    write_report(plain)
    assert "- Start:" not in (plain / "report.md").read_text()
    ws = make_workspace(tmp_path / "labelled")
    raw = json.loads((ws / "task.json").read_text())
    raw["baseline"] = {"filename": "baseline.py", "language": "triton", "label": "torch.compile's kernels (Inductor, torch 2.11)"}
    (ws / "task.json").write_text(json.dumps(raw))
    write_report(ws)
    assert "- Start: torch.compile's kernels (Inductor, torch 2.11)" in (ws / "report.md").read_text()
