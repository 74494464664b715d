"""bench/coverage_table.py: every line of a coverage run in one class, convolutions apart, and the committed
run's table as its README shows it."""

from __future__ import annotations

import subprocess
import sys

from bench.coverage_table import classify, pending_keys, ranges, read_rows, table
from tests.conftest import ROOT

RAW = ROOT / "bench" / "results" / "2026-12-07-h100-inductor-coverage-part2" / "raw"


def test_each_line_falls_in_the_class_its_words_say():
    assert classify("started", "started  12_Gemm: torch.compile's kernels (Inductor, torch 2.11)") == "started"
    assert classify("kept", "kept  54_conv: torch.compile fixed dimension 0 of conv2d_weight at 64") == "fixed"
    assert classify("kept", "kept  97_Attention: extern call torch.ops.aten.x stays a library call") == "extern"
    assert classify("kept", "kept  4_Matrix: the rewritten start is incorrect (shape main)") == "incorrect"
    # the driver's word for memory is memory, not a failure of torch.compile
    assert classify("kept", "kept  35_GroupNorm_: torch.compile failed on the reference (AcceleratorError: "
                            "CUDA error: out of memory)") == "memory"
    assert classify("kept", "kept  25_Conv2d: torch.compile failed on the reference (InductorError)") == "compile"
    assert classify("not imported", "kernel-tui: error: cannot express axis 2") == "not imported"
    assert classify("timeout", "over 240 s") == "timeout"
    assert classify("refused", "Traceback …") == "other"


def test_consecutive_problem_numbers_read_as_ranges():
    assert ranges([5, 1, 2, 3, 9, 10]) == "1–3, 5, 9–10"
    assert ranges([]) == ""


def test_a_rerun_replaces_a_problems_earlier_line_and_pending_ones_count_once():
    rows = [("level1/19_ReLU", "kept", "does not fit in device memory"), ("level1/19_ReLU", "started", "started"),
            ("level1/54_conv_standard_2D", "kept", "fixed dimension 0 of conv2d_weight")]
    text = table(rows, pending=["level1/19_ReLU", "level1/20_LeakyReLU"])
    assert "| 1 | **started**, correct on the GPU at every task shape | 0 | 1 | 19 |" in text
    assert "| 1 | queued to run alone (GPU memory), not reached | 0 | 1 | 20 |" in text
    assert "memory |" not in text.replace("(GPU memory)", "")
    assert "- level1: **1 of 3 started (33%)**; 1 have a convolution, so at most 2 of 3 (67%) can" in text


def test_the_committed_run_is_tabled_as_its_readme_shows():
    done = subprocess.run([sys.executable, "bench/coverage_table.py", str(RAW / "coverage.tsv"),
                           "--pending", str(RAW / "alone.txt")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    problems = {key for key, _, _ in read_rows(RAW / "coverage.tsv")} | set(pending_keys(RAW / "alone.txt"))
    counted = sum(int(row.split(" | ")[2]) + int(row.split(" | ")[3]) for row in done.stdout.splitlines()
                  if row.startswith(("| 1 ", "| 2 ")))
    assert counted == len(problems) == 200  # every problem of both levels, once
    assert "- level2: **34 of 100 started (34%)**" in done.stdout
    readme = (RAW.parent / "README.md").read_text(encoding="utf-8")
    assert done.stdout in readme  # the README shows the table this code makes of the committed run
