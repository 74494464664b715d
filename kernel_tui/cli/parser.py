"""The `kernel-tui` parser: the top level, its usage and help; each group of subcommands is added by the
module that runs it, in the order the help lists them."""

from __future__ import annotations

import argparse

from kernel_tui.cli import evaluate, import_kernelbench, inductor, run, suite, workspace
from kernel_tui.cli.options import Parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kernel-tui",
        usage="%(prog)s [TASK|WORKSPACE] [run options]\n"
              "       %(prog)s {eval,compare,run,history,restore,report,check-task,import,start-from-inductor,suite} ...",
        description="Human-in-the-loop GPU kernel optimization. `kernel-tui TASK|WORKSPACE` opens the screen on a "
                    "task directory (a new workspace) or a workspace (resumed); `kernel-tui` alone offers a list.",
        epilog="`kernel-tui TASK|WORKSPACE [options]` is `kernel-tui run TASK|WORKSPACE [options]`: "
               "see `kernel-tui run --help` for the options (--proposer, --max-steps, --device, --headless, …).",
    )
    sub = parser.add_subparsers(dest="command", parser_class=Parser, prog="kernel-tui")  # not the usage above
    evaluate.add_measure_parsers(sub)  # eval, compare
    run.add_parser(sub)
    workspace.add_parsers(sub)  # history, restore, report
    evaluate.add_check_task_parser(sub)
    import_kernelbench.add_parser(sub)
    inductor.add_parser(sub)
    suite.add_parser(sub)
    return parser
