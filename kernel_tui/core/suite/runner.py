"""Running a suite: every task through the one Session loop, then its best version scored against PyTorch.

Each task gets a workspace OUT/workspaces/<task> driven by `Session.run` exactly as `kernel-tui run
--headless` drives it (the same opening, proposer and loop; only the cancel event and the printer are the
suite's). Everything is on disk as it happens, so a killed suite resumes: a task whose result is final for
the same device, runs and budget is not touched again; a workspace that stopped part way resumes where it
stopped; a finished workspace without a result is only scored, and a scoring cut off after its eager side
measures only torch.compile's.

Tasks run one after another by default. With `gpus` they run in parallel, one per device of a GpuPool, each
in a process of its own with its evaluators pinned to its device; with `scheduler` each runs on a Dask
worker (distributed.py). Either way a task's files are written by that task alone, and suite.json and the
report are built once every task has ended, in task order, as a sequential run builds them.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.events import Event, LogEvent
from kernel_tui.core.gpus import GpuError, GpuPool, cuda_health, describe, parse_count
from kernel_tui.core.suite.models import (
    SCORING_FILE,
    SIDE_LABELS,
    SIDES,
    ScoringProgress,
    Side,
    SideScore,
    SuiteResult,
    TaskResult,
)
from kernel_tui.core.suite.score import describe_score, one_line, side_score, suite_result
from kernel_tui.core.workspace import write_durably

if TYPE_CHECKING:
    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.records import TrajectoryLine
    from kernel_tui.core.task import Task
    from kernel_tui.core.workspace import Workspace

OnEvent = Callable[[str, Event], None]  # (task, event); the suite's own lines come as LogEvents


class SuiteError(KernelTuiError):
    pass


@dataclass(frozen=True)
class SuiteOptions:
    tasks_dir: Path
    out: Path
    proposer: str
    max_steps: int
    device: Literal["cpu", "cuda"]  # resolved
    runs: int
    candidates: Path | None = None  # replay: one folder of *.py per task, named like the task's folder
    gpus: str | None = None  # run tasks in parallel, one per device: "all", a count ("2") or ids ("0,2")
    scheduler: str | None = None  # run each task on a worker of this Dask scheduler (tcp://HOST:PORT)

    def candidates_for(self, task: str) -> Path | None:
        return self.candidates / task if self.candidates is not None else None


def _natural(path: Path) -> list[tuple[int, str]]:
    """A name's sort key with its digit runs compared as numbers (KernelBench's 2_… before 10_…)."""
    # split() alternates text and digit runs, so two keys compare text with text and number with number
    return [(int(part), "") if part.isdigit() else (0, part) for part in re.split(r"(\d+)", path.name)]


def find_tasks(tasks_dir: Path) -> list[Path]:
    """Every subdirectory holding task.json, in name order with numbers by value."""
    if not tasks_dir.is_dir():
        raise SuiteError(f"{tasks_dir}: no such directory")
    tasks = sorted((p for p in tasks_dir.iterdir() if p.is_dir() and (p / "task.json").is_file()), key=_natural)
    if not tasks:
        raise SuiteError(f"{tasks_dir}: holds no task directories (subdirectories with a task.json)")
    return tasks


def _earlier_proposer(out: Path, proposer: str) -> str | None:
    """The proposer an earlier run into `out` used, where it is not `proposer` (its workspaces say)."""
    for path in sorted((out / "workspaces").glob("*/session.json")):
        try:
            kind = json.loads(path.read_text(encoding="utf-8")).get("proposer", {}).get("kind")
        except (OSError, ValueError, AttributeError):
            continue  # a torn or foreign file: the task's own opening will say what is wrong with it
        if isinstance(kind, str) and kind != proposer:
            return kind
    return None


def check_options(options: SuiteOptions, settings: AgentSettings | None = None) -> list[Path]:
    """Refuse bad input as one line before anything is created; returns the task directories. `settings`: the
    agent's, loaded by the front end where the proposer uses them (opening.uses_settings)."""
    from kernel_tui.core.opening import check_proposer

    if options.max_steps < 1:
        raise SuiteError("--max-steps must be at least 1")
    if options.runs < 2:
        raise SuiteError("--runs must be at least 2 (the interval of S needs two runs)")
    if options.gpus is not None and options.scheduler is not None:
        raise SuiteError("--gpus and --scheduler exclude each other (Dask workers each hold their own GPU)")
    if options.gpus is not None:
        try:
            parse_count(options.gpus)
        except GpuError as exc:
            raise SuiteError(str(exc)) from None
    tasks = find_tasks(options.tasks_dir)
    if options.out.exists() and not options.out.is_dir():
        raise SuiteError(f"{options.out}: exists and is not a directory")
    other = _earlier_proposer(options.out, options.proposer)
    if other is not None:  # its workspaces and results would be resumed and scored under this proposer's name
        raise SuiteError(f"{options.out}: its tasks were run with proposer {other}, not {options.proposer}: "
                         "give another --out")
    if options.proposer == "replay":
        if options.candidates is None:
            raise SuiteError("--proposer replay needs --candidates DIR (one folder of *.py per task)")
        missing = [t.name for t in tasks if not (options.candidates / t.name).is_dir()]
        if missing:
            raise SuiteError(f"{options.candidates}: no candidate folder for task(s) {', '.join(missing)}")
    for task in tasks:
        check_proposer(options.proposer, options.candidates_for(task.name), None, settings)
    return tasks


class OutLock:
    """One suite per output folder at a time."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.file: io.TextIOWrapper = open(out / ".lock", "a+", encoding="utf-8")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise SuiteError(f"{out}: in use by another kernel-tui suite") from None

    def release(self) -> None:
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def make_pool(options: SuiteOptions) -> GpuPool:
    """The devices of a parallel suite: CPU slots on the interpreter, else the GPUs `options.gpus` names."""
    spec = options.gpus or "all"
    try:
        if options.device == "cpu":  # interpreter slots, whatever GPUs the host has: a count, one per id, or a core each
            ids = [p for p in spec.split(",") if p.strip()] if "," in spec else []
            return GpuPool.cpu(parse_count(spec) or len(ids) or os.cpu_count() or 1)
        return GpuPool.detect(spec)
    except GpuError as exc:
        raise SuiteError(str(exc)) from None


class SuiteRunner:
    def __init__(self, options: SuiteOptions, *, cancel: threading.Event | None = None,
                 on_event: OnEvent | None = None, gpu: str | None = None, settings: AgentSettings | None = None) -> None:
        self.options = options
        self.settings = settings  # the agent's, loaded by the front end where the proposer uses them
        self.cancel = cancel or threading.Event()
        self.on_event = on_event or (lambda task, e: None)
        self.gpu = gpu  # the GPU every evaluator of this runner is pinned to (None: the process's own)
        self.health_check: Callable[[str], str | None] = cuda_health  # asked after a task the GPU may have failed

    def _say(self, task: str, text: str) -> None:
        self.on_event(task, LogEvent(text=text))

    def results_path(self, task: str) -> Path:
        return self.options.out / "results" / f"{task}.json"

    def workspace_path(self, task: str) -> Path:
        return self.options.out / "workspaces" / task

    # --- the whole suite (suite/run.py chooses where the tasks run) ------------------------------------
    def finish(self, results: list[TaskResult]) -> SuiteResult:
        """suite.json and the report from every task's result."""
        suite = self._suite(results)
        write_durably(self.options.out / "suite.json", suite.model_dump_json(indent=2) + "\n")
        from kernel_tui.core.suite.report import write_suite_report

        write_suite_report(suite, self.options.out)
        return suite

    def run_sequential(self, tasks: list[Path]) -> list[TaskResult] | None:
        """Every task in this process, one after another, in task order; None when stopped."""
        results: list[TaskResult] = []
        fault: str | None = None
        for index, task_dir in enumerate(tasks, start=1):
            if self.cancel.is_set():
                return None
            if fault is not None:  # nothing more runs on a GPU that failed its health check; a later suite will
                results.append(self.ended(self._record(self._failed(task_dir.name, f"not run: {fault}"))))
                continue
            self._say(task_dir.name, f"task {index}/{len(tasks)}: {task_dir.name}")
            result = self.run_task(task_dir)
            if result is None:
                return None
            if self.options.device == "cuda" and device_suspect(result) \
                    and (why := self.health_check(self.gpu or "0")) is not None:
                fault = one_line(f"{why} (after task {task_dir.name}, whose result is not charged to its kernel: run "
                                 "the suite again on a healthy GPU)")
                self._say("suite", f"the GPU failed its health check: {fault}")
                result = self._record(self._failed(task_dir.name, fault))
            results.append(self.ended(result))
        return results

    def ended(self, result: TaskResult, device: str | None = None) -> TaskResult:
        self._say(result.task, f"task {result.task}: {result.outcome()}" + (f" (on {describe(device)})" if device else ""))
        return result

    def _suite(self, results: list[TaskResult]) -> SuiteResult:
        o = self.options
        return suite_result(results, tasks_dir=str(o.tasks_dir), out=str(o.out), device=o.device, proposer=o.proposer,
                            max_steps=o.max_steps, runs=o.runs)

    # --- one task ---------------------------------------------------------------------------------
    def run_task(self, task_dir: Path) -> TaskResult | None:
        """Run (or resume) the task's workspace, then score it; None when stopped."""
        key = task_dir.name
        prior = self._prior(key)
        if prior is not None:
            self._say(key, f"task {key}: final result recorded earlier, not run again")
            return prior
        try:
            ws = self._open(task_dir)
        except KernelTuiError as exc:
            return self._record(self._failed(key, f"could not open: {exc}"))
        if not self._finished(ws):
            outcome = self._session(ws, key)
            if outcome == "stopped":
                return None
            if outcome:
                return self._record(self._failed(key, outcome, ws=ws))
            if ws.pending():  # an evaluator fault left a round unjudged: not a result, run it again later
                return self._record(self._failed(
                    key, f"round {ws.pending()[0][0]} was left unjudged by an evaluator fault; run the suite again", ws=ws))
        if self.cancel.is_set():
            return None
        result = self._score(ws, key)
        return None if result is None else self._record(result)

    def _record(self, result: TaskResult) -> TaskResult:
        write_durably(self.results_path(result.task), result.model_dump_json(indent=2) + "\n")
        return result

    def _prior(self, key: str) -> TaskResult | None:
        """The recorded result, when it is final for these options and the workspace has not moved on."""
        from kernel_tui.core.workspace import Workspace

        path = self.results_path(key)
        try:
            prior = TaskResult.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError):
            return None  # absent or torn: the task is judged again from its workspace
        o = self.options
        if not (prior.complete and prior.device == o.device and prior.runs == o.runs and prior.max_steps == o.max_steps
                and prior.proposer == o.proposer):  # another proposer's result is not this suite's
            return None
        try:  # a workspace removed, or moved on since (more rounds, a restore), is run and scored again
            if Workspace.open(self.workspace_path(key)).best.hexsha != prior.best_commit:
                return None
        except KernelTuiError:
            return None
        return prior

    def _open(self, task_dir: Path) -> Workspace:
        """The task's workspace: resumed if there is one, else created; a half-made folder (killed while
        being created) is moved aside, never deleted."""
        from kernel_tui.core.opening import open_or_create
        from kernel_tui.core.task import load_task
        from kernel_tui.core.workspace import Workspace

        path = self.workspace_path(task_dir.name)
        if Workspace.is_workspace(path):
            ws = Workspace.open(path)
            if ws.task.name != load_task(task_dir).name:
                raise SuiteError(f"{path} is a workspace of task {ws.task.name!r}, not of {task_dir}")
            return ws
        if path.exists() and any(path.iterdir()):
            aside = path.with_name(f"{path.name}.incomplete-{datetime.now():%Y%m%d-%H%M%S}")
            path.rename(aside)
            self._say(task_dir.name, f"{path}: not a complete workspace; moved to {aside.name}, starting afresh")
        path.parent.mkdir(parents=True, exist_ok=True)
        return open_or_create(task_dir, path)

    def _finished(self, ws: Workspace) -> bool:
        """Its loop ended for this budget (the final re-test included): nothing left but scoring."""
        from kernel_tui.core.session import SessionState

        try:
            saved = ws.read_json("session.json")
            state = SessionState.model_validate(saved) if saved else None
        except (KernelTuiError, ValidationError):
            return False
        return (state is not None and state.finished and state.max_steps == self.options.max_steps
                and (ws.root / "run_summary.json").is_file() and not ws.pending())

    def _session(self, ws: Workspace, key: str) -> str:
        """Drive the Session loop: "" when it finished, "stopped" when cancelled, else why it failed."""
        from kernel_tui.core.opening import run_headless
        from kernel_tui.core.records import Preflight

        o = self.options
        ws.lock()
        try:
            summary, _ = run_headless(
                ws, device=o.device, proposer=o.proposer, candidates=o.candidates_for(key), max_steps=o.max_steps,
                cancel=self.cancel, on_event=lambda e: self.on_event(key, e), on_start=lambda text: self._say(key, text),
                gpus=f"{self.gpu}," if self.gpu is not None else None,  # a list of one id, not a count
                settings=self.settings,
            )
            if summary is None:
                if self.cancel.is_set():
                    return "stopped"
                pre = Preflight.model_validate(ws.read_json("preflight.json") or {})
                return one_line(f"preflight failed: reference {pre.reference}; baseline {pre.baseline}")
            return ""
        except KernelTuiError as exc:
            return one_line(str(exc))
        except ValidationError:
            return "preflight failed and left no readable preflight.json"
        finally:
            ws.unlock()

    def _base(self, key: str, ws: Workspace | None = None) -> dict:
        o = self.options
        base: dict = dict(task=key, device=o.device, runs=o.runs, max_steps=o.max_steps, proposer=o.proposer)
        if ws is not None:
            lines = ws.trajectory()
            start = ws.task.spec.baseline
            base.update(name=ws.task.name, workspace=str(ws.root), rounds=len(lines),
                        accepted=sum(ln.accepted for ln in lines), best_commit=ws.best.hexsha,
                        start=start.label or ("PyTorch eager" if start.language == "pytorch" else ""),
                        **self._over_start(ws))
        return base

    @staticmethod
    def _over_start(ws: Workspace) -> dict:
        """The run's final re-test of start against best, where it is about today's best (else nothing)."""
        from kernel_tui.core.history import current_best
        from kernel_tui.core.records import RunSummary

        try:
            summary = RunSummary.model_validate(ws.read_json("run_summary.json") or {})
        except (KernelTuiError, ValidationError):
            return {}
        if summary.final_speedup is None or summary.best_commit != current_best(ws).commit:
            return {}
        return dict(over_start=summary.final_speedup,
                    over_start_shapes=summary.final_shape_speedups if len(summary.final_shape_speedups) > 1 else {})

    def _failed(self, key: str, reason: str, ws: Workspace | None = None) -> TaskResult:
        """A failure of the run itself: not final, so a later suite tries the task again."""
        return TaskResult(status="failed", reason=reason, complete=False, **self._base(key, ws))

    def _score(self, ws: Workspace, key: str) -> TaskResult | None:
        """The best version against PyTorch eager and torch.compile in fresh processes; None when stopped."""
        from kernel_tui.core.compare import compare
        from kernel_tui.core.evaluator import Evaluator
        from kernel_tui.core.evaluator.evaluator import policy_rejection
        from kernel_tui.core.suite.sources import pytorch_source

        o = self.options
        base = self._base(key, ws)
        best = ws.best_source
        if ws.best_is_pytorch_start:
            # No Triton version beat eager through the gate. KernelBench counts a correct kernel whatever its
            # speed (fast_0), so the fastest correct Triton candidate is scored, and the result says so.
            lines = ws.trajectory()
            fastest = fastest_correct(lines)
            if fastest is None:
                return TaskResult(status="failed", reason=no_triton_kernel(lines, o.proposer), complete=True,
                                  best_is_baseline=True, **base)
            best = ws.source_at(fastest.commit)
            base.update(scored_round=fastest.round, best_is_baseline=True, scored_verdict=one_line(fastest.reason, 200))
            self._say(key, f"no Triton version was accepted; scoring the fastest correct candidate (round {fastest.round})")
        # the kernel keeps its static policy; the PyTorch sides are exempt, so the workers enforce none
        rejected = policy_rejection(ws.task, best, o.device)
        if rejected is not None:
            return TaskResult(status="failed", reason=one_line(f"the best fails the policy: {rejected.reason}"),
                              complete=True, **base)
        evaluator = Evaluator(ws.task, device=o.device, enforce_policy=False, cancel=self.cancel, gpu=self.gpu,
                              returning=[pytorch_source(ws.task, side) for side in SIDES],
                              inductor=[pytorch_source(ws.task, "compile")])
        scoring = self._scoring_so_far(ws, scoring_key(ws.task, best, o))
        scores: dict[Side, SideScore] = {}
        try:
            for side in SIDES:
                if (earlier := scoring.sides.get(side)) is not None:
                    scores[side] = earlier
                    self._say(key, f"  {SIDE_LABELS[side]}: scored earlier, not run again: {describe_score(earlier)}")
                else:
                    self._say(key, f"scoring: the best against {SIDE_LABELS[side]}, {o.runs} fresh processes")
                    comparison = compare(evaluator, pytorch_source(ws.task, side), best, runs=o.runs)
                    if self.cancel.is_set():
                        return None
                    scores[side] = side_score(side, comparison)
                    self._say(key, f"  {SIDE_LABELS[side]}: {describe_score(scores[side])}")
                    if comparison.status is not Status.evaluator_fault:  # a side measured stands if the task is cut off
                        scoring = scoring.model_copy(update={"sides": {**scoring.sides, side: scores[side]}})
                        ws.write_json(SCORING_FILE, scoring)
                if side == "eager" and not scores[side].available:
                    break
        finally:
            evaluator.close()
        eager = scores["eager"]
        env = eager.comparison.environment if eager.comparison else None
        # the evaluator's own fault says nothing of the kernel: not final, so a later suite scores it again
        final = not any(sc.comparison is not None and sc.comparison.status is Status.evaluator_fault
                        for sc in scores.values())
        if not eager.available:
            return TaskResult(status="failed", reason=f"the scoring's fresh check against eager failed: {eager.reason}",
                              complete=final, eager=eager, environment=env, **base)
        return TaskResult(status="solved", reason=eager.reason, complete=final, eager=eager,
                          compile=scores.get("compile"), environment=env, **base)

    @staticmethod
    def _scoring_so_far(ws: Workspace, key: str) -> ScoringProgress:
        """What the scoring named by `key` measured before the suite was cut off: the sides saved under that key
        (another kernel, other PyTorch sources or options, or a torn file: none, so all are measured afresh)."""
        try:
            saved = ScoringProgress.model_validate(ws.read_json(SCORING_FILE) or {})
        except (KernelTuiError, ValidationError):
            saved = None
        return saved if saved is not None and saved.key == key else ScoringProgress(key=key)


def scoring_key(task: Task, best: str, options: SuiteOptions) -> str:
    """What a side's score depends on: the kernel scored, the PyTorch sides' sources, the device and runs."""
    from kernel_tui.core.suite.sources import pytorch_source

    parts = [best, *(pytorch_source(task, side) for side in SIDES), options.device, str(options.runs)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def no_triton_kernel(lines: list[TrajectoryLine], proposer: str) -> str:
    """Why a task that starts from PyTorch eager has no correct Triton kernel to score, from its trajectory:
    nothing was proposed (the built-in search waits for a Triton version), or everything proposed failed."""
    if not lines:
        if proposer == "search":
            return ("no candidate was proposed: the built-in search only transforms Triton kernels and this task "
                    "starts from PyTorch eager (give it a Triton version: `kernel-tui import kernelbench --baseline "
                    "FILE`, a Triton baseline.py, or --proposer llm)")
        return f"no candidate was proposed: the {proposer} proposer offered none"
    failed = Counter(str(ln.status) for ln in lines if not (ln.status == "ok" and ln.latency))
    tally = ", ".join(f"{n} {status}" if len(lines) > 1 else status for status, n in sorted(failed.items()))
    if len(lines) == 1:
        return f"1 candidate was proposed and it failed its checks ({tally})"
    return f"{len(lines)} candidates were proposed and every one failed its checks ({tally})"


def device_suspect(result: TaskResult) -> bool:
    """Whether a task's end may be its device's doing, so that the device's health must decide: unfinished,
    failed, or a side that failed or could not be measured (a faulting GPU reads as a CUDA error, wrong values
    or a hang, charged to the kernel unless the device is asked)."""
    if not result.complete or not result.correct:
        return True
    return any(score is not None and not score.available for score in (result.eager, result.compile))


def fastest_correct(lines: list[TrajectoryLine]) -> TrajectoryLine | None:
    """The correct round that came closest to eager when none was accepted: by the gate's estimate over all
    its shapes (every round's incumbent was the eager start, so the estimates compare), by the main shape's
    latency only among rounds without one. A kernel fast at the main shape and 2× slower at another is not
    the fastest."""
    ok = [ln for ln in lines if ln.status == "ok" and ln.latency]
    estimated = [ln for ln in ok if ln.improvement is not None]
    if estimated:
        return max(estimated, key=lambda ln: ln.improvement or 0.0)
    return min(ok, key=lambda ln: ln.latency or 0.0, default=None)
