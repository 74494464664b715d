"""Every blocking job of the TUI as a Textual thread worker, and the one handler for their failures.

Each worker is a thin call into the Controller (which owns the Session and the workspace) and reports
back with messages; an exception in any of them is shown in the log and as a notification, never a crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.worker import Worker, WorkerState, get_current_worker

from kernel_tui.tui.messages import DetailLoaded, HistoryLoaded, LogLine, ProfileLoaded, Restored
from kernel_tui.tui.view import ProfileView

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from kernel_tui.tui.controller import Controller

LONG_LIVED = frozenset({"session", "agent-log"})  # the tests' wait helper ignores these


class WorkersMixin:
    """Mixed into the App: the workers belong to it, so its one StateChanged handler sees them all."""

    controller: Controller | None

    @work(thread=True, exclusive=True, exit_on_error=False, group="session", description="session rounds")
    def run_session(self, controller: Controller) -> None:
        controller.run()

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent-log", description="agent log follower")
    def follow_agent(self, controller: Controller) -> None:
        controller.tail_agent()

    @work(thread=True, exclusive=True, exit_on_error=False, group="finalize", description="final comparison")
    def run_finalize(self, controller: Controller) -> None:
        controller.finalize()

    @work(thread=True, exclusive=True, exit_on_error=False, group="report", description="write the report")
    def write_report(self, controller: Controller) -> None:
        controller.report()

    @work(thread=True, exclusive=True, exit_on_error=False, group="history", description="load history")
    def load_history(self, controller: Controller, target: MessagePump) -> None:
        target.post_message(HistoryLoaded(controller.reader.history()))

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-detail", description="version detail")
    def load_detail(self, controller: Controller, target: MessagePump, commit: str, against: str | None, label: str) -> None:
        detail = controller.reader.detail(commit, against, label)
        if not get_current_worker().is_cancelled:  # a newer selection superseded this one
            target.post_message(DetailLoaded(detail))

    @work(thread=True, exclusive=True, exit_on_error=False, group="restore", description="restore a version")
    def restore_version(self, controller: Controller, target: MessagePump, commit: str, *, start: bool = False) -> None:
        new, said = controller.restore(commit, start=start)
        if new:
            target.post_message(Restored(new, said))

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile-view", description="load a profile")
    def load_profile(self, controller: Controller, target: MessagePump, commit: str, against: str | None) -> None:
        target.post_message(ProfileLoaded(controller.reader.profile_view(commit, against)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile", description="profile a version")
    def run_profile(self, controller: Controller, target: MessagePump, commit: str, against: str | None) -> None:
        try:
            controller.profile(commit)
            view = controller.reader.profile_view(commit, against)
        except Exception as exc:  # the screen must not keep saying "profiling…"; the error is shown too
            target.post_message(ProfileLoaded(ProfileView(commit=commit, title=f"profile of {commit[:8]}", profiled=False,
                                                          lines=(f"no profile: {type(exc).__name__}: {exc}",))))
            raise
        target.post_message(ProfileLoaded(view))

    def worker_failed(self, event: Worker.StateChanged) -> None:
        """The App's one @on(Worker.StateChanged) handler sends errors here: shown, never raised."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        what = event.worker.description or event.worker.group
        text = f"{what} failed: {type(error).__name__}: {error}"
        self.notify(text, title="error", severity="error", timeout=10)  # type: ignore[attr-defined]
        screen = getattr(self, "main_screen", None)
        if screen is not None:
            screen.post_message(LogLine(text, "bold red"))
