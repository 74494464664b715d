"""`main`, the console script: the subcommand run, bad input as one line on stderr (never a traceback), and a
reader of stdout that went away (`| head`) as the exit status a shell expects. Exit statuses: exits.py.
"""

from __future__ import annotations

import os
import sys

from kernel_tui.cli.exits import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_OK
from kernel_tui.cli.parser import build_parser
from kernel_tui.core.errors import KernelTuiError

COMMANDS = {"run", "history", "restore", "report", "eval", "compare", "check-task", "import", "start-from-inductor", "suite"}


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
