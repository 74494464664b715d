"""The run: best source, the candidate, live charts, the trajectory, the log, progress and status.

When the terminal is too small for every pane at once, one pane is shown at a time: 1-5 switch (a strip
under the header names them). On a large one every pane is shown and the same keys focus one.
"""

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
from textual.widget import Widget
from textual.widgets import Header

from kernel_tui.tui.messages import (
    EvalProgress,
    LogLine,
    OpenFailed,
    PendingChanged,
    ProfileTaken,
    RunStateChanged,
    ViewChanged,
)
from kernel_tui.tui.screens.modals import EditScreen, ReasonModal, same_code
from kernel_tui.tui.widgets.charts import ImprovementChart, LatencyChart, StatusChart
from kernel_tui.tui.widgets.footer import KeyFooter, Tiers
from kernel_tui.tui.widgets.log import LogPane
from kernel_tui.tui.widgets.panes import PaneTabs
from kernel_tui.tui.widgets.run import EvalBar, StatusLine, TrajectoryPane
from kernel_tui.tui.widgets.source import BestPane, CandidatePane

if TYPE_CHECKING:
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.view import RunView


PANES = ("best", "candidate", "charts", "trajectory", "log")  # keys 1-5, in the order they sit on a large screen
PANE_GROUP = Binding.Group("Panes", compact=True)
# Every pane fits from this size up; below it, one pane at a time.
FULL_WIDTH, FULL_HEIGHT = 110, 34
# Footer keys left out below a width (they still work; ? lists every key), most dispensable first.
FOOTER_TIERS: Tiers = ((150, frozenset({"edit_external", "next_round", "toggle_full", "profile"})),
                       (120, frozenset({"finalize", "report"})),
                       (100, frozenset({"toggle_auto", "history"})))


def fits_every_pane(width: int, height: int) -> bool:
    return width >= FULL_WIDTH and height >= FULL_HEIGHT


def pane_binding(index: int, name: str) -> Binding:
    return Binding(str(index + 1), f"show_pane('{name}')", name, id=f"pane-{name}", group=PANE_GROUP)


class MainScreen(Screen):
    BINDINGS = [
        Binding("a", "approve", "Approve", id="approve"),
        Binding("A", "approve_batch", "Approve batch", id="approve-batch", show=False),
        Binding("r", "reject", "Reject", id="reject"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding("E", "edit_external", "$EDITOR", id="edit-external"),
        Binding("w", "write_own", "Write own", id="write-own"),
        *(pane_binding(i, name) for i, name in enumerate(PANES)),
        Binding("n", "next_round", "Next", id="next-round"),
        Binding("space", "toggle_pause", "Pause", id="pause"),
        Binding("t", "toggle_auto", "Auto", id="auto-approve"),
        Binding("f", "toggle_full", "Full src", id="full-source"),
        Binding("h", "history", "History", id="history"),
        Binding("i", "profile", "Profile", id="profile"),
        Binding("c", "finalize", "Compare", id="final-comparison"),
        Binding("p", "report", "Report", id="report"),
    ]

    def __init__(self, controller: Controller) -> None:
        super().__init__(id="main")
        self.controller = controller
        self.run_view: RunView | None = None
        self.pane = "candidate"  # the pane shown when they do not all fit (and focused when they do)
        self.compact = False

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield PaneTabs(id="pane-tabs")
        with Horizontal(id="top", classes="pane-group"):
            yield BestPane(id="best", classes="pane")
            yield CandidatePane(id="candidate", classes="pane")
        with Horizontal(id="charts", classes="pane-group pane"):
            yield LatencyChart(id="latency-chart")
            yield ImprovementChart(id="improvement-chart")
            yield StatusChart(id="status-chart")
        with Horizontal(id="bottom", classes="pane-group"):
            yield TrajectoryPane(id="trajectory", classes="pane")
            yield LogPane(id="log", min_width=20, classes="pane")
        yield EvalBar(id="eval")
        yield StatusLine(id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#log").border_title = "log"
        self.query_one("#trajectory-table").focus()
        self._layout(self.size.width, self.size.height)
        self.call_after_refresh(self.app.painted)  # type: ignore[attr-defined]
        self.app.run_session(self.controller)  # type: ignore[attr-defined]
        self.app.follow_agent(self.controller)  # type: ignore[attr-defined]

    # --- state from the controller ---------------------------------------------------------------------
    @on(ViewChanged)
    def _view(self, message: ViewChanged) -> None:
        v = self.run_view = message.view
        self.app.sub_title = f"{v.task} · {v.workspace}"
        self.query_one(BestPane).show(v.best)
        self.query_one(TrajectoryPane).show(v.rows)
        for chart in (self.query_one(LatencyChart), self.query_one(ImprovementChart), self.query_one(StatusChart)):
            chart.set_data(v.charts)
        status = self.query_one(StatusLine)
        status.show(v.status)
        status.auto, status.paused = v.status.auto_approve, v.status.paused

    @on(PendingChanged)
    def _pending(self, message: PendingChanged) -> None:
        self.query_one(CandidatePane).show(message.pending, idle=self.controller.idle_hint)
        self._show_tabs()

    @on(RunStateChanged)
    def _state(self, message: RunStateChanged) -> None:
        self.query_one(EvalBar).state = message.text
        status = self.query_one(StatusLine)
        status.paused, status.auto = message.paused, message.auto_approve

    @on(LogLine)
    def _log(self, message: LogLine) -> None:
        self.query_one(LogPane).add(Text(message.text, style=message.style))

    @on(EvalProgress)
    def _progress(self, message: EvalProgress) -> None:
        self.query_one(EvalBar).show(message.step)

    @on(ProfileTaken)
    def _profile_taken(self, message: ProfileTaken) -> None:
        from kernel_tui.tui.screens.profile import ProfileScreen

        if isinstance(self.app.screen, ProfileScreen):  # the engine's messages come here; that screen may show it
            self.app.screen.taken(message.commit)

    @on(OpenFailed)
    def _open_failed(self, message: OpenFailed) -> None:
        self.app.open_error = message.error  # type: ignore[attr-defined]
        self.query_one(LogPane).add(Text(f"cannot open: {message.error}", style="bold red"))
        self.notify(message.error, title="cannot open", severity="error", timeout=15)

    # --- the panes: all of them, or one at a time -------------------------------------------------------
    def on_resize(self, event) -> None:
        self._layout(event.size.width, event.size.height)

    def _layout(self, width: int, height: int) -> None:
        self.compact = not fits_every_pane(width, height)
        self.set_class(self.compact, "compact")
        self.query_one(KeyFooter).fit(width, FOOTER_TIERS)
        self._show_pane()
        if self.compact and not self._focus_is_shown():
            self._focus_pane()

    def _focus_is_shown(self) -> bool:
        """Whether the focus is in the pane shown (a hidden widget must not take the arrow keys)."""
        focused = self.focused
        panes = [w for w in focused.ancestors_with_self if w.has_class("pane")] if focused else []
        return bool(panes) and all(w.has_class("shown") for w in panes)

    def _show_pane(self) -> None:
        for name in PANES:
            self.query_one(f"#{name}").set_class(name == self.pane, "shown")
        for group in self.query(".pane-group"):  # #charts is a group and a pane: its own class is already set
            if not group.has_class("pane"):
                group.set_class(any(p.has_class("shown") for p in group.query(".pane")), "shown")
        self._show_tabs()

    def _show_tabs(self) -> None:
        keys = {b.binding.id: self.app.get_key_display(b.binding) for b in self.active_bindings.values()}
        tabs = [(keys.get(f"pane-{name}", "?"), name) for name in PANES]
        pending = self.query_one(CandidatePane).pending
        alerts = frozenset({"candidate"}) if pending is not None and pending.waiting and self.pane != "candidate" else frozenset()
        self.query_one(PaneTabs).show(tabs, self.pane, alerts)

    def _focus_target(self, name: str) -> Widget | None:
        if name == "candidate":
            return self.query_one("#candidate-source" if self.query_one(CandidatePane).full else "#candidate-diff")
        targets = {"best": "#best-source", "trajectory": "#trajectory-table", "log": "#log"}
        return self.query_one(targets[name]) if name in targets else None

    def action_show_pane(self, name: str) -> None:
        """Small screen: show this pane instead of the one shown. Every screen: focus it (arrows scroll it)."""
        self.pane = name
        self._show_pane()
        self._focus_pane()

    def _focus_pane(self) -> None:
        target = self._focus_target(self.pane)
        if target is not None:
            target.focus()
        else:
            self.set_focus(None)

    # --- the person's actions --------------------------------------------------------------------------
    def _say(self, problem: str | None, done: str = "") -> None:
        if problem:
            self.notify(problem, severity="warning")
        elif done:
            self.notify(done)

    def action_approve(self) -> None:
        staged = self.controller.staged is not None
        self._say(self.controller.approve(), "your revision goes to the evaluator" if staged else "approved")

    def action_approve_batch(self) -> None:
        pending = self.controller.waiting
        more = pending.queued if pending is not None else 0
        self._say(self.controller.approve_batch(), f"approved, with the {more} more of this batch" if more else "approved")

    def action_reject(self) -> None:
        pending = self.controller.waiting
        if pending is None:
            self._say("no proposal is waiting for a decision")
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self._say(self.controller.reject(reason), f"rejected; the proposer is told: {reason}")

        self.app.push_screen(ReasonModal(f"Reject round {pending.round}: {pending.change}"), done)

    def action_edit(self) -> None:
        source, pending = self.controller.editable_source(), self.controller.waiting
        if source is None or pending is None:
            self._say("no proposal is waiting for a decision")
            return

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
        start = self.controller.own_draft()
        if not start:
            self._say("the workspace is not open yet")
            return

        def done(result: tuple[str, str] | None) -> None:
            if result is not None:
                self._say(self.controller.write_own(*result), "your candidate is the next round's proposal")

        self.app.push_screen(EditScreen(start, "Your own candidate, starting from best", ask_change=True,
                                        refuse=self._copy_of_best), done)

    def _copy_of_best(self, source: str) -> str | None:
        """A candidate identical to best would spend a round on nothing."""
        if same_code(source, self.controller.best_source):
            return "identical to best: change the code first (escape discards); no round was spent"
        return None

    def action_next_round(self) -> None:
        self._say(self.controller.next_round(), "next round")

    def action_toggle_pause(self) -> None:
        paused = self.controller.toggle_pause()
        self.notify("paused after the round in flight" if paused else "resumed")

    def action_toggle_auto(self) -> None:
        on_ = self.controller.toggle_auto()
        self.notify("auto-approve on: proposals go straight to the evaluator" if on_ else "auto-approve off")

    def action_toggle_full(self) -> None:
        pane = self.query_one(CandidatePane)
        moved = self.focused is not None and pane in self.focused.ancestors
        pane.toggle_full()
        target = self._focus_target("candidate")
        if moved and target is not None:  # the focused view was just hidden: focus the one shown in its place
            target.focus()

    def action_history(self) -> None:
        from kernel_tui.tui.screens.history import HistoryScreen

        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        self.app.push_screen(HistoryScreen(self.controller))

    def action_profile(self) -> None:
        from kernel_tui.tui.screens.profile import ProfileScreen

        if not self.controller.ready.is_set() or self.run_view is None:
            self._say("the workspace is not open yet")
            return
        v = self.run_view
        self.app.push_screen(ProfileScreen(self.controller, v.best.commit, v.baseline_commit or None))

    def action_finalize(self) -> None:
        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        pending = self.controller.waiting
        if pending is not None:  # it needs the workspace alone: the waiting round holds it until decided
            self.notify(f"final comparison queued: it {self.controller.waits_for()}", severity="warning", timeout=10)
        else:
            self.notify("final comparison: pauses rounds, runs when no round is in flight")
        self.app.run_finalize(self.controller)  # type: ignore[attr-defined]

    def action_report(self) -> None:
        if not self.controller.ready.is_set():
            self._say("the workspace is not open yet")
            return
        self.app.write_report(self.controller)  # type: ignore[attr-defined]
