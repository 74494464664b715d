"""The run: best source, the candidate, live charts, the trajectory, the log, progress and status."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, RichLog

from kernel_tui.tui.messages import EvalProgress, LogLine, OpenFailed, PendingChanged, RunStateChanged, ViewChanged
from kernel_tui.tui.screens.modals import EditScreen, ReasonModal
from kernel_tui.tui.widgets.charts import ImprovementChart, LatencyChart, StatusChart
from kernel_tui.tui.widgets.run import EvalBar, StatusLine, TrajectoryTable
from kernel_tui.tui.widgets.source import BestPane, CandidatePane

if TYPE_CHECKING:
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.view import RunView


class MainScreen(Screen):
    AUTO_FOCUS = "#trajectory"
    BINDINGS = [
        Binding("a", "approve", "Approve", id="approve"),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding("E", "edit_external", "$EDITOR", id="edit-external"),
        Binding("w", "write_own", "Write own", id="write-own"),
        Binding("n", "next_round", "Next", id="next-round"),
        Binding("space", "toggle_pause", "Pause", id="pause"),
        Binding("t", "toggle_auto", "Auto", id="auto-approve"),
        Binding("f", "toggle_full", "Full src", id="full-source"),
        Binding("h", "history", "History", id="history"),
        Binding("c", "finalize", "Compare", id="final-comparison"),
        Binding("p", "report", "Report", id="report"),
    ]

    def __init__(self, controller: Controller) -> None:
        super().__init__(id="main")
        self.controller = controller
        self.run_view: RunView | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="top"):
            yield BestPane(id="best")
            yield CandidatePane(id="candidate")
        with Horizontal(id="charts"):
            yield LatencyChart(id="latency-chart")
            yield ImprovementChart(id="improvement-chart")
            yield StatusChart(id="status-chart")
        with Horizontal(id="bottom"):
            yield TrajectoryTable(id="trajectory")
            yield RichLog(id="log", wrap=True, markup=False, max_lines=2000, min_width=20)
        yield EvalBar(id="eval")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#trajectory").border_title = "trajectory"
        self.query_one("#log").border_title = "log"
        self.call_after_refresh(self.app.painted)  # type: ignore[attr-defined]
        self.app.run_session(self.controller)  # type: ignore[attr-defined]
        self.app.follow_agent(self.controller)  # type: ignore[attr-defined]

    # --- state from the controller ---------------------------------------------------------------------
    @on(ViewChanged)
    def _view(self, message: ViewChanged) -> None:
        v = self.run_view = message.view
        self.app.sub_title = f"{v.task} · {v.workspace}"
        self.query_one(BestPane).show(v.best)
        self.query_one(TrajectoryTable).show(v.rows)
        for chart in (LatencyChart, ImprovementChart, StatusChart):
            self.query_one(chart).set_data(v.charts)
        status = self.query_one(StatusLine)
        status.show(v.status)
        status.auto, status.paused = v.status.auto_approve, v.status.paused

    @on(PendingChanged)
    def _pending(self, message: PendingChanged) -> None:
        self.query_one(CandidatePane).show(message.pending)

    @on(RunStateChanged)
    def _state(self, message: RunStateChanged) -> None:
        self.query_one(EvalBar).state = message.text
        status = self.query_one(StatusLine)
        status.paused, status.auto = message.paused, message.auto_approve

    @on(LogLine)
    def _log(self, message: LogLine) -> None:
        self.query_one(RichLog).write(Text(message.text, style=message.style))

    @on(EvalProgress)
    def _progress(self, message: EvalProgress) -> None:
        self.query_one(EvalBar).show(message.step)

    @on(OpenFailed)
    def _open_failed(self, message: OpenFailed) -> None:
        self.app.open_error = message.error  # type: ignore[attr-defined]
        self.query_one(RichLog).write(Text(f"cannot open: {message.error}", style="bold red"))
        self.notify(message.error, title="cannot open", severity="error", timeout=15)

    # --- the person's actions --------------------------------------------------------------------------
    def _say(self, problem: str | None, done: str = "") -> None:
        if problem:
            self.notify(problem, severity="warning")
        elif done:
            self.notify(done)

    def action_approve(self) -> None:
        staged = self.controller.staged is not None
        self._say(self.controller.approve(), "your revision goes to the evaluator" if staged else "approved")

    def action_reject(self) -> None:
        pending = self.controller.waiting
        if pending is None:
            self._say("no proposal is waiting for a decision")
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self._say(self.controller.reject(reason), "rejected; the reason goes back to the proposer")

        self.app.push_screen(ReasonModal(f"Reject round {pending.round}: {pending.change}"), done)

    def action_edit(self) -> None:
        source = self.controller.editable_source()
        if source is None:
            self._say("no proposal is waiting for a decision")
            return
        pending = self.controller.waiting

        def done(result: tuple[str, str] | None) -> None:
            if result is not None:
                self._say(self.controller.stage_edit(result[0]), "edit kept: a sends it for evaluation as yours")

        self.app.push_screen(EditScreen(source, f"Edit round {pending.round}: {pending.change}"), done)

    def action_edit_external(self) -> None:
        source = self.controller.editable_source()
        if source is None:
            self._say("no proposal is waiting for a decision")
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.TemporaryDirectory(prefix="kernel-tui-edit-") as tmp:
            path = Path(tmp) / "kernel.py"
            path.write_text(source, encoding="utf-8")
            try:
                with self.app.suspend():
                    subprocess.run([*shlex.split(editor), str(path)], check=False)
            except SuspendNotSupported:
                self._say("this terminal cannot hand over to $EDITOR; use e to edit in place")
                return
            except OSError as exc:
                self._say(f"{editor}: {exc}")
                return
            edited = path.read_text(encoding="utf-8")
        self._say(self.controller.stage_edit(edited), "edit kept: a sends it for evaluation as yours")

    def action_write_own(self) -> None:
        start = self.controller.best_source
        if not start:
            self._say("the workspace is not open yet")
            return

        def done(result: tuple[str, str] | None) -> None:
            if result is not None:
                self._say(self.controller.write_own(*result), "your candidate is the next round's proposal")

        self.app.push_screen(EditScreen(start, "Your own candidate, starting from best", ask_change=True), done)

    def action_next_round(self) -> None:
        self._say(self.controller.next_round(), "next round")

    def action_toggle_pause(self) -> None:
        paused = self.controller.toggle_pause()
        self.notify("paused after the round in flight" if paused else "resumed")

    def action_toggle_auto(self) -> None:
        on_ = self.controller.toggle_auto()
        self.notify("auto-approve on: proposals go straight to the evaluator" if on_ else "auto-approve off")

    def action_toggle_full(self) -> None:
        self.query_one(CandidatePane).toggle_full()

    def action_history(self) -> None:
        from kernel_tui.tui.screens.history import HistoryScreen

        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        self.app.push_screen(HistoryScreen(self.controller))

    def action_finalize(self) -> None:
        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        self.notify("final comparison: pauses rounds, runs when no round is in flight")
        self.app.run_finalize(self.controller)  # type: ignore[attr-defined]

    def action_report(self) -> None:
        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        self.app.write_report(self.controller)  # type: ignore[attr-defined]
