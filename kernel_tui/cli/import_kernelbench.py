"""`kernel-tui import kernelbench PROBLEM.py|DIR [--out DIR] [--precision ...] [--baseline FILE] [--force]
[--start eager|inductor]`.

A directory imports every *.py problem in it, one line per problem (ok, or refused and why); one refusal
does not stop the others. Exit status: 0 all imported, 1 some refused, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernel_tui.cli.inductor import add_start_option, start_from_inductor
from kernel_tui.core.errors import KernelTuiError, TaskError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`import` with its one source so far, `kernelbench`."""
    p = subparsers.add_parser("import", help="make task directories from problems in another format")
    formats = p.add_subparsers(dest="format", required=True, parser_class=type(p), prog="kernel-tui import",
                               help="the format of the problems (kernelbench)")
    k = formats.add_parser(
        "kernelbench", help="KernelBench problems (Model, get_inputs, get_init_inputs)",
        epilog="examples:\n  kernel-tui import kernelbench KernelBench/level1/19_ReLU.py --out tasks/relu\n"
               "  kernel-tui import kernelbench KernelBench/level1 --out tasks/level1 --precision fp16",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    k.add_argument("problem", help="a problem .py file, or a directory: every *.py in it")
    k.add_argument("--out", help="the task directory (a directory of problems: the parent of one task directory "
                                 "per problem); default: ./<task name>, or ./ for a directory")
    k.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32",
                   help="dtype of the floating-point tensors, and the tolerances (default: %(default)s)")
    k.add_argument("--baseline", help="a Triton launch file to use as baseline (default: PyTorch eager, the reference)")
    k.add_argument("--force", action="store_true", help="replace a task directory that exists")
    k.add_argument("--timeout", type=float, default=300.0,
                   help="seconds each of the problem's processes may take (default: %(default)s)")
    add_start_option(k)
    k.set_defaults(func=main)
    return p


def main(args) -> int:
    from kernel_tui.core.kernelbench import import_problem, task_name

    src = Path(args.problem)
    baseline = Path(args.baseline) if args.baseline else None
    if not src.exists():
        raise KernelTuiError(f"{src}: no such file or directory")
    if src.is_file():
        done = import_problem(src, Path(args.out) if args.out else None, precision=args.precision,
                              baseline=baseline, force=args.force, timeout=args.timeout)
        print(f"ok        {src.name} -> {done.out}  dims {done.dims}")
        for note in done.notes:
            print(f"  note    {note}")
        return 0 if _started(args, done.out) else 1
    problems = sorted(src.glob("*.py"), key=_problem_order)
    if not problems:
        raise KernelTuiError(f"{src}: no *.py problem files in it")
    parent = Path(args.out) if args.out else Path(".")
    refused = 0
    for path in problems:
        try:
            done = import_problem(path, parent / task_name(path), precision=args.precision, baseline=baseline,
                                  force=args.force, timeout=args.timeout)
            print(f"ok        {path.name} -> {done.out}", flush=True)
            _started(args, done.out)  # a problem that keeps its eager start is imported all the same
        except TaskError as exc:
            refused += 1
            print(f"refused   {path.name}: {_one_line(str(exc), path)}", flush=True)
    print(f"{len(problems) - refused} of {len(problems)} imported", file=sys.stderr)
    return 0 if refused == 0 else 1


def _started(args, task_dir: Path) -> bool:
    """--start inductor: torch.compile's kernels as the start, where they are correct; True otherwise."""
    if args.start != "inductor":
        return True
    ok, line = start_from_inductor(task_dir, "auto", args.timeout * 3)
    print(line, flush=True)
    return ok


def _problem_order(path: Path) -> tuple[int, str]:
    head = path.name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, path.name)


def _one_line(message: str, path: Path) -> str:
    text = message.removeprefix(f"{path.resolve()}: ").removeprefix(f"{path}: ")
    return " ".join(text.split())
