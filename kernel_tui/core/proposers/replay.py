"""Replays the *.py files of a directory in name order: for tests, and to re-run a person's candidates."""

from __future__ import annotations

import ast
from pathlib import Path

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.proposers.base import Proposal, Proposer, ProposerContext
from kernel_tui.core.records import ProposerInfo


def describe(path: Path, source: str) -> str:
    """The change text: the module docstring's first line, else the file name."""
    try:
        doc = ast.get_docstring(ast.parse(source))
    except SyntaxError:
        doc = None
    return doc.strip().splitlines()[0] if doc else path.stem.replace("_", " ")


class ReplayProposer(Proposer):
    batches = True

    def __init__(self, directory: Path) -> None:
        directory = Path(directory)
        if not directory.is_dir():
            raise KernelTuiError(f"{directory}: --candidates must be a directory of *.py files")
        self.files = sorted(directory.glob("*.py"))
        if not self.files:
            raise KernelTuiError(f"{directory}: holds no *.py candidates")
        self.directory = directory
        self.next = 0
        self.info = ProposerInfo(kind="replay", name=f"replay of {directory.name}")

    def propose(self, context: ProposerContext) -> Proposal | None:
        while self.next < len(self.files):
            path = self.files[self.next]
            self.next += 1
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # an unreadable file is skipped, the rest still replays
            return Proposal(source=source, change=describe(path, source), proposer=self.info)
        return None

    def state(self) -> dict:
        return {"kind": "replay", "directory": str(self.directory.resolve()), "next": self.next}

    def restore(self, state: dict) -> None:
        self.next = int(state.get("next", 0))
