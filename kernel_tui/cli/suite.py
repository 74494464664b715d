"""`kernel-tui suite TASKS_DIR`: the command line's side of a suite (arguments, signals, printed lines).

A front end like headless mode: it renders the runner's events as lines and turns Ctrl-C into the cancel
event, so the tasks in flight stop at a safe point and the next `kernel-tui suite` resumes them.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.event_handler import EventHandler

if TYPE_CHECKING:  # the engine loads when the suite starts: the parser is built from this module
    from kernel_tui.core.events import Event, ProgressEvent
    from kernel_tui.core.suite.models import TaskResult

EXIT_STOPPED = EXIT_FAILED  # run the same command to resume
EXIT_NO_SCORE = EXIT_FAILED  # no kernel to score, as EPILOG says
EPILOG = (f"Exit status: {EXIT_OK} when at least one task has a correct Triton kernel, scored against PyTorch; "
          f"{EXIT_NO_SCORE} when no task could be scored (no correct Triton kernel in any task: the report is still "
          "written and says why per task) or when the suite was stopped (run the same command to resume); "
          f"{EXIT_BAD_INPUT} on bad arguments.\n\nexamples:\n"
          "  kernel-tui suite tasks/level1 --proposer search --max-steps 5 --device cuda --out suites/level1\n"
          "  kernel-tui suite tasks --proposer replay --candidates cands --max-steps 1 --gpus all")


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "suite", help="run every task of a folder headless, then score the best kernels against PyTorch (fast_p)",
        description="Runs every subdirectory of TASKS_DIR that holds a task.json as one headless run, each in "
                    "OUT/workspaces/<task>, then times each task's best version against PyTorch eager and "
                    "torch.compile in fresh processes and writes OUT/suite.json and OUT/suite-report.md. "
                    "Run the same command again to resume a stopped suite.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("tasks_dir", metavar="TASKS_DIR", help="a folder of task directories (each holding task.json)")
    p.add_argument("--proposer", choices=["search", "llm", "replay"], required=True,
                   help="who proposes candidates in every task (replay: the files in --candidates DIR/<task>/)")
    p.add_argument("--candidates", help="for --proposer replay: a folder with one folder of *.py per task, "
                                        "named like the task's folder")
    p.add_argument("--max-steps", type=int, required=True, help="rounds per task")
    p.add_argument("--out", help="where workspaces, results and the report go (default suites/<TASKS_DIR name>)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where candidates run (default: auto, the GPU if there is one); cpu = Triton's "
                        "interpreter (timings are not GPU timings)")
    p.add_argument("--runs", type=int,
                   help="fresh processes per PyTorch side when scoring (at least 2; default 5 on a GPU, 2 on the CPU)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--gpus", metavar="all|N|IDS",
                       help="run tasks in parallel, one per GPU: all visible GPUs, the first N, or ids as "
                            "CUDA_VISIBLE_DEVICES names them (0,2; one id as 3,). With --device cpu, N "
                            "interpreter tasks at once. Default: one task at a time")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="run each task on a worker of this Dask scheduler (workers started with "
                            "--resources GPU=1 --nthreads 1, one per GPU); --out must be on a filesystem "
                            "every worker shares")
    p.set_defaults(func=main, evaluates=True)
    return p


class SuitePrinter(EventHandler):
    """Every task's events as lines prefixed with the task; evaluation progress as one line rewritten on stderr,
    where it is a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()  # tasks running in parallel print from their own threads
        self.task = ""  # the task of the event being handled (under the lock)

    def __call__(self, task: str, e: Event) -> None:
        with self.lock:
            self.task = task
            self.handle(e)

    def on_progress(self, e: ProgressEvent) -> None:
        if self.tty:
            p = e.progress
            sys.stderr.write("\r" + f"  [{self.task}] round {e.round}: {p.phase} {p.k}/{p.n} (block {p.block + 1})".ljust(78))
            sys.stderr.flush()

    def _line(self, e: Event) -> None:
        if self.tty:
            sys.stderr.write("\r" + " " * 78 + "\r")
        print(f"[{self.task}] {e.text}", flush=True)

    on_log = on_preflight = on_round = on_proposal = on_decision = on_verdict = on_best_changed = on_budget = _line
    on_idle = on_profile = on_finished = _line


def main(args) -> int:
    from kernel_tui.core import environment
    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.opening import uses_settings
    from kernel_tui.core.suite.models import FLAG_SPEEDUP
    from kernel_tui.core.suite.run import run_suite
    from kernel_tui.core.suite.runner import SuiteOptions, check_options

    if args.max_steps < 1:
        raise KernelTuiError("--max-steps must be at least 1")
    if args.runs is not None and args.runs < 2:
        raise KernelTuiError("--runs must be at least 2 (the interval of S needs two runs)")
    tasks_dir = Path(args.tasks_dir)
    out = Path(args.out) if args.out else Path("suites") / tasks_dir.resolve().name
    gpus, scheduler = getattr(args, "gpus", None), getattr(args, "scheduler", None)
    # with a scheduler the GPUs are the workers', not this host's: only --device cpu asks for the interpreter
    device = ("cpu" if args.device == "cpu" else "cuda") if scheduler else environment.resolve(args.device)
    options = SuiteOptions(
        tasks_dir=tasks_dir, out=out, proposer=args.proposer, max_steps=args.max_steps,
        device="cuda" if device == "cuda" else "cpu", runs=args.runs or (5 if device == "cuda" else 2),
        candidates=Path(args.candidates) if args.candidates else None, gpus=gpus, scheduler=scheduler,
    )
    settings = AgentSettings.load() if uses_settings(options.proposer, None, None) else None  # once, for every task
    tasks = check_options(options, settings)
    where = f", in parallel (--gpus {gpus})" if gpus else f", on the Dask cluster at {scheduler}" if scheduler else ""
    print(f"suite {tasks_dir}: {len(tasks)} tasks, proposer {options.proposer}, {options.max_steps} rounds each, "
          f"device {options.device}{where}, scoring with {options.runs} runs per side; output in {out}", flush=True)
    cancel = threading.Event()

    def stop(signum, frame):  # finish the phase in flight, leave everything on disk
        cancel.set()

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        suite = run_suite(options, cancel=cancel, on_event=SuitePrinter(), settings=settings)
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
    if suite is None:
        again = " ".join(shlex.quote(a) for a in ["kernel-tui", "suite", str(tasks_dir), "--proposer", options.proposer,
                                                  "--max-steps", str(options.max_steps), "--out", str(out),
                                                  "--device", options.device, "--runs", str(options.runs)]
                         + (["--candidates", str(options.candidates)] if options.candidates else [])
                         + (["--gpus", gpus] if gpus else []) + (["--scheduler", scheduler] if scheduler else []))
        print(f"stopped; resume with: {again}")
        return EXIT_STOPPED
    print(_done_line(suite.tasks))
    for summary in suite.summaries:
        if not summary.available:
            print(f"  vs {summary.side}: not measured on any correct task")
            continue
        f1 = next(f for f in summary.fast_p if f.p == 1.0)
        gm = f"{summary.geomean:.3g}x over {summary.geomean_over}" if summary.geomean is not None else "n/a"
        print(f"  vs {summary.side}: fast_1 = {f1.plain:.2f} (strict {f1.strict:.2f}) of {summary.total} tasks; geomean S {gm}")
    if (i := suite.inductor) is not None:
        median = f" (median S {i.median_past:.3g}x)" if i.median_past is not None else ""
        print(f"  from torch.compile's kernels: {i.started} tasks, a version accepted over the start in {i.moved}, "
              f"past torch.compile in {i.past}{median}, {i.past_strict} by the interval")
    flagged = sorted({t for summary in suite.summaries for t in summary.flagged})
    if flagged:
        print(f"  for a person to look at (S above {FLAG_SPEEDUP:g}x): {', '.join(flagged)}")
    print(f"report: {out / 'suite-report.md'}; results: {out / 'suite.json'}")
    if not any(t.correct for t in suite.tasks):
        print(f"no task could be scored: none of the {len(suite.tasks)} tasks has a correct Triton kernel "
              "(each task's line above and the report's tasks table say why)")
        return EXIT_NO_SCORE
    return EXIT_OK


def _done_line(tasks: list[TaskResult]) -> str:
    """How many tasks are correct, and how many of those scored a kernel that is not an accepted candidate."""
    correct = sum(t.correct for t in tasks)
    notes = []
    if rejected := sum(t.gate_rejected for t in tasks):
        notes.append(f"{rejected} not faster than eager through the gate: the fastest correct candidate scored")
    if baseline := sum(t.baseline_scored for t in tasks):
        notes.append(f"{baseline} with no candidate accepted: the task's own Triton baseline scored")
    return f"suite done: {correct} of {len(tasks)} tasks correct" + (f" ({'; '.join(notes)})" if notes else "")
