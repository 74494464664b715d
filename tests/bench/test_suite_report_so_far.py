"""bench/suite_report_so_far.py on the committed per-task results of a suite run in parts: the suite's own
summary of them, written as its report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

RESULTS = ROOT / "bench" / "results" / "2026-12-07-h100-inductor-suite-fresh" / "raw" / "results"


def test_the_tasks_scored_so_far_are_summarised_by_the_suites_own_code(tmp_path: Path):
    done = subprocess.run([sys.executable, "bench/suite_report_so_far.py", str(RESULTS), str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "suite-report.md").read_text(encoding="utf-8")
    n = len(list(RESULTS.glob("*.json")))
    assert f"Tasks: {n} from `.kt-inductor-suite/tasks`" in report
    assert "NVIDIA H100 80GB HBM3" in report  # the environment the results recorded
    # L1-9, L2-59, L2-76 and L2-86 are past torch.compile, each with its interval above 1
    assert f"**Past torch.compile: 4 of {n} (33%)" in report
    # the suite finished in its last part and wrote its own report: the same lines, its tasks in its own order
    own = (RESULTS.parent.parent / "suite" / "suite-report.md").read_text(encoding="utf-8")
    assert sorted(report.splitlines()) == sorted(own.splitlines())
    assert (tmp_path / "suite-fast_p.png").stat().st_size > 0


def test_a_folder_without_results_is_one_clear_line(tmp_path: Path):
    done = subprocess.run([sys.executable, "bench/suite_report_so_far.py", str(tmp_path), str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stderr.strip() == f"no task results (*.json) in {tmp_path}"
