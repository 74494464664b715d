"""What a Session tells its front end, one model per kind of event.

Front ends dispatch on `kind`, one method per kind (event_handler.py), and read typed fields; `text` is only
the line a plain renderer prints, never something to search for meaning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.decision import Decision, PendingProposal
from kernel_tui.core.evaluator import Progress
from kernel_tui.core.profile.store import ProfileRecord
from kernel_tui.core.records import Preflight, RunSummary, TrajectoryLine


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str
    round: int = 0
    text: str = ""


class LogEvent(Event):
    kind: Literal["log"] = "log"


class PreflightEvent(Event):
    kind: Literal["preflight"] = "preflight"
    preflight: Preflight
    recorded_earlier: bool = False  # taken from preflight.json rather than run now


class RoundStartEvent(Event):
    """A round begins: a new proposal is asked for, or a committed one is resumed."""

    kind: Literal["round"] = "round"
    resuming: bool = False


class ProposalEvent(Event):
    kind: Literal["proposal"] = "proposal"
    pending: PendingProposal


class DecisionEvent(Event):
    kind: Literal["decision"] = "decision"
    decision: Decision


class ProgressEvent(Event):
    kind: Literal["progress"] = "progress"
    progress: Progress


class VerdictEvent(Event):
    kind: Literal["verdict"] = "verdict"
    line: TrajectoryLine


class ProfileEvent(Event):
    """A version was profiled (or its profile failed: `record.reason` says why)."""

    kind: Literal["profile"] = "profile"
    record: ProfileRecord


class BestChangedEvent(Event):
    kind: Literal["best_changed"] = "best_changed"
    line: TrajectoryLine


class BudgetEvent(Event):
    kind: Literal["budget"] = "budget"
    used: int
    total: int


class IdleEvent(Event):
    """No round can start: the budget is spent or the proposer has nothing more."""

    kind: Literal["idle"] = "idle"
    budget_spent: bool


class FinishedEvent(Event):
    kind: Literal["finished"] = "finished"
    summary: RunSummary
