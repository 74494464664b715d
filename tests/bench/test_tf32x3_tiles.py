"""bench/tf32x3_tiles.py: its variants are the committed Inductor starts with only the swept knobs changed, and
its smoke mode runs them on the interpreter, correct, and resumes without running a variant twice; its
compile-only mode reports registers, shared memory and the PTX's products without a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import tf32x3_tiles


@pytest.mark.parametrize("case", sorted(tf32x3_tiles.CASES))
def test_a_variant_changes_the_swept_knobs_and_nothing_else(case):
    source = (tf32x3_tiles.STARTS / tf32x3_tiles.CASES[case].start).read_text(encoding="utf-8")
    own = tf32x3_tiles.start_variant(source)
    assert own == tf32x3_tiles.Variant("ieee", (128, 128, 32), 4, 3)  # what Inductor's max-autotune chose
    assert tf32x3_tiles.rewritten(source, own) == source
    v = tf32x3_tiles.Variant("tf32x3", (64, 256, 32), 8, 4)
    new = tf32x3_tiles.rewritten(source, v)
    assert tf32x3_tiles.start_variant(new) == v
    changed = [(a, b) for a, b in zip(source.splitlines(), new.splitlines(), strict=True) if a != b]
    assert len(changed) == 4  # precision, two tile sizes, the launch's keywords
    with pytest.raises(ValueError, match="matched 0 times"):
        tf32x3_tiles.rewritten(source.replace("BLOCK_K_0 = 32", "BLOCK_K_0 = K_STEP"), v)


def test_the_smoke_run_is_correct_and_resumes(tmp_path: Path):
    out = tmp_path / "sweep.jsonl"
    command = [sys.executable, "bench/tf32x3_tiles.py", str(out), "--smoke", "--case", "l1_17"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["variant"] for r in rows] == ["torch", "ieee 128x128x32 w4 s3", "tf32x3 32x32x32 w4 s3"]
    assert all(r["device"] == "interpreter" and r["max_error"] < 1e-5 for r in rows)
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and again.stdout == ""
    assert len(out.read_text().splitlines()) == 3


def test_the_compile_only_run_reports_what_the_compiler_made_without_a_gpu(tmp_path: Path):
    # Triton compiles for sm_90 with the ptxas its wheel ships; the first row is Inductor's own start, plain fp32
    out = tmp_path / "facts.jsonl"
    command = [sys.executable, "bench/tf32x3_tiles.py", str(out), "--compile-only", "--case", "l1_17", "--limit", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    first = json.loads(out.read_text().splitlines()[0])
    assert first["variant"] == "ieee 128x128x32 w4 s3" and first["device"] == "sm_90, compiled on the CPU"
    assert "error" not in first and "ms" not in first
    assert 0 < first["registers"] <= 255 and first["shared_bytes"] > 0
    assert first["wgmma"] == 0 and first["fma"] > 0  # ieee: no tensor cores
