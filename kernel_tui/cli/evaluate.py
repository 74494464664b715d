"""`kernel-tui eval`, `compare` and `check-task`: one candidate (or the task itself) through the evaluator,
printed as aligned lines or one JSON object."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernel_tui.cli.exits import EXIT_FAILED, EXIT_OK
from kernel_tui.cli.options import add_device_options, examples
from kernel_tui.core.errors import CandidateError, KernelTuiError
from kernel_tui.core.format import duration


def add_measure_parsers(sub) -> None:
    """`eval` and `compare`."""
    p = sub.add_parser("eval", help="evaluate one candidate against an incumbent (default: the baseline)",
                       **examples("kernel-tui eval --task fixtures/vector_add --candidate my_kernel.py --device cpu"))
    p.add_argument("--task", required=True, help="the task directory (holding task.json)")
    p.add_argument("--candidate", required=True, help="the candidate kernel's .py file")
    p.add_argument("--incumbent", help="the .py file it is timed against (default: the task's baseline)")
    add_device_options(p)
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
    add_device_options(p)
    p.set_defaults(func=cmd_compare, evaluates=True)


def add_check_task_parser(sub) -> None:
    p = sub.add_parser("check-task", help="validate a task: spec, reference self-check, baseline correctness",
                       **examples("kernel-tui check-task fixtures/softmax --device cpu"))
    p.add_argument("task", help="the task directory (holding task.json)")
    add_device_options(p)
    p.set_defaults(func=cmd_check_task, evaluates=True)


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
        print(f"S        {result.score:.3f}x{result.shapes_text()}  (median of the incumbent's run medians / the candidate's)")
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
