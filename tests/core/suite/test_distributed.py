"""Parallel suites: tasks one per device (CPU slots here), and each task on a Dask worker.

The small suite of test_suite (one correct task, one wrong; replayed candidates on the interpreter) is run
one task at a time, with `--gpus 2` stopped part way and resumed, and on a two-worker Dask LocalCluster;
every way must leave the same per-task statuses, verdicts and counts.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from kernel_tui.core import events as ev
from kernel_tui.core.suite.distributed import PROBE, _collect, unreachable
from kernel_tui.core.suite.models import SuiteResult, TaskResult
from kernel_tui.core.suite.run import run_suite
from kernel_tui.core.suite.runner import SuiteError, SuiteRunner, check_options, make_pool
from kernel_tui.core.workspace import Workspace
from tests.core.suite.test_suite import BAD, GOOD, make_suite, options

# alone: each run's verdict is a gate decision on interpreter timings, and a second test process loading the
# two cores of CI made one noisy block turn a +62% candidate into "not significant" (2 of 3 CI runs, 2026-12-01)
pytestmark = [pytest.mark.slow, pytest.mark.alone, pytest.mark.xdist_group("suite_parallel")]


def verdicts(suite: SuiteResult) -> list[tuple]:
    """What must not depend on how the tasks were spread: per task its outcome and every round's verdict."""
    rows = []
    for t in suite.tasks:
        lines = Workspace.open(Path(t.workspace)).trajectory()
        rows.append((t.task, t.status, t.complete, t.rounds, t.accepted, t.best_is_baseline, t.scored_round,
                     t.reason if t.status == "failed" else "", t.eager is not None and t.eager.available,
                     [(ln.round, ln.status, ln.accepted) for ln in lines]))
    return rows


def undecided(*results: SuiteResult) -> bool:
    """Whether a gate in any of these runs could not tell (its interval spans zero). On interpreter timings
    under CI's load a +59% candidate was once "not significant" in one run and accepted in the other; what
    follows from the verdict (accepted, the scored round, fast_p) is then compared only where both runs
    decided, and statuses, rounds and correctness always."""
    return any("not significant" in ln.reason for suite in results for t in suite.tasks
               for ln in Workspace.open(Path(t.workspace)).trajectory())


def same_outcome(a: SuiteResult, b: SuiteResult) -> bool:
    if not undecided(a, b):
        return verdicts(a) == verdicts(b) and counts(a) == counts(b)
    def keep(rows):  # task, rounds, eager measured, each round's number and status: none depend on timing
        return [(r[0], r[2], r[3], r[8], [(n, status) for n, status, _ in r[9]]) for r in rows]
    return keep(verdicts(a)) == keep(verdicts(b))


def reasons(*results: SuiteResult) -> list[str]:
    """Every round's reason, to say why two runs' verdicts differ (CPU timings under load can)."""
    return [f"{t.task} round {ln.round}: {ln.status} {ln.accepted} {ln.reason}" for suite in results
            for t in suite.tasks for ln in Workspace.open(Path(t.workspace)).trajectory()]


def counts(suite: SuiteResult) -> list[tuple]:
    return [(s.side, s.total, s.unmeasured, s.fast_p[0].plain) for s in suite.summaries]


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel")
    tasks, cands = make_suite(root)
    sequential = run_suite(options(root, tasks, cands, out=root / "sequential"))

    opts = options(root, tasks, cands, out=root / "parallel", gpus="2")
    cancel = threading.Event()
    stopped = run_suite(opts, cancel=cancel, on_event=lambda task, e: isinstance(e, ev.ProposalEvent) and cancel.set())
    pending = {t: len(Workspace.open(opts.out / "workspaces" / t).pending()) for t in (GOOD, BAD)
               if Workspace.is_workspace(opts.out / "workspaces" / t)}
    lines: list[str] = []
    lock = threading.Lock()

    def record(task: str, e: ev.Event) -> None:
        with lock:
            lines.append(f"{task}: {e.text}")

    resumed = run_suite(opts, on_event=record)
    return dict(sequential=sequential, stopped=stopped, pending=pending, resumed=resumed, lines=lines, opts=opts,
                root=root, tasks=tasks, cands=cands)


def test_a_parallel_suite_stops_and_resumes_to_the_sequential_results(suites):
    sequential, resumed = suites["sequential"], suites["resumed"]
    assert suites["stopped"] is None and sum(suites["pending"].values()) >= 1  # a round committed, not judged
    assert sequential is not None and resumed is not None
    assert [t.task for t in resumed.tasks] == [GOOD, BAD]  # task order, not the order they ended in
    assert same_outcome(resumed, sequential), reasons(resumed, sequential)
    saved = SuiteResult.model_validate_json((suites["opts"].out / "suite.json").read_text())
    assert saved.tasks == resumed.tasks


def test_progress_lines_name_the_device_and_each_task_writes_only_its_own_results(suites):
    lines = suites["lines"]
    assert any(line.startswith("suite: 2 tasks in parallel on cpu:0, cpu:1") for line in lines)
    starts = [line for line in lines if " on cpu:" in line and line.split(": ", 1)[1].startswith("task ")]
    assert {line.split(":", 1)[0] for line in starts} == {GOOD, BAD}
    results = sorted(p.name for p in (suites["opts"].out / "results").iterdir())
    assert results == sorted([f"{GOOD}.json", f"{BAD}.json"])  # no .tmp left behind by two writers
    for name in (GOOD, BAD):
        assert TaskResult.model_validate_json((suites["opts"].out / "results" / f"{name}.json").read_text()).task == name


def test_a_dask_cluster_runs_the_same_suite(suites):
    from distributed import LocalCluster

    root = suites["root"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, resources={"GPU": 1},
                      dashboard_address=None, silence_logs=logging.ERROR, memory_limit=0) as cluster:
        lines: list[str] = []
        opts = options(root, suites["tasks"], suites["cands"], out=root / "dask", scheduler=cluster.scheduler_address)
        suite = run_suite(opts, on_event=lambda task, e: lines.append(f"{task}: {e.text}"))
    assert suite is not None
    assert [t.task for t in suite.tasks] == [GOOD, BAD]
    assert same_outcome(suite, suites["sequential"]), reasons(suite, suites["sequential"])
    assert any(f"{GOOD}: task 1/2: {GOOD} on worker tcp://" in line for line in lines)  # lines come back from workers
    assert (opts.out / "suite-report.md").is_file() and (opts.out / "results" / f"{GOOD}.json").is_file()
    assert not list(opts.out.glob(f"{PROBE}*"))


# --- bad input and failures, without running tasks ---------------------------------------------------


def test_gpus_and_scheduler_are_checked_before_anything_runs(tmp_path):
    tasks, cands = make_suite(tmp_path)
    base = options(tmp_path, tasks, cands)
    with pytest.raises(SuiteError, match="exclude each other"):
        check_options(replace(base, gpus="2", scheduler="tcp://h:8786"))
    with pytest.raises(SuiteError, match="at least 1"):
        check_options(replace(base, gpus="0"))
    assert make_pool(replace(base, gpus="3")).devices == ["cpu:0", "cpu:1", "cpu:2"]
    assert make_pool(replace(base, gpus="0,1")).devices == ["cpu:0", "cpu:1"]  # on the CPU: one slot per id
    assert not (tmp_path / "out").exists()


def test_an_unreachable_out_directory_is_one_line(tmp_path):
    out, tasks = tmp_path / "out", tmp_path / "tasks"
    tasks.mkdir()
    assert unreachable(str(tmp_path / "nowhere"), str(tasks), None).endswith("nowhere: no such directory here")
    out.mkdir()
    assert "not the client's" in unreachable(str(out), str(tasks), None, probe=f"{PROBE}x")
    (out / f"{PROBE}x").write_text("")
    assert unreachable(str(out), str(tasks), None, probe=f"{PROBE}x") == ""


def test_a_task_that_fails_on_the_cluster_is_that_tasks_failure(tmp_path):
    tasks, cands = make_suite(tmp_path)
    runner = SuiteRunner(options(tmp_path, tasks, cands))

    class Failed:
        def result(self):
            raise RuntimeError("worker exploded\nwith a traceback")

    result = _collect(runner, Failed(), GOOD)
    assert result is not None and result.status == "failed" and not result.complete
    assert result.reason == "on the cluster: RuntimeError: worker exploded with a traceback"
    assert (runner.options.out / "results" / f"{GOOD}.json").is_file()
