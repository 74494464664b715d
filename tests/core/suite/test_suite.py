"""`kernel-tui suite`: tasks run through the Session loop, resumed after a stop, scored against PyTorch.

The end-to-end tests run a two-task suite on the CPU with replayed candidates (one correct, one wrong),
stopped part way through the first task and resumed; the scoring is checked against counts made by hand
from the recorded speedups, and against synthetic results where every number is known.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from kernel_tui.cli.suite import add_parser
from kernel_tui.core import events as ev
from kernel_tui.core.compare import Comparison, RunSummary
from kernel_tui.core.evaluator.labels import INTERPRETER_LABEL
from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.records import RunSummary as RunRecord
from kernel_tui.core.suite import report as suite_report
from kernel_tui.core.suite import run as suite_run
from kernel_tui.core.suite.models import THRESHOLDS, SideScore, SuiteResult, TaskResult
from kernel_tui.core.suite.run import run_suite
from kernel_tui.core.suite.runner import SuiteError, SuiteOptions, SuiteRunner, check_options, fastest_correct, find_tasks
from kernel_tui.core.suite.score import (
    bootstrap_interval,
    describe_score,
    fast_p,
    log_t_interval,
    measured,
    side_score,
    summarize,
    summarize_inductor,
)
from kernel_tui.core.suite.sources import pytorch_source
from kernel_tui.core.task import load_task
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES

CANDIDATES = Path(__file__).parents[2] / "candidates" / "vector_add"
GOOD, BAD = "add", "add_wrong"


EAGER_ADD = "import torch\n\n\ndef launch(x, y, output, n_elements):\n    torch.add(x, y, out=output)\n"


def small_task(src: Path, dest: Path, name: str, *, pytorch: bool = False) -> None:
    """A copy of a fixture with one interpreter shape and one seed: every worker stays short. `pytorch`:
    it starts from PyTorch eager, so a run that accepts nothing has no Triton kernel to score."""
    shutil.copytree(src, dest)
    spec = json.loads((dest / "task.json").read_text())
    spec["name"] = name
    if pytorch:
        spec["baseline"] = {"filename": "baseline.py", "language": "pytorch"}
        (dest / "baseline.py").write_text(EAGER_ADD)
    spec["correctness"]["seeds"] = [17]
    spec["correctness"]["shapes"] = [s for s in spec["correctness"]["shapes"] if s["name"] == "small"]
    (dest / "task.json").write_text(json.dumps(spec, indent=1))


def make_suite(root: Path) -> tuple[Path, Path]:
    tasks, cands = root / "tasks", root / "candidates"
    for name, candidate in ((GOOD, "01_block_1024.py"), (BAD, "04_off_by_one.py")):
        small_task(FIXTURES / "vector_add", tasks / name, name, pytorch=name == BAD)
        (cands / name).mkdir(parents=True)
        shutil.copy(CANDIDATES / candidate, cands / name / candidate)
    (tasks / "notes").mkdir()  # a folder without task.json is not a task
    return tasks, cands


def options(root: Path, tasks: Path, cands: Path, **kw) -> SuiteOptions:
    base: dict = dict(tasks_dir=tasks, out=root / "out", proposer="replay", max_steps=1, device="cpu", runs=2,
                      candidates=cands)
    return SuiteOptions(**{**base, **kw})


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The suite stopped at the first task's first proposal (its round committed, not judged), resumed to
    the end, then run a third time. Returns what each stage left."""
    root = tmp_path_factory.mktemp("suite")
    tasks, cands = make_suite(root)
    opts = options(root, tasks, cands)
    cancel = threading.Event()

    def stop_at_first_proposal(task: str, e: ev.Event) -> None:
        if isinstance(e, ev.ProposalEvent):
            cancel.set()

    stopped = run_suite(opts, cancel=cancel, on_event=stop_at_first_proposal)
    ws_path = opts.out / "workspaces" / GOOD
    ws = Workspace.open(ws_path)
    pending = [(r, c.hexsha) for r, c in ws.pending()]
    after_stop = {"result": stopped, "pending": pending, "results": sorted(p.name for p in (opts.out / "results").glob("*.json"))
                  if (opts.out / "results").exists() else [], "suite_json": (opts.out / "suite.json").exists()}

    lines: list[str] = []
    suite = run_suite(opts, on_event=lambda task, e: lines.append(f"{task}: {e.text}"))
    recorded = {p.name: p.read_text() for p in (opts.out / "results").glob("*.json")}
    trajectories = {t: (opts.out / "workspaces" / t / "trajectory.jsonl").read_text() for t in (GOOD, BAD)}

    again_lines: list[str] = []
    again = run_suite(opts, on_event=lambda task, e: again_lines.append(f"{task}: {e.text}"))
    return dict(opts=opts, after_stop=after_stop, suite=suite, lines=lines, recorded=recorded,
                trajectories=trajectories, again=again, again_lines=again_lines)


def test_a_stopped_suite_keeps_the_committed_round_and_writes_no_scores(ran):
    stop = ran["after_stop"]
    assert stop["result"] is None
    assert [r for r, _ in stop["pending"]] == [1]  # committed before the stop, judged on resume
    assert stop["results"] == [] and not stop["suite_json"]


def test_the_resumed_suite_judges_the_pending_round_instead_of_proposing_again(ran):
    ws = Workspace.open(ran["opts"].out / "workspaces" / GOOD)
    lines = ws.trajectory()
    assert [ln.round for ln in lines] == [1]
    assert lines[0].commit == ran["after_stop"]["pending"][0][1]
    # judged: checked and timed through the gate (whether interpreter timings under load accept it is not the point)
    assert lines[0].status == "ok" and lines[0].reason.startswith(("accepted", "rejected")), lines[0].reason
    assert any("resuming" in line for line in ran["lines"] if line.startswith(f"{GOOD}:"))


def test_every_task_is_scored_and_failures_count_in_the_total(ran):
    suite: SuiteResult = ran["suite"]
    by = {t.task: t for t in suite.tasks}
    assert list(by) == [GOOD, BAD]  # "notes" holds no task.json
    assert by[GOOD].correct and by[GOOD].eager is not None and by[GOOD].eager.available
    assert by[GOOD].eager.speedup is not None and by[GOOD].eager.speedup > 0
    assert not by[BAD].correct and by[BAD].best_is_baseline and by[BAD].accepted == 0
    assert all(t.complete for t in suite.tasks)
    # torch.compile cannot run in the CPU sandbox: recorded as unavailable with a reason, the suite goes on
    comp = by[GOOD].compile
    assert comp is not None and (comp.available or comp.reason)
    eager = suite.summary("eager")
    assert eager.total == 2
    # fast_p by hand from the recorded speedups, failed tasks in the denominator
    for f in eager.fast_p:
        by_hand = sum(1 for t in suite.tasks if t.correct and t.eager and t.eager.speedup and t.eager.speedup > f.p)
        assert f.plain == pytest.approx(by_hand / len(suite.tasks))
    assert eager.fast_p[0].p == 0 and eager.fast_p[0].plain == pytest.approx(0.5)
    assert eager.geomean == pytest.approx(by[GOOD].eager.speedup)
    # what each task started from, and the run's own re-test of that start against the scored best
    assert (by[GOOD].start, by[BAD].start) == ("", "PyTorch eager") and not by[GOOD].from_inductor
    summary = RunRecord.model_validate_json((ran["opts"].out / "workspaces" / GOOD / "run_summary.json").read_text())
    assert by[GOOD].over_start == summary.final_speedup and summary.final_speedup is not None
    assert suite.inductor is None  # no task started from torch.compile's kernels: no such section


def test_suite_json_and_the_report_say_how_it_was_measured(ran):
    out = ran["opts"].out
    saved = SuiteResult.model_validate_json((out / "suite.json").read_text())
    assert saved == ran["again"]  # the last run wrote it
    assert saved.tasks == ran["suite"].tasks
    text = (out / "suite-report.md").read_text()
    assert INTERPRETER_LABEL in text and "NOT GPU TIMINGS" in text
    assert saved.timing_labels == [INTERPRETER_LABEL]
    assert f"torch {torch.__version__}" in text and "bootstrap of S over the timing blocks of all runs" in text
    assert "| 0 | 0.50 (1) |" in text
    assert (out / suite_report.FIGURE).read_bytes().startswith(b"\x89PNG")
    assert (out / "workspaces" / GOOD / "report.md").exists()  # each workspace has its own run report


def test_finished_tasks_are_not_run_again(ran):
    again: SuiteResult = ran["again"]
    out = ran["opts"].out
    assert {p.name: p.read_text() for p in (out / "results").glob("*.json")} == ran["recorded"]
    for t in (GOOD, BAD):
        assert (out / "workspaces" / t / "trajectory.jsonl").read_text() == ran["trajectories"][t]
    assert [t.time for t in again.tasks] == [t.time for t in ran["suite"].tasks]
    assert not any("scoring" in line for line in ran["again_lines"])
    o = ran["opts"]
    assert SuiteRunner(o)._prior(GOOD) is not None
    from dataclasses import replace

    assert SuiteRunner(replace(o, max_steps=2))._prior(GOOD) is None  # a larger budget resumes the workspace
    assert SuiteRunner(replace(o, runs=3))._prior(GOOD) is None  # and other runs score it again


def test_a_half_made_workspace_is_moved_aside_not_deleted(tmp_path):
    tasks, cands = make_suite(tmp_path)
    o = options(tmp_path, tasks, cands)
    half = o.out / "workspaces" / GOOD
    half.mkdir(parents=True)
    (half / "task.json").write_text("{}")  # killed while the workspace was being created
    ws = SuiteRunner(o)._open(tasks / GOOD)
    assert Workspace.is_workspace(ws.root) and ws.root == half
    aside = [p for p in half.parent.iterdir() if p.name.startswith(f"{GOOD}.incomplete-")]
    assert len(aside) == 1 and (aside[0] / "task.json").read_text() == "{}"


def test_the_command_prints_the_scores_of_a_finished_suite(ran, capsys):
    import argparse

    from kernel_tui.cli.suite import main

    o = ran["opts"]
    args = argparse.Namespace(tasks_dir=str(o.tasks_dir), out=str(o.out), proposer="replay", max_steps=1, device="cpu",
                              runs=2, candidates=str(o.candidates))
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "suite done: 1 of 2 tasks correct" in printed
    assert "vs eager: fast_1 = 0.00 (strict 0.00) of 2 tasks" in printed or "vs eager: fast_1 = 0.50" in printed
    assert str(o.out / "suite-report.md") in printed


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_is_one_line_before_anything_is_created(tmp_path):
    tasks, cands = make_suite(tmp_path)
    with pytest.raises(SuiteError, match="--runs must be at least 2"):
        check_options(options(tmp_path, tasks, cands, runs=1))
    with pytest.raises(SuiteError, match="needs --candidates"):
        check_options(options(tmp_path, tasks, cands, candidates=None))
    shutil.rmtree(cands / BAD)
    with pytest.raises(SuiteError, match=f"no candidate folder for task\\(s\\) {BAD}"):
        check_options(options(tmp_path, tasks, cands))
    with pytest.raises(SuiteError, match="holds no task directories"):
        check_options(options(tmp_path, cands, cands))
    assert not (tmp_path / "out").exists()


def test_tasks_run_in_name_order_with_numbers_by_value(tmp_path):
    for name in ("12_Gemm", "1_Square", "9_Tall", "2_Standard", "notes"):
        (tmp_path / name).mkdir()
        if name != "notes":
            (tmp_path / name / "task.json").write_text("{}")
    assert [p.name for p in find_tasks(tmp_path)] == ["1_Square", "2_Standard", "9_Tall", "12_Gemm"]


def test_the_command_line(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["suite", "T", "--proposer", "replay", "--max-steps", "3", "--runs", "4", "--device", "cpu"])
    assert (args.tasks_dir, args.max_steps, args.runs, args.device, args.out) == ("T", 3, 4, "cpu", None)
    assert args.evaluates
    with pytest.raises(SystemExit):
        parser.parse_args(["suite", "T", "--max-steps", "3"])  # --proposer is required


# --- the PyTorch sides ------------------------------------------------------------------------------


def test_the_eager_source_returns_the_references_results_and_writes_nothing():
    task = load_task(FIXTURES / "vector_add")
    namespace: dict = {"__name__": "kt_eager"}
    exec(compile(pytorch_source(task, "eager"), "eager.py", "exec"), namespace)
    x, y = torch.randn(5, 7, dtype=torch.float16), torch.randn(5, 7, dtype=torch.float16)
    out = torch.full_like(x, float("nan"))
    result = namespace["launch"](x, y, out, x.numel())
    assert torch.equal(result, (x.float() + y.float()).to(torch.float16))
    assert out.isnan().all()  # the evaluator copies it, after the timed region
    compiled = pytorch_source(task, "compile")
    assert "torch.compile(_kt_reference)" in compiled and "TORCHINDUCTOR_COMPILE_THREADS" in compiled
    compile(compiled, "compile.py", "exec")


def test_the_compile_side_never_runs_nvcc(monkeypatch):
    """Inductor's repro text runs `nvcc --version` and catches only a missing nvcc; the sandbox's refusal
    failed every compile on a GPU. The compile side replaces that text before it compiles."""
    import torch._dynamo.repro.after_aot as after_aot

    monkeypatch.setattr(after_aot, "_cuda_system_info_comment", after_aot._cuda_system_info_comment)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "unused")  # the source sets these for its own process
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    namespace: dict = {"__name__": "kt_compile"}
    exec(compile(pytorch_source(load_task(FIXTURES / "vector_add"), "compile"), "compile.py", "exec"), namespace)
    comment = after_aot._cuda_system_info_comment()
    assert comment.startswith("# CUDA toolkit version not queried") and comment.endswith("\n")


def test_the_compile_sides_inductor_cache_outlives_its_process(monkeypatch, tmp_path):
    """Inductor's caches go beside the side's own Triton cache (kept across the scoring's fresh processes, and
    writable by that side alone), not into the process's fresh folder where each process compiled anew."""
    import os

    import torch._dynamo.repro.after_aot as after_aot

    monkeypatch.setattr(after_aot, "_cuda_system_info_comment", after_aot._cuda_system_info_comment)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "set")  # recorded, so that the source's own setting is undone
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "incumbent-0123"))
    namespace: dict = {"__name__": "kt_compile"}
    exec(compile(pytorch_source(load_task(FIXTURES / "vector_add"), "compile"), "compile.py", "exec"), namespace)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "incumbent-0123" / "inductor")


# --- scoring, with every number known ----------------------------------------------------------------


def comparison(inc: list[float], cand: list[float], status: Status = Status.ok) -> Comparison:
    runs = [RunSummary(run=i, incumbent_median=a, candidate_median=b, median_paired_improvement=0.0, method="graph")
            for i, (a, b) in enumerate(zip(inc, cand))]
    speedup = (sorted(inc)[len(inc) // 2] / sorted(cand)[len(cand) // 2]) if status is Status.ok else None
    return Comparison(status=status, reason="r", device="cuda", runs=runs, speedup=speedup,
                      timing_label="GPU kernel time on X: CUDA graph replay over 4 rotating input sets")


def score(speedup: float, low: float | None, side="eager") -> SideScore:
    return SideScore(side=side, available=True, speedup=speedup, ci_low=low, ci_high=speedup * 1.1)


def result(task: str, eager: SideScore | None, comp: SideScore | None = None, solved: bool = True) -> TaskResult:
    return TaskResult(task=task, status="solved" if solved else "failed", complete=True, device="cuda", runs=5,
                      max_steps=3, proposer="search", eager=eager, compile=comp)


def test_interval_on_log_ratios():
    assert log_t_interval([3.0]) is None
    assert log_t_interval([2.0, 2.0]) == pytest.approx((2.0, 2.0))
    low, high = log_t_interval([1.0, 4.0])
    assert low * high == pytest.approx(4.0) and low < 1.0 and high > 4.0  # symmetric around log 2, t(1 df) wide
    from scipy import stats

    logs = [math.log(r) for r in (1.1, 1.3, 1.2, 1.25)]
    sem = stats.sem(logs)
    want = stats.t.interval(0.95, 3, loc=sum(logs) / 4, scale=sem)
    assert log_t_interval([1.1, 1.3, 1.2, 1.25]) == pytest.approx(tuple(math.exp(v) for v in want))


def runs_with(process_sd: float, pair_sd: float, rng, n_runs: int = 5, pairs: int = 25, true_s: float = 2.0):
    """Runs of paired samples: the PyTorch side true_s times slower; each run (process) has an offset of its own."""
    out = []
    for i in range(n_runs):
        offset = rng.normal(0.0, process_sd)
        kernel = 1e-3 * np.exp(offset + rng.normal(0.0, pair_sd, pairs))
        torch_side = true_s * 1e-3 * np.exp(rng.normal(0.0, pair_sd, pairs))
        out.append(RunSummary(run=i, incumbent_median=float(np.median(torch_side)),
                              candidate_median=float(np.median(kernel)), median_paired_improvement=0.0,
                              method="window", incumbent=list(torch_side), candidate=list(kernel)))
    return out


def test_the_bootstrap_interval_holds_s_and_widens_with_the_process_to_process_spread():
    rng = np.random.default_rng(3)
    assert bootstrap_interval(runs_with(0.01, 0.01, rng, n_runs=1)) is None
    quiet = runs_with(0.0, 0.005, rng)
    noisy = runs_with(0.05, 0.005, rng)  # the same pairs' noise, processes that differ by ~5%
    for runs in (quiet, noisy):
        s = statistics.median(r.incumbent_median for r in runs) / statistics.median(r.candidate_median for r in runs)
        low, high = bootstrap_interval(runs, resamples=1000)
        assert low <= s <= high
    q, n = bootstrap_interval(quiet, resamples=1000), bootstrap_interval(noisy, resamples=1000)
    assert (n[1] - n[0]) > 3 * (q[1] - q[0])
    # same samples, same seed: the interval is reproducible when a suite is scored again
    assert bootstrap_interval(noisy, resamples=1000) == n


def test_the_bootstrap_interval_covers_the_true_s_about_as_often_as_it_says():
    """Five processes with a process effect twice the pairs' noise (as measured on an H200): the 95%
    interval covers the true S in most draws, where a t-interval over 3 runs was never narrower than S's
    own spread and a flat bootstrap over pairs would miss most of the time."""
    rng = np.random.default_rng(11)
    trials = 120
    covered = sum(lo <= 2.0 <= hi for lo, hi in (bootstrap_interval(runs_with(0.004, 0.002, rng), resamples=600)
                                                for _ in range(trials)))
    assert covered / trials >= 0.8, covered


def test_side_score_from_a_comparison():
    s = side_score("eager", comparison([2.0, 2.2, 2.1], [1.0, 1.0, 1.0]))
    assert s.available and s.speedup == pytest.approx(2.1)
    assert s.run_ratios == pytest.approx([2.0, 2.2, 2.1])
    assert s.ci_low is not None and s.ci_low < 2.1 < s.ci_high
    failed = side_score("compile", comparison([1.0], [1.0], Status.runtime_error))
    assert not failed.available and failed.reason.startswith("runtime_error")


def test_fast_p_counts_failed_tasks_and_strict_needs_the_lower_bound():
    results = [
        result("a", score(1.2, 1.1)),
        result("b", score(0.9, 0.7)),
        result("c", None, solved=False),
        result("d", score(15.0, 12.0)),
    ]
    s = summarize(results, "eager")
    got = {f.p: (f.plain_count, f.strict_count) for f in s.fast_p}
    assert got == {0.0: (3, 3), 0.5: (3, 3), 0.8: (3, 2), 1.0: (2, 2), 1.5: (1, 1), 2.0: (1, 1)}
    assert s.total == 4 and s.fast_p[3].plain == 0.5
    assert s.geomean == pytest.approx((1.2 * 0.9 * 15.0) ** (1 / 3)) and s.geomean_over == 3
    assert s.flagged == ["d"]
    assert [f.p for f in s.fast_p] == list(THRESHOLDS)


def test_an_unmeasured_compile_side_counts_as_not_faster_over_all_tasks():
    unavailable = SideScore(side="compile", available=False, reason="no compiler")
    results = [result("a", score(2.0, 1.5), score(1.2, 1.1, "compile")), result("b", score(3.0, 2.5), unavailable),
               result("c", None, solved=False)]
    s = summarize(results, "compile")
    assert s.total == 3 and s.unmeasured == ["b"] and s.available  # KernelBench's denominator: every task
    assert s.fast_p[3].plain_count == 1 and s.fast_p[3].plain == pytest.approx(1 / 3)
    assert s.geomean_over == 1  # the geometric mean is over what was measured, and says so
    none = summarize([result("b", score(3.0, 2.5), unavailable)], "compile")
    assert not none.available  # no task measured at all: no fast_p, rather than a 0 that reads as measured
    values, _ = measured(results, "compile")
    assert fast_p(values, 1.0).plain == pytest.approx(1 / 3)


def test_a_kernel_that_fails_against_one_side_counts_there_as_not_fast():
    # correct in its own run, incorrect (a race, say) in the torch.compile comparison: the kernel's failure
    wrong = side_score("compile", comparison([1.0], [1.0], Status.incorrect))
    assert not wrong.available and wrong.kernel_failed
    crashed_kernel = side_score("compile", comparison([1.0], [1.0], Status.runtime_error))
    assert crashed_kernel.kernel_failed
    # the PyTorch side's own launch failing names itself: not the kernel's fault, left out
    no_compiler = side_score("compile", comparison([1.0], [1.0], Status.runtime_error).model_copy(
        update={"reason": "run 1: during timing: RuntimeError: torch.compile failed: InductorError: no compiler"}))
    assert not no_compiler.kernel_failed
    results = [result("a", score(2.0, 1.5), score(1.2, 1.1, "compile")), result("b", score(3.0, 2.5), wrong),
               result("c", score(3.0, 2.5), no_compiler)]
    s = summarize(results, "compile")
    assert s.total == 3 and s.unmeasured == ["c"]  # b and c stay in the denominator, as not fast
    assert s.fast_p[3].plain_count == 1 and s.fast_p[3].plain == pytest.approx(1 / 3)


def test_a_recorded_result_of_another_proposer_is_not_taken_as_this_suites(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    runner = SuiteRunner(SuiteOptions(tasks_dir=tasks, out=tmp_path / "out", proposer="search", max_steps=3,
                                      device="cuda", runs=5))
    ws = Workspace.create(FIXTURES / "vector_add", path=runner.workspace_path("a"))
    recorded = result("a", score(2.0, 1.5)).model_copy(update={"best_commit": ws.best.hexsha})
    runner.results_path("a").parent.mkdir(parents=True)
    runner.results_path("a").write_text(recorded.model_dump_json())
    assert runner._prior("a") == recorded  # final for these options, and the workspace has not moved on
    runner.results_path("a").write_text(recorded.model_copy(update={"proposer": "replay"}).model_dump_json())
    assert runner._prior("a") is None


def test_a_suite_into_a_folder_another_proposer_ran_is_refused_in_one_line(tmp_path):
    tasks, cands = make_suite(tmp_path)
    opts = options(tmp_path, tasks, cands)
    assert check_options(opts)  # nothing there yet
    earlier = opts.out / "workspaces" / GOOD
    earlier.mkdir(parents=True)
    (earlier / "session.json").write_text(json.dumps({"max_steps": 1, "proposer": {"kind": "search"}}))
    with pytest.raises(SuiteError, match=r"its tasks were run with proposer search, not replay: give another --out$"):
        check_options(opts)
    (earlier / "session.json").write_text(json.dumps({"max_steps": 1, "proposer": {"kind": "replay"}}))
    assert check_options(opts)  # the same proposer resumes


def test_report_flags_large_speedups_and_has_no_cpu_banner_on_a_gpu(tmp_path):
    results = [result("a", score(1.2, 1.1), score(0.8, 0.7, "compile")), result("d", score(15.0, 12.0), score(11.0, 10.5, "compile")),
               result("c", None, solved=False).model_copy(update={"reason": "preflight failed: x"})]
    suite = SuiteResult(tasks_dir="t", out=str(tmp_path), device="cuda", proposer="search", max_steps=3, runs=5,
                        tasks=results, summaries=[summarize(results, "eager"), summarize(results, "compile")],
                        timing_labels=["GPU kernel time on H200: L2 flushed (512 MiB) before each call"])
    written = suite_report.write_suite_report(suite, tmp_path)
    text = written[0].read_text()
    assert "NOT GPU TIMINGS" not in text
    assert "S above 10x" in text and "**d**" in text and "⚑" in text
    assert "preflight failed: x" in text and "L2 flushed" in text
    assert "| 1 | 0.67 (2) | 0.67 (2) | 0.33 (1) | 0.33 (1) |" in text
    assert "their copy into the task's output tensors (where the checks read them) is made after the timed region" in text
    assert written[1].read_bytes().startswith(b"\x89PNG")


def test_a_round_left_unjudged_by_an_evaluator_fault_is_no_final_result(tmp_path, monkeypatch):
    tasks, cands = make_suite(tmp_path)
    runner = SuiteRunner(options(tmp_path, tasks, cands))

    def session_leaving_a_round_pending(ws, key):  # the run ended with its round unjudged (evaluator_fault)
        ws.commit_proposal(1, ws.best_source + "\n", "a change", ProposerInfo(kind="replay", name="replay"))
        return ""

    monkeypatch.setattr(runner, "_session", session_leaving_a_round_pending)
    monkeypatch.setattr(runner, "_score", lambda ws, key: pytest.fail("a task with a round pending was scored"))
    result = runner.run_task(tasks / GOOD)
    assert result is not None and result.status == "failed" and not result.complete
    assert "round 1 was left unjudged by an evaluator fault" in result.reason
    assert runner._prior(GOOD) is None  # so the next suite runs it again


def test_s_over_several_shapes_is_their_weighted_geometric_mean_with_each_shapes_own_beside_it():
    rng = np.random.default_rng(5)
    main = runs_with(0.01, 0.005, rng, true_s=2.0)
    tall = runs_with(0.01, 0.005, rng, true_s=0.5)  # the kernel loses at its second shape
    s_main = statistics.median(r.incumbent_median for r in main) / statistics.median(r.candidate_median for r in main)
    s_tall = statistics.median(r.incumbent_median for r in tall) / statistics.median(r.candidate_median for r in tall)
    weighted = math.exp((3 * math.log(s_main) + 1 * math.log(s_tall)) / 4)
    comp = Comparison(status=Status.ok, reason="r", device="cuda", runs=main, speedup=s_main,
                      shape_runs={"main": main, "tall": tall}, shape_speedups={"main": s_main, "tall": s_tall},
                      shape_weights={"main": 3.0, "tall": 1.0}, weighted_speedup=weighted)
    score = side_score("eager", comp)
    assert score.speedup == pytest.approx(weighted) and score.speedup < s_main  # fast_p sees the loss at tall
    assert score.shape_speedups == {"main": s_main, "tall": s_tall}
    assert score.ci_low < weighted < score.ci_high
    assert "weighted over its shapes (main" in describe_score(score) and "tall 0.5" in describe_score(score)
    cell_text = suite_report._speedup_cell(score)
    assert "(weighted; main" in cell_text and "tall" in cell_text


def test_a_scored_candidate_the_gate_rejected_is_marked_with_the_gates_verdict(tmp_path):
    r = result("a", score(1.2, 1.1)).model_copy(update={
        "scored_round": 3, "best_is_baseline": True,
        "scored_verdict": "rejected: -4.1% (CI ...) · per shape: main +2.0%, tall -58.0%"})
    suite = SuiteResult(tasks_dir="t", out=str(tmp_path), device="cuda", proposer="search", max_steps=3, runs=5,
                        tasks=[r], summaries=[summarize([r], s) for s in ("eager", "compile")], timing_labels=[])
    text = suite_report.write_suite_report(suite, tmp_path)[0].read_text()
    assert "(round 3, gate-rejected: rejected: -4.1% (CI ...) · per shape: main +2.0%, tall -58.0%)" in text


def test_a_task_that_failed_or_lost_a_side_asks_its_devices_health():
    from kernel_tui.core.suite.runner import device_suspect

    assert not device_suspect(result("a", score(1.2, 1.1), score(1.1, 1.0, "compile")))
    assert device_suspect(result("a", None, solved=False))
    assert device_suspect(result("a", score(1.2, 1.1), SideScore(side="compile", available=False, reason="x")))
    assert device_suspect(result("a", score(1.2, 1.1)).model_copy(update={"complete": False}))


def test_a_failure_on_a_gpu_that_then_fails_its_health_check_is_not_the_kernels_and_stops_the_suite(tmp_path):
    tasks = tmp_path / "tasks"
    for name in ("a", "b"):
        (tasks / name).mkdir(parents=True)
    runner = SuiteRunner(SuiteOptions(tasks_dir=tasks, out=tmp_path / "out", proposer="search", max_steps=3,
                                      device="cuda", runs=5))
    ran: list[str] = []

    def run_task(task_dir):
        ran.append(task_dir.name)
        return result(task_dir.name, score(1.2, 1.1), side_score("compile", comparison([1.0], [1.0], Status.incorrect)))

    runner.run_task = run_task  # type: ignore[method-assign]
    runner.health_check = lambda gpu: "GPU 0 failed a tiny CUDA op: Xid 79"  # type: ignore[method-assign]
    got = runner.run_sequential(sorted(tasks.iterdir()))
    assert ran == ["a"] and got is not None and [r.task for r in got] == ["a", "b"]
    assert all(not r.complete for r in got)  # both run again by a later suite, nothing charged to a kernel
    assert "Xid 79" in got[0].reason and got[1].reason.startswith("not run: GPU 0 failed")


# --- what a task's line, the summary and the exit status say ------------------------------------------


def pytorch_start_workspace(root: Path) -> Workspace:
    """A workspace of a task that starts from PyTorch eager, nothing proposed yet."""
    small_task(FIXTURES / "vector_add", root / "tasks" / "k", "k", pytorch=True)
    return Workspace.create(root / "tasks" / "k", path=root / "out" / "workspaces" / "k")


def runner_for(root: Path, proposer: str, lines: list[str] | None = None) -> SuiteRunner:
    opts = SuiteOptions(tasks_dir=root / "tasks", out=root / "out", proposer=proposer, max_steps=3, device="cpu",
                        runs=2)
    return SuiteRunner(opts, on_event=lambda task, e: lines.append(e.text) if lines is not None else None)


def suite_of(root: Path, results: list[TaskResult]) -> SuiteResult:
    return SuiteResult(tasks_dir=str(root / "tasks"), out=str(root / "out"), device="cuda", proposer="search",
                       max_steps=3, runs=5, tasks=results, summaries=[summarize(results, s) for s in ("eager", "compile")],
                       timing_labels=[])


GATE_REJECTED = ("correct, but not faster than eager through the gate: the fastest correct candidate is scored "
                 "(round 3, gate-rejected)")


def test_a_task_where_nothing_was_proposed_says_so_and_how_to_give_the_search_a_triton_version(tmp_path):
    ws = pytorch_start_workspace(tmp_path)
    assert ws.best_is_pytorch_start and ws.trajectory() == []
    lines: list[str] = []
    runner = runner_for(tmp_path, "search", lines)
    r = runner._score(ws, "k")  # returns before any evaluator starts: there is nothing to score
    assert r is not None and not r.correct and r.complete and r.rounds == 0 and r.best_is_baseline
    assert r.reason.startswith("no candidate was proposed: the built-in search only transforms Triton kernels and "
                               "this task starts from PyTorch eager")
    assert "--baseline FILE" in r.reason and "--proposer llm" in r.reason and "failed its checks" not in r.reason
    runner.ended(r)
    assert lines == [f"task k: failed: {r.reason}"]
    replayed = runner_for(tmp_path, "replay")._score(ws, "k")
    assert replayed is not None and replayed.reason == "no candidate was proposed: the replay proposer offered none"


def test_a_task_whose_candidates_all_failed_says_how_many_and_how(tmp_path):
    from kernel_tui.core.records import TrajectoryLine

    ws = pytorch_start_workspace(tmp_path)
    info = ProposerInfo(kind="search", name="built-in search")
    for n, status in ((1, Status.incorrect), (2, Status.compile_error), (3, Status.incorrect)):
        commit = ws.commit_proposal(n, ws.best_source + f"\n# {n}\n", "a change", info)
        ws.record_verdict(TrajectoryLine(round=n, change="a change", proposer=info, commit=commit.hexsha,
                                         status=status, reason="x", accepted=False))
    r = runner_for(tmp_path, "search")._score(ws, "k")
    assert r is not None and not r.correct and r.rounds == 3
    assert r.reason == "3 candidates were proposed and every one failed its checks (1 compile_error, 2 incorrect)"
    from kernel_tui.core.suite.runner import no_triton_kernel

    assert no_triton_kernel(ws.trajectory()[:1], "search") == "1 candidate was proposed and it failed its checks (incorrect)"


def test_a_scored_candidate_the_gate_rejected_is_not_called_solved(tmp_path):
    rejected = result("a", score(0.0096, 0.009)).model_copy(update={
        "best_is_baseline": True, "scored_round": 3, "scored_verdict": "rejected: -99% (CI ...)"})
    accepted = result("b", score(1.2, 1.1)).model_copy(update={"rounds": 3, "accepted": 2})
    baseline = result("c", score(1.0, 0.9)).model_copy(update={"rounds": 3})  # a Triton baseline, nothing accepted
    assert rejected.correct  # still counted by fast_0, as KernelBench counts any correct kernel
    lines: list[str] = []
    runner = runner_for(tmp_path, "search", lines)
    for r in (rejected, accepted, baseline):
        runner.ended(r)
    assert lines == [f"task a: {GATE_REJECTED}", "task b: solved",
                     "task c: correct, but no candidate was accepted: the task's own Triton baseline is scored"]
    text = suite_report.render(suite_of(tmp_path, [rejected, accepted, baseline]))
    assert f"| a | {GATE_REJECTED[:-1]}: rejected: -99% (CI ...)) | 0 (0) |" in text
    assert "| b | solved | 3 (2) |" in text
    assert "No task could be scored" not in text


def command_args(root: Path):
    import argparse

    tasks, cands = make_suite(root)
    return argparse.Namespace(tasks_dir=str(tasks), out=str(root / "out"), proposer="replay", max_steps=1,
                              device="cpu", runs=2, candidates=str(cands))


def argparse_parser():
    import argparse

    parser = argparse.ArgumentParser()
    return add_parser(parser.add_subparsers(dest="command"))


def test_the_command_exits_non_zero_when_no_task_could_be_scored(tmp_path, monkeypatch, capsys):
    from kernel_tui.cli.suite import main

    failed = [result(t, None, solved=False).model_copy(update={"reason": "no candidate was proposed: x"})
              for t in (GOOD, BAD)]
    monkeypatch.setattr(suite_run, "run_suite", lambda options, **kw: suite_of(tmp_path, failed))
    assert main(command_args(tmp_path)) == 1  # the CLI's EXIT_FAILED
    printed = capsys.readouterr().out.splitlines()
    assert "suite done: 0 of 2 tasks correct" in printed
    assert printed[-1] == ("no task could be scored: none of the 2 tasks has a correct Triton kernel (each task's "
                           "line above and the report's tasks table say why)")
    text = suite_report.render(suite_of(tmp_path, failed))
    assert "**No task could be scored**: none of the 2 task(s) has a correct Triton kernel" in text
    parser = argparse_parser()
    assert "Exit status: 0 when at least one task has a correct Triton kernel" in " ".join(parser.format_help().split())
    assert "1 when no task could be scored" in " ".join(parser.format_help().split())


def test_the_command_summary_says_how_many_correct_tasks_scored_a_gate_rejected_candidate(tmp_path, monkeypatch, capsys):
    from kernel_tui.cli.suite import EXIT_OK, main

    rejected = result(GOOD, score(0.0096, 0.009)).model_copy(update={"best_is_baseline": True, "scored_round": 3})
    tasks = [rejected, result(BAD, None, solved=False)]
    monkeypatch.setattr(suite_run, "run_suite", lambda options, **kw: suite_of(tmp_path, tasks))
    assert main(command_args(tmp_path)) == EXIT_OK
    printed = capsys.readouterr().out
    assert ("suite done: 1 of 2 tasks correct (1 not faster than eager through the gate: the fastest correct "
            "candidate scored)") in printed
    assert "no task could be scored" not in printed


def test_the_fastest_correct_candidate_is_chosen_over_every_shape_not_the_main_one():
    """Scored when no Triton version was accepted: L2-12 was taken at 1.87× on its main shape although the
    gate found it 136% slower at its second shape; the gate's estimate over all shapes decides now."""
    def line(n, latency, improvement, status="ok"):
        return TrajectoryLine(round=n, change="c", proposer=ProposerInfo(kind="replay", name="r"), commit=f"{n:040x}",
                              status=status, reason="rejected", accepted=False, latency=latency, improvement=improvement)

    main_only = line(1, 1.0e-3, -0.40)  # fastest at the main shape, far slower at the other
    everywhere = line(2, 1.2e-3, -0.05)
    wrong = line(3, 0.5e-3, None, status="incorrect")
    assert fastest_correct([main_only, everywhere, wrong]) is everywhere
    assert fastest_correct([line(4, 2e-3, None), line(5, 1e-3, None)]).round == 5  # no estimate: by latency
    assert fastest_correct([wrong]) is None


def test_a_scoring_cut_off_between_its_sides_resumes_at_the_side_not_yet_measured(tmp_path, monkeypatch):
    """On the H200 a task whose eager side was measured before the call's limit measured it again on the next
    call (53 s): each side measured is kept in the workspace and reused while the kernel and sources match."""
    import kernel_tui.core.compare as compare_module
    import kernel_tui.core.evaluator as evaluator_module

    small_task(FIXTURES / "vector_add", tmp_path / "tasks" / "k", "k")
    ws = Workspace.create(tmp_path / "tasks" / "k", path=tmp_path / "out" / "workspaces" / "k")

    class Idle:  # no worker starts: compare() is the fake below
        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            pass

    measured_sides: list[str] = []
    lines: list[str] = []
    runner = runner_for(tmp_path, "search", lines)

    def fake_compare(evaluator, incumbent, candidate, runs):
        side = "compile" if "torch.compile" in incumbent else "eager"
        measured_sides.append(side)
        if side == "compile" and len(measured_sides) == 2:
            runner.cancel.set()  # the call's limit, in the middle of the compile side
        return comparison([2.0, 2.0], [1.0, 1.0])

    monkeypatch.setattr(evaluator_module, "Evaluator", Idle)
    monkeypatch.setattr(compare_module, "compare", fake_compare)
    assert runner._score(ws, "k") is None and measured_sides == ["eager", "compile"]

    runner.cancel.clear()
    lines.clear()
    done = runner._score(ws, "k")
    assert measured_sides == ["eager", "compile", "compile"]  # eager was not timed again
    assert done is not None and done.eager.speedup == pytest.approx(2.0) and done.compile.speedup == pytest.approx(2.0)
    assert any("PyTorch eager: scored earlier, not run again: S = 2" in line for line in lines)

    # another kernel to score, or other runs, is measured afresh on both sides
    ws.accept(ws.commit_proposal(1, ws.best_source + "\n# another kernel\n", "a change",
                                 ProposerInfo(kind="search", name="s")))
    runner._score(ws, "k")
    assert measured_sides[3:] == ["eager", "compile"]
    from dataclasses import replace

    SuiteRunner(replace(runner.options, runs=3))._score(ws, "k")
    assert measured_sides[5:] == ["eager", "compile"]


def test_the_report_states_each_timing_method_once_with_its_measured_range(tmp_path):
    """Each task's judge measures its own handoff and picks its calls per window: one line per method."""
    label = ("GPU kernel time on NVIDIA H200: {} calls back to back per window over rotating input sets, L2 flushed "
             "before each window, timed by the judge across processes, {} µs handoff subtracted")
    labels = [label.format(5, 256), label.format(3, 267), label.format(5, 271)]
    suite = SuiteResult(tasks_dir="t", out=str(tmp_path), device="cuda", proposer="replay", max_steps=1, runs=3,
                        tasks=[], summaries=[summarize([], s) for s in ("eager", "compile")], timing_labels=labels)
    text = suite_report.write_suite_report(suite, tmp_path)[0].read_text()
    methods = [ln for ln in text.splitlines() if ln.startswith("- Timing method:")]
    assert methods == [f"- Timing method: {label.format('3–5', '256–271')}"]


INDUCTOR = "torch.compile's kernels (Inductor, torch 2.11.0)"


def test_tasks_started_from_torch_compiles_kernels_count_past_it_only_when_the_search_moved_them(tmp_path):
    def started(task, comp, accepted, over=None, **kw):
        return result(task, score(3.0, 2.5), comp, **kw).model_copy(update={
            "start": INDUCTOR, "rounds": 5, "accepted": accepted, "over_start": over})

    results = [
        started("a", score(1.2, 1.05, "compile"), 2, 1.25),
        started("b", score(1.03, 0.98, "compile"), 1, 1.04),  # past by its point estimate, not by its interval
        started("c", score(1.1, 1.05, "compile"), 0, 1.0),  # the start itself, unmoved: not the search's doing
        started("d", None, 0, solved=False),
        result("e", score(2.0, 1.9), score(2.0, 1.9, "compile")),  # a hand-written Triton start
    ]
    got = summarize_inductor(results)
    assert got is not None
    assert (got.started, got.moved, got.past, got.past_strict) == (4, 2, 2, 1)
    assert got.median_past == pytest.approx((1.2 + 1.03) / 2)
    assert got.median_over_start == pytest.approx((1.25 + 1.04) / 2)
    assert summarize_inductor(results[-1:]) is None
    suite = suite_of(tmp_path, results).model_copy(update={"inductor": got})
    text = suite_report.render(suite)
    assert "## Past torch.compile's own kernels" in text
    assert "4 of the 5 task(s) started from torch.compile's kernels" in text
    assert "accepted over that start in 2 of 4 (50%)" in text and "median 1.15x over their start" in text
    assert "**Past torch.compile: 2 of 4 (50%)** with S against torch.compile above 1 (median 1.11x)" in text
    assert "1 of 4 (25%) with the interval's lower bound above 1" in text
    assert f"| {INDUCTOR} | 1.25x |" in text and "| Triton baseline | — |" in text
    assert "Past torch.compile" not in suite_report.render(suite_of(tmp_path, results[-1:]))
