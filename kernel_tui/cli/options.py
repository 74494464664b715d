"""What the commands' parsers share: bad arguments as one line, examples in the help, common options."""

from __future__ import annotations

import argparse
from typing import NoReturn

from kernel_tui.cli.exits import EXIT_BAD_INPUT


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_BAD_INPUT, f"kernel-tui: error: {message} (see --help)\n")


def examples(*lines: str) -> dict:
    """A subcommand's epilog of examples, printed as written."""
    return {"epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def add_device_options(p: argparse.ArgumentParser) -> None:
    """--device, --json and --unconfined, as the commands that evaluate one thing take them."""
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="where candidates run; cpu = Triton's interpreter (timings are not GPU timings)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_unconfined_option(p)


def add_unconfined_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unconfined", action="store_true",
                   help="run candidates even where this machine cannot confine them (no user namespaces or "
                        "no Landlock); every result and report then says they were not confined "
                        "(KERNEL_TUI_UNCONFINED=1 does the same)")
