"""The Session's events on the screen, one method per kind: log lines, the state line, the candidate pane and
the run view, through the controller's posting helpers.

Runs in the Session's thread (or the final comparison's). The core's event models are imported for types
only: the core loads in a worker, after the first paint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from kernel_tui.core.event_handler import EventHandler
from kernel_tui.tui.messages import EvalProgress, ProfileTaken
from kernel_tui.tui.view import EvalStep, PendingView

if TYPE_CHECKING:
    from kernel_tui.core import events as ev


class Controller(Protocol):
    """What the events read and call of the screen's controller (tui/controller.py), which holds these
    handlers: declared here, so that neither module imports the other's."""

    post: Callable[[Any], object]
    finalizing: bool
    pending_view: PendingView | None
    staged: str | None
    decider: Any  # person.PersonDecider | None
    proposer: Any  # person.PersonProposer | None
    ws: Any  # the Workspace, once opened
    idle_hint: str | None
    preflight_failed: str | None
    refused_edit: str | None

    @property
    def _paused(self) -> bool: ...
    def log(self, text: str, style: str = "") -> None: ...
    def show_pending(self, view: PendingView | None) -> None: ...
    def show_state(self, text: str | None = None, *, busy: bool = False) -> None: ...
    def refresh(self) -> None: ...


class ScreenEvents(EventHandler):
    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self.last_phase: tuple | None = None  # each phase of an evaluation is logged once

    def on_progress(self, e: ev.ProgressEvent) -> None:
        c, p = self.c, e.progress
        where = "final comparison" if c.finalizing else ("preflight" if e.round == 0 else f"round {e.round}")
        c.post(EvalProgress(EvalStep(where=where, phase=p.phase, k=p.k, n=p.n, block=p.block)))
        key = (where, p.phase, p.block)
        if key != self.last_phase and p.phase != "done":
            self.last_phase = key
            c.log(f"{where}: {p.phase}" + (f" (block {p.block + 1})" if p.phase not in ("policy",) else ""), "dim")

    def on_preflight(self, e: ev.PreflightEvent) -> None:
        c = self.c
        c.post(EvalProgress(None))
        c.refresh()
        pre = e.preflight
        if pre.status != "ok":
            c.preflight_failed = pre.baseline
            c.log(f"preflight failed: {pre.baseline}", "bold red")
            c.show_state(f"preflight failed: {pre.baseline} — q quits; the workspace is kept")
            return
        c.log(e.text, "green" if e.recorded_earlier else "bold")
        if c._paused:
            c.show_state("paused — space resumes · n runs one round")

    def on_round(self, e: ev.RoundStartEvent) -> None:
        c = self.c
        if c.idle_hint is not None:  # it said what to do while nothing ran: a round runs now
            c.idle_hint = None
            c.show_pending(None)
        c.show_state(f"round {e.round}: resuming" if e.resuming else "asking the proposer…", busy=True)
        if e.resuming:
            c.log(e.text)

    def on_proposal(self, e: ev.ProposalEvent) -> None:
        from kernel_tui.tui import present

        c = self.c
        c.staged = c.refused_edit = None
        auto = c.decider is not None and c.decider.auto_approve
        state = "auto-approved — evaluating" if auto else \
            "awaiting your decision — a approve · r reject · e edit · E $EDITOR · f full source"
        if e.pending.queued and not auto:
            state += f" · A approves it and the {e.pending.queued} more of this batch"
        c.show_pending(present.pending_view(e.pending, state, waiting=not auto))
        c.log(e.text, "bold")

    def on_decision(self, e: ev.DecisionEvent) -> None:
        c = self.c
        if e.decision.action == "reject":
            return  # the verdict line says it, with the reason
        c.log(e.text, "cyan")
        if c.pending_view is not None:
            edited = c.pending_view.edited
            c.show_pending(replace(c.pending_view, waiting=False, state=(
                "your revision — committed as yours, evaluating…" if edited else "approved — evaluating…")))
            c.show_state(f"round {e.round}: evaluating…", busy=True)

    def on_verdict(self, e: ev.VerdictEvent) -> None:
        from kernel_tui.tui import present

        c, ln = self.c, e.line
        style = "bold green" if ln.accepted else ("cyan" if ln.status == "rejected_by_person" else
                                                   "yellow" if ln.status == "ok" else "red")
        c.log(f"round {ln.round}: {present.verdict_word(ln)} — {ln.reason}", style)
        c.post(EvalProgress(None))
        if c.pending_view is not None and c.pending_view.round == ln.round:
            c.show_pending(replace(c.pending_view, waiting=False,
                                   state=f"verdict: {present.verdict_word(ln)} — {ln.reason}"))
        c.staged = None
        c.refresh()
        c.show_state("paused — space resumes · n runs one round" if c._paused else "next round…", busy=not c._paused)

    def on_best_changed(self, e: ev.BestChangedEvent) -> None:
        self.c.log(e.text, "bold green")

    def on_idle(self, e: ev.IdleEvent) -> None:
        from kernel_tui.tui import present

        c = self.c
        c.refresh()
        if c.ws is not None and c.proposer is not None:
            c.idle_hint = present.idle_hint(c.ws, c.proposer.info, e.text.removeprefix("idle: "), e.budget_spent)
            c.show_pending(None)
        c.show_state(f"{e.text} — " + ("" if e.budget_spent else "w write your own · ") + "c final comparison · p report")

    def on_budget(self, e: ev.BudgetEvent) -> None:
        pass  # the status line shows the rounds left, from the workspace

    def on_profile(self, e: ev.ProfileEvent) -> None:
        self.c.log(e.text)
        self.c.post(ProfileTaken(e.record.commit))

    def on_log(self, e: ev.LogEvent) -> None:
        self.c.log(e.text)

    def on_finished(self, e: ev.FinishedEvent) -> None:
        self.c.log(e.text, "bold")
