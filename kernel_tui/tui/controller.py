"""The bridge between the screens and the Session: it owns the Session's thread and the person's side.

Thread side (run inside Textual thread workers, see workers.py): `run` opens the workspace and hands it to
`Session.run`, the one run loop headless mode uses too, steered by a RunControl (pause, "next", cancel);
`finalize`, `report`, `restore`, `profile` and `tail_agent` are the other blocking jobs, and the history
screen's reads go through `reader` (history_reader.py). Every
result reaches the screens as a message (messages.py) carrying display state (view.py); the Session's
events do too, one method per kind (session_events.py).

UI side (called from the event loop, never blocking): approve, reject, stage_edit, write_own,
toggle_pause, next_round, toggle_auto, stop.

Nothing from the core is imported at module import (event_handler.py imports nothing): the App paints first,
the core loads in a worker.
One lock, `engine` (the RunControl's), is held by whatever moves the workspace forward (a round, the final comparison, a
restore), so none of them ever sees another's half-done state; the history reader uses its own Workspace.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from kernel_tui.tui.history_reader import HistoryReader
from kernel_tui.tui.messages import EvalProgress, LogLine, OpenFailed, PendingChanged, RunStateChanged, ViewChanged
from kernel_tui.tui.options import RunOptions
from kernel_tui.tui.session_events import ScreenEvents
from kernel_tui.tui.view import PendingView

if TYPE_CHECKING:
    from kernel_tui.core.decision import PendingProposal
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.records import ProposerInfo
    from kernel_tui.core.run_control import RunControl
    from kernel_tui.core.session import Session
    from kernel_tui.core.workspace import Workspace
    from kernel_tui.tui.person import PersonDecider, PersonProposer


class Controller:
    def __init__(self, options: RunOptions, post: Callable[[Message], object]) -> None:
        self.options, self.post = options, post
        self.cancel = threading.Event()
        self.control: RunControl | None = None  # made with the session: the core loads in a worker
        self._jobs = threading.Lock()  # one queued final comparison or restore at a time
        self._writing = threading.Lock()  # one report at a time
        self.finalizing = False
        self._reader: HistoryReader | None = None
        self.ready = threading.Event()  # the workspace is open (history and report may read it from now on)
        self.stopped = threading.Event()  # the session loop has ended: nothing may move the workspace any more
        self.ws: Workspace | None = None
        self.session: Session | None = None
        self.evaluator: Evaluator | None = None
        self.parallel: list[Evaluator] = []  # the further GPUs' evaluators (--gpus)
        self.decider: PersonDecider | None = None
        self.proposer: PersonProposer | None = None
        self.person: ProposerInfo | None = None
        self.staged: str | None = None  # the person's edit of the waiting proposal, not sent yet
        # an edit or own candidate refused before a round was spent on it (a syntax error, a rule): kept, so
        # that the next `e` or `w` opens it again to be fixed
        self.refused_edit: str | None = None
        self.refused_own: str | None = None
        self.best_source = ""
        self.state_text = "opening the workspace…"
        self.pending_view: PendingView | None = None
        self.preflight_failed: str | None = None
        # what the candidate pane says while nothing is proposed: why, and what the person can do
        self.idle_hint: str | None = None

    @property
    def engine(self) -> threading.Lock:
        assert self.control is not None
        return self.control.engine

    @property
    def _paused(self) -> bool:
        return self.control.paused if self.control is not None else self.options.paused

    # ================================================================================================
    # thread side
    # ================================================================================================
    def run(self) -> None:
        """The session worker: open, preflight, then rounds until cancelled. Unlocks the workspace at the end."""
        from kernel_tui.core.errors import KernelTuiError

        try:
            try:
                self._open()
            except KernelTuiError as exc:
                self.post(OpenFailed(str(exc)))
                self.show_state(f"cannot open: {exc}")
                return
            self._loop()
        except Exception as exc:
            self.show_state(f"rounds stopped by an error ({type(exc).__name__}); the workspace is intact — q quits")
            raise  # the App's worker handler shows it
        finally:
            self._close()

    def _open(self) -> None:
        from kernel_tui.core.errors import KernelTuiError
        from kernel_tui.core.opening import evaluators_for, make_proposer, open_or_create
        from kernel_tui.core.run_control import RunControl
        from kernel_tui.core.session import Session
        from kernel_tui.core.workspace import person_identity
        from kernel_tui.tui.person import PersonDecider, PersonProposer

        opts = self.options
        if opts.target is None:
            raise KernelTuiError("no task or workspace given")
        ws = open_or_create(Path(opts.target), Path(opts.workspace) if opts.workspace else None)
        ws.lock()
        try:
            evaluator, *parallel = evaluators_for(ws, opts.device, opts.gpus, self.cancel)
            self.parallel = parallel
            inner = opts.proposer if hasattr(opts.proposer, "propose") else make_proposer(
                opts.proposer, Path(opts.candidates) if opts.candidates else None, ws, evaluator, opts.agent_settings(ws))
            person = self.person = opts.person or person_identity()
            proposer = self.proposer = PersonProposer(inner, person, ws.root / ".work")
            decider = self.decider = PersonDecider(on_waiting=self._on_waiting)
            decider.auto_approve = opts.auto_approve
            self.control = RunControl(cancel=self.cancel, paused=opts.paused, stay_when_idle=True)
            self.session = Session(ws, evaluator, proposer, decider, max_steps=opts.max_steps,
                                   cancel=self.cancel, on_event=ScreenEvents(self).handle, parallel=parallel)
        except BaseException:
            ws.unlock()
            raise
        self.ws, self.evaluator = ws, evaluator
        self._reader = HistoryReader(ws.root, self.profiles_off)
        self.log(f"workspace {ws.root.name}: task {ws.task.name}, device {evaluator.device}, "
                  f"proposer {inner.info.name}", "bold")
        self.refresh()
        self.ready.set()

    def _loop(self) -> None:
        assert self.session is not None and self.control is not None
        self.show_state("preflight: reference self-check and baseline correctness…", busy=True)
        self.session.run(self.control)  # returns when cancelled (it stays when idle), or the preflight failed
        if self.preflight_failed is not None:
            self.cancel.wait()  # keep the failure on screen, and the workspace locked, until the person quits

    def _close(self) -> None:
        self.stopped.set()
        # a final comparison or restore in flight ends on cancel
        control = self.control
        got = control.engine.acquire(timeout=60) if control is not None else False
        try:
            for ev in ([self.evaluator] if self.evaluator is not None else []) + self.parallel:
                ev.close()
            if self.ws is not None:
                self.ws.unlock()
        finally:
            if got and control is not None:
                control.engine.release()

    def _acquire_engine(self, what: str) -> bool:
        if self.engine.acquire(blocking=False):
            return True
        self.log(f"{what}: {self.waits_for()}", "yellow")
        self.show_state(f"{what}: {self.waits_for()}")
        while not self.cancel.is_set():
            if self.engine.acquire(timeout=0.25):
                return True
        return False

    @contextmanager
    def _engine_job(self, what: str) -> Iterator[bool]:
        """A job that moves the workspace or needs the GPU alone (final comparison, restore, profile): one
        queued at a time; rounds pause; it waits for the round in flight. Yields False when it cannot run."""
        self._require_ready(moving=True)
        if not self._jobs.acquire(blocking=False):
            self.log("a final comparison, restore or profile is already queued", "yellow")
            yield False
            return
        try:
            self.pause()
            if not self._acquire_engine(what):
                yield False
                return
            try:
                yield True
            finally:
                self.engine.release()
                self.post(EvalProgress(None))
        finally:
            self._jobs.release()

    def finalize(self) -> None:
        """Key c: the final re-test of baseline vs best, run_summary.json, agent-status.json."""
        with self._engine_job("final comparison") as ready:
            if not ready:
                return
            assert self.session is not None and self.control is not None
            self.finalizing = True
            try:
                self.show_state("final comparison: baseline vs best in fresh processes…", busy=True)
                stopped = None if self.control.idle else "the person ran the final comparison"
                summary = self.session.finalize(stopped)
            finally:
                self.finalizing = False
            if summary is None:  # quit or cancelled mid re-test: the earlier records are kept as they were
                self.log("final comparison stopped before it finished: no summary written", "yellow")
                self.show_state("final comparison stopped — nothing was written")
                return
            self.log(f"summary: {summary.accepted} accepted of {summary.rounds} rounds; best "
                      f"{summary.best_commit[:8]}" + (f"; {summary.final_s()}" if summary.final_speedup is not None else ""),
                      "bold")
            self.refresh()
        self.show_state("final comparison done — p writes the report · n runs another round")

    def report(self) -> list[Path]:
        """Key p: report.md and the figures, from the workspace's records (read only: no engine lock)."""
        self._require_ready()
        from kernel_tui.core.report import write_report

        assert self.ws is not None
        if not self._writing.acquire(blocking=False):
            self.log("the report is already being written", "yellow")
            return []
        try:
            self.log("writing the report…", "dim")
            written = write_report(self.ws.root)
        finally:
            self._writing.release()
        self.log("report: " + ", ".join(p.name for p in written), "bold")
        return written

    def restore(self, rev: str, *, start: bool = False) -> tuple[str, str]:
        """History: make an old version the incumbent again (r), or a correct Triton version the starting point
        by the person's choice (b): a new commit on `best` by the person, which pauses the run. Returns the new
        best's sha ("" when nothing was done) and what happened, in words."""
        from kernel_tui.core.history import current_best, restore_version, start_from, version_label
        from kernel_tui.tui import present

        with self._engine_job("start from this version" if start else "restore") as ready:
            if not ready:
                return "", ""
            assert self.ws is not None and self.person is not None
            commit = (start_from if start else restore_version)(self.ws, rev, self.person).hexsha
            left = self.session is None or self.session.remaining > 0
            log, notice, pane = present.restored_words(self.ws, commit, left)
            self.log(log, "bold cyan")
            self.idle_hint = pane  # nothing is waiting: the engine was free
            self.show_pending(None)
            self.refresh()
            self.show_state(f"paused — best is now {commit[:8]} ({version_label(current_best(self.ws))}) · "
                        + ("n runs one round · space resumes" if left else "budget spent: c final comparison · p report"))
        return commit, notice

    def waits_for(self) -> str:
        """What a job that needs the workspace alone (final comparison, restore) waits for, in words."""
        pending = self.waiting
        if pending is not None:
            return (f"waits for your decision on round {pending.round} (a approve · r reject), then runs")
        return "waits for the round in flight to end, then runs"

    def profile(self, rev: str) -> None:
        """Profile a version now with Nsight Compute: the GPU is the rounds' too, so they pause for it. Where
        this session cannot profile, it says why and nothing pauses."""
        off = self.profiles_off()
        if off is not None:
            self.log(f"no profile of {rev[:8]}: {off}", "yellow")
            return
        with self._engine_job("profile") as ready:
            if not ready:
                return
            assert self.session is not None
            self.show_state(f"profiling {rev[:8]} with Nsight Compute…", busy=True)
            record = self.session.profile_version(rev)
            self.show_state("profile done — space resumes" if record is not None else "no profile — see the log")

    def profiles_off(self) -> str | None:
        """Why this session cannot profile, in words; None where it can."""
        return self.session.profiles_off() if self.session is not None else None

    @property
    def reader(self) -> HistoryReader:
        """The history screen's reads (versions, a detail, a profile view), once the workspace is open."""
        self._require_ready()
        assert self._reader is not None
        return self._reader

    def tail_agent(self) -> None:
        """Stream the agent's model-messages.jsonl and tool-calls.jsonl into the log as they grow."""
        from kernel_tui.tui import agentlog

        try:  # the agent proposer's own names (it imports litellm only on its first model call)
            from kernel_tui.core.proposers.llm import MESSAGES_FILE, TOOL_CALLS_FILE
        except ImportError:
            MESSAGES_FILE, TOOL_CALLS_FILE = agentlog.MESSAGES_FILE, agentlog.TOOL_CALLS_FILE
        while not self.ready.wait(0.25):
            if self.cancel.is_set():
                return
        assert self.ws is not None
        agentlog.follow(self.ws.root, lambda text: self.log(text, "magenta"), self.cancel,
                        self.options.tail_interval, (MESSAGES_FILE, TOOL_CALLS_FILE))

    def _require_ready(self, *, moving: bool = False) -> None:
        from kernel_tui.core.errors import KernelTuiError

        if not self.ready.is_set():
            raise KernelTuiError("the workspace is not open yet")
        if moving and self.stopped.is_set():
            raise KernelTuiError("the session has stopped (see the log); reopen the workspace to continue")

    def _on_waiting(self, pending: PendingProposal | None) -> None:
        if pending is not None:
            batch = f" · {pending.queued} more of this batch wait (A approves them all)" if pending.queued else ""
            self.show_state(f"round {pending.round}: awaiting your decision{batch}", busy=False)

    # --- posting (here and in session_events.py, the Session's events) ------------------------------------
    def show_pending(self, view: PendingView | None) -> None:
        self.pending_view = view
        self.post(PendingChanged(view))

    def log(self, text: str, style: str = "") -> None:
        self.post(LogLine(text, style))

    def show_state(self, text: str | None = None, *, busy: bool = False) -> None:
        if text is not None:
            self.state_text = text
        auto = self.decider.auto_approve if self.decider is not None else self.options.auto_approve
        self.post(RunStateChanged(self.state_text, paused=self._paused, auto_approve=auto, busy=busy))

    def refresh(self) -> None:
        """Rebuild the whole run view from the workspace (in the calling worker thread)."""
        from kernel_tui.tui import present
        from kernel_tui.tui.view import RunView

        ws, session = self.ws, self.session
        if ws is None or session is None or self.evaluator is None or self.proposer is None or self.decider is None:
            return
        lines = ws.trajectory()
        device = self.evaluator.device
        best = present.best_view(ws, device)
        self.best_source = best.source
        status = present.status_view(
            ws, device, self.proposer.info, len(lines), session.state.max_steps,
            auto_approve=self.decider.auto_approve, paused=self._paused, state=self.state_text,
        )
        self.post(ViewChanged(RunView(task=ws.task.name, workspace=ws.root.name, best=best,
                                      rows=present.rows(lines), charts=present.charts(ws, lines, device),
                                      status=status, baseline_commit=ws.baseline.hexsha)))

    # ================================================================================================
    # UI side: called from the event loop; never blocks. Returns a message for the person, or None.
    # ================================================================================================
    @property
    def waiting(self) -> PendingProposal | None:
        return self.decider.pending if self.decider is not None else None

    def approve(self) -> str | None:
        from kernel_tui.core.decision import Decision

        pending = self.waiting
        if pending is None:
            return "no proposal is waiting for a decision"
        if self.staged is not None:
            decision = Decision(action="edit", source=self.staged, person=self.person)
        else:
            decision = Decision(action="approve")
        assert self.decider is not None  # a proposal is waiting: the decider exists
        if not self.decider.answer(decision):
            return "the proposal was already decided"
        self.staged = None
        return None

    def approve_batch(self) -> str | None:
        """Key A: the waiting proposal and the rest of its batch go to the evaluators."""
        pending = self.waiting
        if pending is None:
            return "no proposal is waiting for a decision"
        if self.staged is not None:
            return "your edit is staged: a sends it (A would approve the proposal without it)"
        assert self.decider is not None  # a proposal is waiting: the decider exists
        if not self.decider.approve_batch():
            return "the proposal was already decided"
        return None

    def reject(self, reason: str) -> str | None:
        from kernel_tui.core.decision import Decision

        if self.waiting is None:
            return "no proposal is waiting for a decision"
        reason = " ".join(reason.split())
        if not reason:  # the reason is what the proposer learns from: an empty one teaches it nothing
            return "say why: the reason goes back to the proposer"
        assert self.decider is not None  # a proposal is waiting: the decider exists
        if not self.decider.answer(Decision(action="reject", reason=reason)):
            return "the proposal was already decided"
        self.staged = None
        return None

    def editable_source(self) -> str | None:
        """What `e`/`E` open: the person's edit so far, else the waiting proposal."""
        pending = self.waiting
        if pending is None:
            return None
        if self.refused_edit is not None:
            return self.refused_edit
        return self.staged if self.staged is not None else pending.source

    def own_draft(self) -> str:
        """What `w` opens: an own candidate refused before its round, else the current best."""
        return self.refused_own if self.refused_own is not None else self.best_source

    def _refusal(self, source: str) -> str | None:
        """Why `source` would fail before it ran (a syntax error, a rule of the policy), in one line: said
        before a round is spent on it, as the evaluator would say it after."""
        from kernel_tui.core.evaluator.evaluator import policy_rejection

        if self.ws is None or self.evaluator is None:
            return None
        rejected = policy_rejection(self.ws.task, source, "cuda" if self.evaluator.device == "cuda" else "cpu")
        return None if rejected is None else rejected.reason

    def stage_edit(self, source: str) -> str | None:
        from kernel_tui.tui import present

        pending = self.waiting
        if pending is None:
            return "no proposal is waiting for a decision; the edit was not kept"
        if source == pending.source:
            self.staged = self.refused_edit = None
            self.show_pending(present.pending_view(pending, "unchanged — awaiting your decision"))
            return "no change to the proposal"
        if (why := self._refusal(source)) is not None:
            self.refused_edit = source
            return f"edit not sent, no round spent: {why} — e opens your edit again"
        self.staged, self.refused_edit = source, None
        self.show_pending(present.edited_view(pending, source))
        return None

    def write_own(self, source: str, change: str) -> str | None:
        if self.proposer is None or self.control is None:
            return "the workspace is not open yet"
        if self.session is not None and self.session.remaining <= 0:
            return "the budget is spent: no more rounds"
        if source.rstrip() == self.best_source.rstrip():
            return "identical to the current best: a round would measure best against itself"
        if (why := self._refusal(source)) is not None:
            self.refused_own = source
            return f"not queued, no round spent: {why} — w opens your candidate again"
        self.refused_own = None
        self.proposer.queue(source, change)
        self.control.one_round()  # paused or idle: run it now; running: it is the next round anyway
        self.log(f"your candidate is queued: {change}", "cyan")
        return None

    def pause(self) -> None:
        if self.control is not None:
            self.control.pause()
        self.show_state()

    def toggle_pause(self) -> bool:
        if self.control is None:
            self.options.paused = not self.options.paused
            return self.options.paused
        paused = self.control.toggle_pause(may_resume_idle=self.session is None or self.session.remaining > 0)
        self.show_state()
        return paused

    def next_round(self) -> str | None:
        if self.session is not None and self.session.remaining <= 0:
            return "the budget is spent: no more rounds"
        if self.control is None:
            return "the workspace is not open yet"
        if not self.control.one_round():
            return "rounds are already running (space pauses)"
        return None

    def toggle_auto(self) -> bool:
        on = not (self.decider.auto_approve if self.decider else self.options.auto_approve)
        self.options.auto_approve = on
        if self.decider is not None:
            self.decider.auto_approve = on  # a proposal waiting now is approved at once
        self.show_state()
        return on

    def stop(self) -> None:
        """Quit: the Session's cancel event is set, a waiting decision wakes, the loop ends and unlocks."""
        self.cancel.set()
        if self.decider is not None:
            self.decider.wake()
        if self.control is not None:
            self.control.stop()
