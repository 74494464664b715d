"""The command line: `kernel-tui` and `python -m kernel_tui`. Every module that parses arguments, catches
signals or prints lines for a person lives here; the engine (kernel_tui.core) does none of it.

entry.py              `main`, the console script: bad input as one line, a reader that went away
parser.py             the top-level parser; each group of subcommands is added by its own module
options.py, exits.py  what the commands share: the one-line parser, common options, exit statuses
evaluate.py           eval, compare, check-task
run.py                run: the screen (kernel_tui.tui) or headless.py
workspace.py          history, restore, report
suite.py              suite
import_kernelbench.py import kernelbench
"""

from kernel_tui.cli.entry import main

__all__ = ["main"]
