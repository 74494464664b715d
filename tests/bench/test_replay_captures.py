"""bench/replay_captures.py: the starts a coverage run recorded on a GPU, found in its committed files (a later
run's line replacing an earlier one's), and a recorded GPU capture replayed through today's rewrite and every
move of the search, each result held to the policy."""

from __future__ import annotations

import json

import pytest

from bench.replay_captures import replay_task, started
from tests.conftest import ROOT

RESULTS = ROOT / "bench" / "results"
RUNS = [RESULTS / "2026-12-06-h100-warp-specialize-coverage" / "raw",
        RESULTS / "2026-12-07-h100-inductor-coverage-part2" / "raw"]
GPU_DATA = ROOT / "tests" / "data" / "inductor_gpu"


def test_the_started_problems_of_the_committed_runs_each_with_its_capture():
    found = started(RUNS)
    assert len(found) == 33 + 34  # the README's counts of levels 1 and 2
    assert "level1/43_Max_Pooling_3D" in found  # refused in the first run, started in the second
    assert all(c["code"] and c["device_name"].startswith("NVIDIA") for c in found.values())
    assert not started(RUNS[:1]).get("level1/43_Max_Pooling_3D")


@pytest.mark.parametrize("name", sorted(p.name for p in GPU_DATA.iterdir() if (p / "capture.json").is_file()))
def test_a_recorded_gpu_capture_rewrites_and_takes_every_move_within_the_policy(name):
    captured = json.loads((GPU_DATA / name / "capture.json").read_text(encoding="utf-8"))
    line = replay_task(GPU_DATA / name, captured, name).split("\t")
    assert line[1] == "policy ok", line
    assert int(line[2].split()[0]) > 0  # the search has something to move
    assert line[3] == "every move clean", line
