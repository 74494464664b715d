"""Messages from the controller's threads to the screens (posted with post_message, thread-safe).

Each carries display state from `view.py`; high-rate ones (progress, whole-view refreshes) say so with
`can_replace`, so a burst collapses into its latest message instead of queueing up.
"""

from __future__ import annotations

from textual.message import Message

from kernel_tui.tui.view import EvalStep, HistoryData, PendingView, ProfileView, RunView, VersionDetail


class ViewChanged(Message):
    """The run as a whole: best version, verdicts, charts, status line."""

    def __init__(self, view: RunView) -> None:
        super().__init__()
        self.view = view

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ViewChanged)


class PendingChanged(Message):
    """The candidate pane: a proposal awaiting a decision, the person's edit, or the last round's."""

    def __init__(self, pending: PendingView | None) -> None:
        super().__init__()
        self.pending = pending


class RunStateChanged(Message):
    """What the run is doing (proposing, awaiting your decision, evaluating, paused, idle) and its switches."""

    def __init__(self, text: str, *, paused: bool, auto_approve: bool, busy: bool = False) -> None:
        super().__init__()
        self.text, self.paused, self.auto_approve, self.busy = text, paused, auto_approve, busy

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunStateChanged)


class LogLine(Message):
    def __init__(self, text: str, style: str = "") -> None:
        super().__init__()
        self.text, self.style = text, style


class EvalProgress(Message):
    """An evaluation's phase and k/n; None clears the bar."""

    def __init__(self, step: EvalStep | None) -> None:
        super().__init__()
        self.step = step

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EvalProgress)


class OpenFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class HistoryLoaded(Message):
    def __init__(self, data: HistoryData) -> None:
        super().__init__()
        self.data = data


class DetailLoaded(Message):
    def __init__(self, detail: VersionDetail) -> None:
        super().__init__()
        self.detail = detail


class Restored(Message):
    def __init__(self, commit: str, text: str) -> None:
        super().__init__()
        self.commit, self.text = commit, text


class ProfileTaken(Message):
    """The session profiled a version (after an accept, or on demand): a profile screen showing it reloads."""

    def __init__(self, commit: str) -> None:
        super().__init__()
        self.commit = commit


class ProfileLoaded(Message):
    def __init__(self, view: ProfileView) -> None:
        super().__init__()
        self.view = view
