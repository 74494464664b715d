"""Replays the *.py files of a directory in name order: for tests, and to re-run a person's candidates.

A round is named by one rule (`describe`): the summary of the file's own module docstring, else the file's
name as it is on disk. "Its own" excludes a docstring copied unchanged from the baseline or the best version,
which would name the round after another version; the docstring is read from the file's first tokens, so a
candidate that does not parse (a broken one is worth replaying too) keeps its name.
"""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from pathlib import Path

from kernel_tui.core.describe import MAX_CHARS  # a change line's length, whoever writes it: cut with …
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.proposers.base import Proposal, Proposer, ProposerContext
from kernel_tui.core.records import ProposerInfo


def docstring(source: str) -> str | None:
    """The module docstring, from the first tokens alone (so a syntax error further down does not lose it)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in skip:
                continue
            if token.type != tokenize.STRING:
                return None
            value = ast.literal_eval(token.string)
            return inspect.cleandoc(value) if isinstance(value, str) else None
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return None


def summary(doc: str | None) -> str:
    """A docstring's first paragraph on one line ("" for none): a summary wrapped over two lines stays whole."""
    first = (doc or "").strip().split("\n\n")[0]
    text = " ".join(first.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def describe(path: Path, source: str, *others: str) -> str:
    """The round's name: the summary of the file's own docstring, else its file name (`03_tiled.py`).

    others: the sources it may have been copied from (the baseline, the best version); a docstring one of
    them has too is not the file's own.
    """
    own = summary(docstring(source))
    if own and own not in {summary(docstring(other)) for other in others}:
        return own
    return path.name


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
            change = describe(path, source, context.baseline_source, context.best_source)
            return Proposal(source=source, change=change, proposer=self.info)
        return None

    def state(self) -> dict:
        return {"kind": "replay", "directory": str(self.directory.resolve()), "next": self.next}

    def restore(self, state: dict) -> None:
        self.next = int(state.get("next", 0))
