"""The person's side of the Session: a DecisionProvider that waits for them, and their own proposals.

`PersonDecider.decide` runs in the Session's worker thread and blocks on a threading.Event until the
person answers from the screen (approve, reject with a reason, send their edit), auto-approve is turned
on, or the run is cancelled. `PersonProposer` wraps the run's proposer: when the person has written a
candidate of their own (key w) the next round's proposal is theirs, authored by them; otherwise the
wrapped proposer is asked as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from kernel_tui.core.decision import Decision, PendingProposal
from kernel_tui.core.proposers.base import Feedback, Proposal, Proposer, ProposerContext
from kernel_tui.core.records import ProposerInfo

APPROVE = Decision(action="approve")


class PersonDecider:
    def __init__(self, on_waiting: Callable[[PendingProposal | None], None] | None = None, *, poll: float = 0.2) -> None:
        self.auto_approve = False
        self.on_waiting = on_waiting or (lambda pending: None)
        self.poll = poll
        self._lock = threading.Lock()
        self._answered = threading.Event()
        self._answer: Decision | None = None
        self._pending: PendingProposal | None = None
        self._approve_until = 0  # rounds up to this one (the rest of a batch the person approved) need no wait

    @property
    def pending(self) -> PendingProposal | None:
        return self._pending

    def decide(self, pending: PendingProposal, cancel: threading.Event) -> Decision:
        if self.auto_approve or pending.round <= self._approve_until:
            return APPROVE
        with self._lock:
            self._pending, self._answer = pending, None
            self._answered.clear()
        self.on_waiting(pending)
        try:
            while not self._answered.wait(self.poll):
                if cancel.is_set():
                    return Decision(action="reject", reason="cancelled")  # the Session sees the cancel and stops
                if self.auto_approve:
                    return APPROVE
            with self._lock:
                return self._answer or APPROVE
        finally:
            with self._lock:
                self._pending = None
            self.on_waiting(None)

    def answer(self, decision: Decision) -> bool:
        """From the UI thread. False when no proposal is waiting."""
        with self._lock:
            if self._pending is None or self._answered.is_set():
                return False
            self._answer = decision
            self._answered.set()
            return True

    def approve_batch(self) -> bool:
        """From the UI thread: approve the waiting proposal and every later one of its batch. False when no
        proposal is waiting."""
        with self._lock:
            pending = self._pending
        if pending is None:
            return False
        self._approve_until = max(self._approve_until, pending.round + pending.queued)
        return self.answer(APPROVE)

    def wake(self) -> None:
        """Cancel: `decide` returns at once (the caller has set the Session's cancel event)."""
        self._answered.set()


class PersonProposer(Proposer):
    """The run's proposer, unless the person has queued a candidate of their own for the next round.

    The draft is kept in `.work/person-draft.py` until it is committed, so a quit loses nothing. Feedback
    on a person's round is not passed to the wrapped proposer: it did not propose it (it still sees the
    verdict in the history it is given with every round).
    """

    def __init__(self, inner: Proposer, person: ProposerInfo, draft_dir: Path) -> None:
        self.inner, self.person = inner, person
        self.info = inner.info
        self.batches = inner.batches
        self.draft_path = draft_dir / "person-draft.py"
        self._draft_change = draft_dir / "person-draft.txt"
        self._person_rounds: set[int] = set()

    @property
    def on_activity(self) -> Callable[[str], None]:
        return self.inner.on_activity  # the wrapped proposer (an agent) is the one that has something to say

    @on_activity.setter
    def on_activity(self, report: Callable[[str], None]) -> None:
        self.inner.on_activity = report

    @property
    def has_draft(self) -> bool:
        return self.draft_path.exists()

    def queue(self, source: str, change: str) -> None:
        self.draft_path.parent.mkdir(parents=True, exist_ok=True)
        self._draft_change.write_text(change, encoding="utf-8")
        self.draft_path.write_text(source, encoding="utf-8")

    def propose(self, context: ProposerContext) -> Proposal | None:
        if self.has_draft:
            source = self.draft_path.read_text(encoding="utf-8")
            change = self._draft_change.read_text(encoding="utf-8") if self._draft_change.exists() else ""
            self.draft_path.unlink()
            self._draft_change.unlink(missing_ok=True)
            self._person_rounds.add(context.round)
            return Proposal(source=source, change=change.strip() or "person's candidate", proposer=self.person)
        return self.inner.propose(context)

    def feedback(self, feedback: Feedback) -> None:
        if feedback.round in self._person_rounds:
            return
        self.inner.feedback(feedback)

    def state(self) -> dict:
        return self.inner.state()

    def restore(self, state: dict) -> None:
        self.inner.restore(state)
