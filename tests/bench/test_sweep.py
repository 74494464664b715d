"""bench/sweep end to end on the interpreter: its smoke mode runs every part and writes measured results."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PARTS = ("environment", "copy_bandwidth", "vector_add", "matmul", "torch_references", "replay", "bandwidth")


def positive(x: object) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def timed_configs(sweep: dict) -> list[dict]:
    timed = [r for r in sweep["configs"] if r["status"] != "pending"]
    assert timed, "no config was timed"
    for r in timed:
        assert r["status"] == "ok", r
        assert positive(r["candidate_s"]) and positive(r["incumbent_s"]), r
        assert all(positive(x) for x in r["candidate"] + r["incumbent"]), r
    return timed


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_sweep_smoke_on_the_interpreter(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.sweep", "--device", "cpu", "--smoke", "--budget", "240",
         "--out", str(out), "--triton-cache", str(tmp_path / "triton-cache")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    index = json.loads((out / "sweep.json").read_text())
    assert index["finished"]
    parts = {p: json.loads((out / f"{p}.json").read_text()) for p in PARTS}
    assert {p: index["parts"][p]["status"] for p in PARTS} == dict.fromkeys(PARTS, "ok")
    assert positive(parts["copy_bandwidth"]["bandwidth_bytes_per_s"])

    for name in ("vector_add", "matmul"):
        sweep = parts[name]
        assert len(timed_configs(sweep)) == sweep["size"]
        assert positive(sweep["best"]["candidate_s"]) and sweep["retime"]
        assert (out / f"best_{name}.py").read_text() == sweep["best"]["source"]

    refs = parts["torch_references"]["tasks"]
    for name, label in (("vector_add", "torch.add"), ("matmul", "torch.matmul")):
        assert positive(refs[name]["references"][label]["kernel_s"])
    assert refs["vector_add"]["references"]["torch.compile"]["status"]  # compiled or not, recorded

    for name, s in parts["replay"]["tasks"].items():
        assert s["seeds_run"] == 1 and s["outside_proposals"] == 0, (name, s)
        assert s["per_seed"][0]["evaluations_to_target"] is not None, (name, s)

    for name, f in parts["bandwidth"]["fixtures"].items():
        timed_configs(f)
        assert positive(f["best_gb_per_s"]), name

    summary = (out / "sweep_summary.md").read_text()
    assert "CPU interpreter — not GPU timings" in summary and "Search replay" in summary
