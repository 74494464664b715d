"""The adversarial catalogue: every bad candidate in tests/adversarial/ is rejected with its status.

Each case file starts with comment headers: `# expect: STATUS`, optionally `# rule: RULE` (for
policy violations) and `# policy: off` (switch the static policy off to provoke runtime behaviour).
All run on the CPU interpreter through one Evaluator per (task, policy) pair, which must keep serving.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import pytest

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.gate import GatePolicy
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES

CASES = Path(__file__).parents[2] / "adversarial"
# The catalogue runs on the CPU interpreter in CI; KT_TEST_DEVICE=cuda runs it on a GPU machine.
DEVICE = os.environ.get("KT_TEST_DEVICE", "cpu")
SHORT_GATE = GatePolicy(min_blocks=2, max_blocks=2, confirm_blocks=0)


def parse(path: Path) -> dict[str, str]:
    headers = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(expect|rule|policy|device|why):\s*(.+)", line)
        if not m:
            break
        headers[m.group(1)] = m.group(2).strip()
    headers["task"] = path.name.split("__")[0]
    return headers


ALL_CASES = sorted(CASES.glob("*__*.py"))
# `# device: cuda` marks what only a GPU can provoke (illegal addresses, streams): run where it can happen
CASE_FILES = [p for p in ALL_CASES if parse(p).get("device", DEVICE) == DEVICE]


@cache
def evaluator(task_name: str, policy_on: bool, tmp: str, timeout: float) -> Evaluator:
    return Evaluator(
        load_task(FIXTURES / task_name), device=DEVICE, enforce_policy=policy_on, policy=SHORT_GATE,
        workdir=Path(tmp) / f"{task_name}-{policy_on}-{timeout:.0f}", timeout=timeout,
    )


@pytest.fixture(scope="module")
def workroot(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("adversarial"))


def test_catalogue_is_large_enough():
    assert len(CASE_FILES) >= 25
    statuses = {e for p in CASE_FILES for e in parse(p)["expect"].split("|")}
    assert {"incorrect", "policy_violation", "timeout", "crashed", "compile_error", "runtime_error", "tampering",
            "rejected", "sandbox_violation"} <= statuses
    assert all(parse(p)["task"] in {d.name for d in FIXTURES.iterdir()} for p in ALL_CASES)
    assert {parse(p).get("device", "any") for p in ALL_CASES} <= {"any", "cuda"}


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_bad_candidate_is_rejected_with_expected_status(path, workroot):
    h = parse(path)
    # hangs are killed sooner; everything else gets room for a loaded 2-core machine
    ev = evaluator(h["task"], h.get("policy", "on") != "off", workroot, 20.0 if h["expect"] == "timeout" else 90.0)
    result = ev.evaluate(path.read_text())
    expected = h["expect"].split("|")
    if "rejected" in expected and result.status is Status.ok:  # judged, found no faster: what it did had no effect
        assert result.verdict is not None, result.reason
    else:
        assert result.status in {Status(e) for e in expected if e != "rejected"}, f"{result.status.value}: {result.reason}"
    assert result.reason and "\n" not in result.reason
    assert not result.accepted
    if "rule" in h:
        assert result.reason.startswith(h["rule"]) or result.policy_rule == h["rule"], result.reason


@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "fresh-interpreter"])
def test_evaluator_keeps_serving_after_crash_and_hang(workroot, fork_server):
    task = load_task(FIXTURES / "vector_add")
    ev = Evaluator(task, device=DEVICE, enforce_policy=False, policy=SHORT_GATE,
                   workdir=Path(workroot) / f"serve-{fork_server}", timeout=180, fork_server=fork_server)
    crash = ev.evaluate((CASES / "vector_add__crash_segfault.py").read_text())
    assert crash.status is Status.crashed and "SIGSEGV" in crash.reason
    hang = ev.evaluate((CASES / "vector_add__host_hang.py").read_text(), timeout=15)
    assert hang.status is Status.timeout
    ok = ev.evaluate(task.baseline_source)
    assert ok.status is Status.ok, ok.reason
    assert ok.verdict is not None
    assert ok.timing_label.startswith("CPU interpreter" if DEVICE == "cpu" else "GPU kernel time")


def test_a_relative_workdir_still_works_through_the_fork_server(tmp_path, monkeypatch):
    # `make run` creates workspaces/... relative to the project; forked workers change directory first
    monkeypatch.chdir(tmp_path)
    ev = Evaluator(load_task(FIXTURES / "vector_add"), device=DEVICE, workdir=Path("relative-work"), timeout=120)
    result = ev.check(load_task(FIXTURES / "vector_add").baseline_source)
    assert result.status is Status.ok, result.reason
