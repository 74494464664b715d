"""The person's decision on a proposal, before it reaches the evaluator.

The Session asks a DecisionProvider; the TUI answers with a person, headless mode with a policy. Three
answers: approve, reject (the reason goes back to the proposer), or edit (the edited source is committed,
authored by the person, then evaluated).
"""

from __future__ import annotations

import difflib
import threading
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.records import ProposerInfo


class PendingProposal(BaseModel):
    model_config = ConfigDict(frozen=True)
    round: int
    commit: str
    change: str
    proposer: ProposerInfo
    source: str
    best_source: str
    best_commit: str
    queued: int = 0  # proposals of the same batch that wait for a decision after this one
    queue: tuple[str, ...] = ()  # those proposals, "round N: change", in the order they come

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.best_source.splitlines(keepends=True), self.source.splitlines(keepends=True),
            fromfile=f"best ({self.best_commit[:8]})", tofile=f"round {self.round} ({self.commit[:8]})",
        ))


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)
    action: Literal["approve", "reject", "edit"]
    reason: str = ""
    source: str | None = None  # the edited source, for "edit"
    person: ProposerInfo | None = None


class DecisionProvider(Protocol):
    def decide(self, pending: PendingProposal, cancel: threading.Event) -> Decision: ...


class AutoApprove:
    """Headless mode: every proposal goes to the evaluator."""

    def decide(self, pending: PendingProposal, cancel: threading.Event) -> Decision:
        return Decision(action="approve")
