"""`kernel-tui start-from-inductor TASK_DIR`: torch.compile's own kernels as the task's Triton start, checked
for correctness on the device before they replace the start it had (kept as baseline.before-inductor.py).
`import kernelbench ... --start inductor` ends with the same step. Exit status: 0 installed, 1 the task keeps
its start (the line says why), 2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernel_tui.cli.exits import EXIT_FAILED, EXIT_OK
from kernel_tui.cli.options import add_unconfined_option, examples
from kernel_tui.core.errors import KernelTuiError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "start-from-inductor", help="make torch.compile's kernels the task's Triton start (checked first)",
        **examples("kernel-tui start-from-inductor tasks/19_ReLU",
                   "kernel-tui start-from-inductor tests/data/inductor/gelu --device cpu"))
    p.add_argument("task", help="the task directory (holding task.json)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where to compile and check; cpu = Inductor's Triton backend for the CPU, checked on "
                        "Triton's interpreter at the interpreter shapes")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds the compile may take (default: %(default)s)")
    p.add_argument("--keep-capture", metavar="FILE", type=Path,
                   help="write what torch.compile generated (its wrapper module with the kernels, the graph's "
                        "inputs, the autotuned configs) to FILE as JSON, whether or not it becomes the start")
    add_unconfined_option(p)
    p.set_defaults(func=cmd_start_from_inductor, evaluates=True)


def cmd_start_from_inductor(args) -> int:
    task_dir = Path(args.task)
    if not (task_dir / "task.json").is_file():
        raise KernelTuiError(f"{task_dir}: no task.json there")
    ok, line = start_from_inductor(task_dir, args.device, args.timeout, args.keep_capture)
    print(line)
    return EXIT_OK if ok else EXIT_FAILED


def start_from_inductor(task_dir: Path, device: str, timeout: float, keep: Path | None = None) -> tuple[bool, str]:
    """(installed, one line): capture, rewrite, install, check on the device; undone unless correct."""
    from kernel_tui.core import environment
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.inductor import Refusal
    from kernel_tui.core.inductor.start import inductor_start, install
    from kernel_tui.core.task import load_task

    device = environment.resolve(device)
    if too_big := _does_not_fit(task_dir, device):  # said before a compile of a minute or more, not after it
        return False, f"kept      {task_dir.name}: {too_big}: keep the eager start"
    try:
        start = inductor_start(task_dir, device, timeout, keep)
    except Refusal as exc:
        return False, f"kept      {task_dir.name}: {exc}"
    undo = install(task_dir, start)
    try:
        task = load_task(task_dir)
        result = Evaluator(task, device=device).check(task.baseline_source)
    except (KernelTuiError, ValueError) as exc:
        undo()
        return False, f"kept      {task_dir.name}: the rewritten start could not be checked ({exc}): keep the eager start"
    if result.status.value != "ok":
        undo()
        reason = " ".join(result.reason.split())[:240]
        return False, f"kept      {task_dir.name}: the rewritten start is {result.status.value} ({reason}): keep the eager start"
    notes = "".join(f"\n  note    {n}" for n in start.notes)
    return True, f"started   {task_dir.name}: {start.label}, correct on {device} ({len(result.cases)} cases){notes}"


def _does_not_fit(task_dir: Path, device: str) -> str | None:
    """The memory plan's refusal where one of the task's shapes cannot fit in the device memory free now, as
    the check would find it; None where all fit, or where the plan cannot be made (the check says why)."""
    import subprocess

    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.hardware import memory_plans
    from kernel_tui.core.task import load_task

    try:
        plans = memory_plans(Evaluator(load_task(task_dir), device=device))
    except (KernelTuiError, subprocess.TimeoutExpired, OSError, ValueError, IndexError):
        return None
    return next((p.refusal() for p in plans if not p.fits), None)


def add_start_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--start", choices=["eager", "inductor"], default="eager",
                   help="the task's starting point: PyTorch eager (the reference), or torch.compile's kernels "
                        "rewritten as Triton (`start-from-inductor`; the eager start stays where they fail)")
