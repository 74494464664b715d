"""Command line: eval, compare, check-task.

Exit codes: 0 the command ran and the candidate is ok, 1 the candidate (or task) failed a check,
2 bad input (one line on stderr, never a traceback), 141 the reader of stdout went away (`| head`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

from kernel_tui.core.errors import CandidateError, KernelTuiError
from kernel_tui.core.format import duration, percent

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process that SIGPIPE ended


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_BAD_INPUT, f"kernel-tui: error: {message} (see --help)\n")


def _read_candidate(path: str) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CandidateError(f"{p}: no such candidate file") from None
    except IsADirectoryError:
        raise CandidateError(f"{p}: is a directory, not a candidate file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidateError(f"{p}: cannot read candidate: {exc}") from None


def _evaluator(args, task):
    from kernel_tui.core import environment
    from kernel_tui.core.evaluator import Evaluator

    device = environment.resolve(args.device)  # after the cheap checks: it costs a torch import in a child
    try:
        return Evaluator(task, device=device, on_progress=_progress if not args.json else None,
                         enforce_policy=not getattr(args, "no_policy", False))
    except ValueError as exc:
        raise KernelTuiError(str(exc)) from None


def _progress(p) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r  {p.phase} {p.k}/{p.n} (block {p.block + 1})   ")
        sys.stderr.flush()


def _print_eval(result) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 40 + "\r")
    print(f"status   {result.status.value}: {result.reason}")
    env = result.environment
    print(f"device   {result.device}" + (f" ({env.device_name}, torch {env.torch}, triton {env.triton})" if env else ""))
    if result.cases:
        passed = sum(c.passed for c in result.cases)
        errs = [c.max_abs_error for c in result.cases if c.max_abs_error is not None]
        print(f"correct  {passed}/{len(result.cases)} shape×seed cases" + (f", max abs error {max(errs):.3g}" if errs else ""))
    if result.candidate_seconds is not None:
        what = "interpreter time" if result.device == "cpu" else "kernel time"
        print(f"timing   {result.timing_label}")
        print(f"         {what}: candidate {duration(result.candidate_seconds)}, incumbent {duration(result.incumbent_seconds)} (medians)")
        if result.launch_overhead_seconds is not None:
            print(f"         host launch overhead: {duration(result.launch_overhead_seconds)} per call (not in the kernel time)")
    v = result.verdict
    if v is not None:
        print(f"verdict  {'ACCEPTED' if v.accepted else 'rejected'}: {v.improvement:+.2%} "
              f"(CI {v.ci_low:+.2%}…{v.ci_high:+.2%}), p={v.p_value if v.p_value is not None else 'n/a'}, "
              f"{v.pairs} pairs in {v.blocks}+{v.confirmation_blocks} blocks")


def cmd_eval(args) -> int:
    from kernel_tui.core.task import load_task

    task = load_task(Path(args.task))
    candidate = _read_candidate(args.candidate)
    incumbent = _read_candidate(args.incumbent) if args.incumbent else task.baseline_source
    result = _evaluator(args, task).evaluate(candidate, incumbent)
    if args.json:
        print(result.model_dump_json())
    else:
        _print_eval(result)
    return EXIT_OK if result.status.value == "ok" else EXIT_FAILED


def cmd_compare(args) -> int:
    from kernel_tui.core.compare import compare
    from kernel_tui.core.task import load_task

    if args.runs < 1:
        raise KernelTuiError("--runs must be at least 1")
    task = load_task(Path(args.task))
    candidate, incumbent = _read_candidate(args.candidate), _read_candidate(args.incumbent)
    result = compare(_evaluator(args, task), incumbent, candidate, runs=args.runs)
    if args.json:
        print(result.model_dump_json())
        return EXIT_OK if result.status.value == "ok" else EXIT_FAILED
    print(f"status   {result.status.value}: {result.reason}")
    if result.timing_label:
        print(f"timing   {result.timing_label}")
    for r in result.runs:
        print(f"  run {r.run + 1}: incumbent {duration(r.incumbent_median)}, candidate {duration(r.candidate_median)}, "
              f"median paired improvement {r.median_paired_improvement:+.2%} ({r.method})")
    if result.speedup is not None and result.improvement_range is not None:
        lo, hi = result.improvement_range
        print(f"S        {result.speedup:.3f}x  (median of the incumbent's run medians / the candidate's)")
        print(f"paired   {result.median_paired_improvement:+.2%}  (median across runs; runs ranged {lo:+.2%}…{hi:+.2%})")
    return EXIT_OK if result.status.value == "ok" else EXIT_FAILED


def cmd_check_task(args) -> int:
    import subprocess

    from kernel_tui.core.errors import TaskError
    from kernel_tui.core.evaluator.memory import gib
    from kernel_tui.core.hardware import memory_plans
    from kernel_tui.core.task import load_task

    task = load_task(Path(args.task))
    evaluator = _evaluator(args, task)
    try:
        plans = memory_plans(evaluator)
    except TaskError:
        plans = []  # no shape the CPU can run: the check below says so
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError) as exc:  # the device's free memory unknown
        plans = []
        if not args.json:
            print(f"memory    no plan: the device's free memory could not be read ({type(exc).__name__}: {exc})")
    too_big = [p for p in plans if not p.fits]
    if too_big:  # refused before any worker runs out of memory on it
        if args.json:
            print(json.dumps({"task": task.name, "status": "evaluator_fault", "reason": too_big[0].refusal(),
                              "device": evaluator.device, "memory": [p.model_dump() for p in plans]}))
        else:
            print(f"memory    REFUSED: {too_big[0].refusal()}")
        return EXIT_FAILED
    result = evaluator.check(task.baseline_source, trusted=task.baseline_is_pytorch)
    ok = result.status.value == "ok"
    if args.json:
        print(json.dumps({
            "task": task.name, "status": result.status.value, "reason": result.reason,
            "device": result.device, "cases": [c.model_dump() for c in result.cases],
            "warnings": task.spec.coverage_warnings(), "memory": [p.model_dump() for p in plans],
            "peak_memory_bytes": result.peak_memory_bytes,
        }))
        return EXIT_OK if ok else EXIT_FAILED
    spec = task.spec
    print(f"task      {task.name}: {spec.description}")
    print(f"spec      ok: {len(spec.tensors)} tensors, entrypoint {spec.entrypoint}({', '.join(spec.launch_arguments)}), "
          f"{len(spec.all_shapes())} shapes, seeds {spec.correctness.seeds}")
    for warning in spec.coverage_warnings():
        print(f"warning   {warning}")
    if result.status.value == "invalid_task":
        print(f"reference FAILED: {result.reason}")
    else:
        shapes = ", ".join(f"{c.name} {tuple(c.dims.values())}" for c in spec.correctness_shapes(result.device))
        print(f"reference ok on {result.device}: {shapes}")
        print(f"baseline  {'ok' if ok else 'FAILED'}: {result.reason}")
        if result.peak_memory_bytes is not None:
            print(f"peak      {gib(result.peak_memory_bytes)} of device memory during the check")
    timed = {case.name for case, _ in spec.benchmark_shapes(evaluator.device)}
    for p in plans:
        if p.shape in timed:
            cold = "; one set is enough: a call's tensors are many times the L2" if p.cold_anyway else ""
            print(f"memory    {p.summary()}{cold}; timing method {spec.benchmark.timing}")
    return EXIT_OK if ok else EXIT_FAILED


def cmd_run(args) -> int:
    from kernel_tui import headless

    if args.max_steps is not None and args.max_steps < 1:
        raise KernelTuiError("--max-steps must be at least 1")
    if args.headless and not args.target:
        raise KernelTuiError("--headless needs a task directory or a workspace")
    # Bad input is refused here, as one line: before a workspace is created (a half-made one would show in
    # the picker) and before the screen opens (it would draw a dead dashboard and wait for a key).
    target = Path(args.target) if args.target else None
    workspace = Path(args.workspace) if args.workspace else None
    candidates = Path(args.candidates) if args.candidates else None
    resumed = headless.check_target(target, workspace) if target is not None else None
    headless.check_proposer(args.proposer, candidates, resumed)
    if args.device == "cuda":  # auto is resolved by the run itself, so the screen opens without waiting on it
        from kernel_tui.core import environment

        environment.resolve("cuda")
    if not args.headless:
        from kernel_tui.tui.app import run_tui

        closed = run_tui(target, device=args.device, proposer=args.proposer, candidates=candidates,
                         max_steps=args.max_steps, workspace=workspace, gpus=args.gpus)
        if closed.workspace is not None:  # the screen is gone: say how to come back to where it was
            print(resume_line(closed.workspace))
        return closed.code
    return headless.run(args)


def resume_line(workspace: Path) -> str:
    """`resume with: kernel-tui WORKSPACE`, the path as short as it can be typed from here."""
    path = workspace.absolute()
    try:
        path = path.relative_to(Path.cwd())
    except ValueError:
        pass
    return f"resume with: kernel-tui {shlex.quote(str(path))}"


def cmd_history(args) -> int:
    from kernel_tui.core.history import (
        BASE_HEADING,
        FIGURES_LEGEND,
        GATE_HEADING,
        accepted_versions,
        all_proposals,
        version_status,
    )
    from kernel_tui.core.workspace import Workspace

    ws = Workspace.open(Path(args.workspace))
    versions = all_proposals(ws) if args.all else accepted_versions(ws)
    if args.json:
        print(json.dumps([v.model_dump() for v in versions]))
        return EXIT_OK
    print(("every proposal" if args.all else "accepted versions (newest first)") + f" — {ws.root}")
    print(f"{'commit':8}  {'round':>5}  {'status':22}  {'latency':>10}  {GATE_HEADING:>12}  {BASE_HEADING:>12}  proposer / change")
    for v in versions:
        print(f"{v.commit[:8]}  {v.round if v.round is not None else '-':>5}  {version_status(v):22}  {duration(v.latency):>10}  "
              f"{percent(v.vs_previous):>12}  {percent(v.vs_baseline):>12}  {v.proposer}: {v.change}")
    print(FIGURES_LEGEND)
    return EXIT_OK


def cmd_restore(args) -> int:
    import git

    from kernel_tui.core.workspace import Workspace, person_identity

    ws = Workspace.open(Path(args.workspace))
    ws.lock()
    try:
        try:
            ws.repo.commit(args.rev)
        except (git.BadName, ValueError):
            raise KernelTuiError(f"{args.rev}: no such version in {ws.root}") from None
        _warn_unmeasured(ws, args.rev, args.force)
        person = person_identity(args.name, args.email)
        commit = ws.restore(args.rev, person)
    finally:
        ws.unlock()
    print(f"best is now {commit.hexsha[:8]}: {ws.proposal_info(commit)[0]}")
    return EXIT_OK


def _warn_unmeasured(ws, rev: str, force: bool) -> None:
    """An unmeasured version would become the incumbent every later candidate is judged against."""
    from kernel_tui.core.history import unmeasured, version_at

    why = unmeasured(version_at(ws, rev))
    if not why:
        return
    print(f"kernel-tui: warning: {rev}: {why}; as the incumbent it has no latency to compare against", file=sys.stderr)
    if not force:
        raise KernelTuiError(f"{rev}: not restored; pass --force to restore it anyway")


def cmd_report(args) -> int:
    from kernel_tui.core.report import write_report
    from kernel_tui.core.workspace import Workspace

    ws = Workspace.open(Path(args.workspace))
    for path in write_report(ws.root):
        print(path)
    return EXIT_OK


def examples(*lines: str) -> dict:
    """A subcommand's epilog of examples, printed as written."""
    return {"epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kernel-tui",
        usage="%(prog)s [TASK|WORKSPACE] [run options]\n"
              "       %(prog)s {eval,compare,run,history,restore,report,check-task,import,suite} ...",
        description="Human-in-the-loop GPU kernel optimization. `kernel-tui TASK|WORKSPACE` opens the screen on a "
                    "task directory (a new workspace) or a workspace (resumed); `kernel-tui` alone offers a list.",
        epilog="`kernel-tui TASK|WORKSPACE [options]` is `kernel-tui run TASK|WORKSPACE [options]`: "
               "see `kernel-tui run --help` for the options (--proposer, --max-steps, --device, --headless, …).",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, prog="kernel-tui")  # not the usage above

    def device(p):
        p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                       help="where candidates run; cpu = Triton's interpreter (timings are not GPU timings)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        unconfined(p)

    def unconfined(p):
        p.add_argument("--unconfined", action="store_true",
                       help="run candidates even where this machine cannot confine them (no user namespaces or "
                            "no Landlock); every result and report then says they were not confined "
                            "(KERNEL_TUI_UNCONFINED=1 does the same)")

    p = sub.add_parser("eval", help="evaluate one candidate against an incumbent (default: the baseline)",
                       **examples("kernel-tui eval --task fixtures/vector_add --candidate my_kernel.py --device cpu"))
    p.add_argument("--task", required=True, help="the task directory (holding task.json)")
    p.add_argument("--candidate", required=True, help="the candidate kernel's .py file")
    p.add_argument("--incumbent", help="the .py file it is timed against (default: the task's baseline)")
    device(p)
    p.set_defaults(func=cmd_eval, evaluates=True)

    p = sub.add_parser("compare", help="independent re-test of incumbent vs candidate in fresh processes",
                       **examples("kernel-tui compare --task fixtures/matmul --incumbent fixtures/matmul/baseline.py "
                                  "--candidate best.py --runs 5"))
    p.add_argument("--task", required=True, help="the task directory (holding task.json)")
    p.add_argument("--incumbent", required=True, help="the .py file of the version to beat")
    p.add_argument("--candidate", required=True, help="the .py file of the challenger")
    p.add_argument("--runs", type=int, default=5,
                   help="independent runs, each in fresh processes (default: %(default)s)")
    p.add_argument("--no-policy", action="store_true",
                   help="time a reference implementation (e.g. torch.add) the same way: no static or host-op policy")
    device(p)
    p.set_defaults(func=cmd_compare, evaluates=True)

    p = sub.add_parser("run", help="run rounds on a task (new workspace) or resume a workspace",
                       **examples("kernel-tui run fixtures/vector_add --proposer search --max-steps 10",
                                  "kernel-tui run workspaces/vector_add-20261202-0930 --headless --max-steps 5"))
    p.add_argument("target", nargs="?", help="a task directory or an existing workspace (none: pick one)")
    p.add_argument("--headless", action="store_true", help="no screen: auto-approve every proposal")
    p.add_argument("--proposer", choices=["search", "llm", "replay"],
                   help="who proposes candidates: search (built-in transforms), llm (the agent; needs a model "
                        "configured), replay (the files in --candidates). Default: on resume the workspace's own, "
                        "else llm if a model is configured, else search")
    p.add_argument("--candidates", help="directory of *.py candidates for --proposer replay (name order)")
    p.add_argument("--max-steps", type=int,
                   help="the workspace's total budget of rounds, rounds already run included: on resume "
                        "--max-steps 6 after 4 rounds runs 2 more (default: the task's max_rounds; on resume, the "
                        "workspace's budget)")
    p.add_argument("--workspace", help="where to create the workspace (default workspaces/<task>-<time>)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where candidates run (default: auto, the GPU if there is one); cpu = Triton's "
                        "interpreter (timings are not GPU timings)")
    p.add_argument("--gpus", help="evaluate a batch of proposals in parallel, one per GPU: all, a count (2) or "
                                  "ids (0,2); each is gated against the incumbent it was proposed from and re-gated "
                                  "after an accept (built-in search and replay; default: one GPU)")
    unconfined(p)
    p.set_defaults(func=cmd_run, evaluates=True)

    p = sub.add_parser("history", help="accepted versions of a workspace (--all: every proposal)",
                       **examples("kernel-tui history workspaces/vector_add-20261202-0930 --all"))
    p.add_argument("workspace", help="the workspace directory")
    p.add_argument("--all", action="store_true",
                   help="every proposal with its verdict (default: the accepted lineage, newest first)")
    p.add_argument("--json", action="store_true", help="print the versions as one JSON list")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("restore", help="make an old version the incumbent again (a new commit on best)",
                       **examples("kernel-tui restore workspaces/vector_add-20261202-0930 3f2a91c"))
    p.add_argument("workspace", help="the workspace directory")
    p.add_argument("rev", help="a commit (short sha) or ref")
    p.add_argument("--name", help="your name for the restore commit (default: your git identity)")
    p.add_argument("--email", help="your email for the restore commit (default: your git identity)")
    p.add_argument("--force", action="store_true", help="restore a version that was never measured (a draft, a failure)")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("report", help="write report.md and the plots of a workspace",
                       description="Writes WORKSPACE/report.md (the run: rounds, verdicts, the final re-test, the "
                                   "best source) and its figures beside it: rounds_overview.png, "
                                   "process_timeline.png, status_breakdown.png, roofline.png; prints each path "
                                   "written. A run writes them itself when it ends; this writes them again.",
                       **examples("kernel-tui report workspaces/vector_add-20261202-0930"))
    p.add_argument("workspace", help="the workspace directory")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("check-task", help="validate a task: spec, reference self-check, baseline correctness",
                       **examples("kernel-tui check-task fixtures/softmax --device cpu"))
    p.add_argument("task", help="the task directory (holding task.json)")
    device(p)
    p.set_defaults(func=cmd_check_task, evaluates=True)
    from kernel_tui.core.kernelbench.command import add_parser as add_import_parser
    from kernel_tui.core.suite.command import add_parser as add_suite_parser

    add_import_parser(sub)
    add_suite_parser(sub)
    return parser


COMMANDS = {"run", "history", "restore", "report", "eval", "compare", "check-task", "import", "suite"}


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
    except BrokenPipeError:
        # the usual recipe: output nobody reads is dropped, and the exit flush has nowhere to fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv = ["run", *argv]  # `kernel-tui TASK_OR_WORKSPACE [options]` opens the screen on it
    if not argv and sys.stdin.isatty() and sys.stdout.isatty():
        argv = ["run"]  # `kernel-tui` alone: the picker of fixtures and workspaces
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_OK
    if getattr(args, "unconfined", False):  # the flag is the variable, for this process and what it starts
        os.environ["KERNEL_TUI_UNCONFINED"] = "1"
    try:
        if getattr(args, "evaluates", False):
            from kernel_tui.core import environment

            environment.check(args.device)  # milliseconds; a missing torch or triton is named before any work
        return args.func(args)
    except KernelTuiError as exc:
        print(f"kernel-tui: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("kernel-tui: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
