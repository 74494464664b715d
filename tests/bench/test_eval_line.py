"""bench/eval_line.py: an `eval --json` decision as one log line, and no line where there is no decision."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/eval_line.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_a_timed_decision_reads_as_name_status_times_and_reason(tmp_path: Path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"status": "accepted", "incumbent_seconds": 12.34e-6, "candidate_seconds": 10.06e-6,
                                "reason": "faster: +22.7% [+21.9%, +23.5%]"}))
    done = _run("44_Average_Pooling_1D", str(path))
    assert done.returncode == 0
    assert done.stdout == ("44_Average_Pooling_1D accepted start 12.3 us, candidate 10.1 us; "
                           "faster: +22.7% [+21.9%, +23.5%]\n")


def test_an_untimed_decision_has_no_times(tmp_path: Path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"status": "incorrect", "candidate_seconds": None, "reason": "x" * 500}))
    done = _run("t", str(path))
    assert done.stdout == "t incorrect " + "x" * 200 + "\n"


def test_an_eval_cut_off_prints_nothing_and_fails(tmp_path: Path):
    path = tmp_path / "d.json"
    path.write_text("")  # what `timeout` leaves of --json
    done = _run("t", str(path))
    assert (done.returncode, done.stdout) == (1, "")
    assert _run("t", str(tmp_path / "missing.json")).returncode == 1
