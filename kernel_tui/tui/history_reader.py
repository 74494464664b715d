"""The history screen's reads of the open workspace: its versions, a version's detail, a profile view.

A Workspace of its own (its own git processes, safe beside the Session's), one read at a time. Nothing here
moves the workspace, so no read waits for the engine lock that rounds, restores and the final comparison hold.
Runs in thread workers only: it imports the core.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.tui.view import HistoryData, ProfileView, VersionDetail

if TYPE_CHECKING:
    from kernel_tui.core.workspace import Workspace


class HistoryReader:
    def __init__(self, root: Path, profiles_off: Callable[[], str | None]) -> None:
        self.root = root
        self.profiles_off = profiles_off  # why this session cannot profile (None: it can), asked at each view
        self._lock = threading.Lock()
        self._ws: Workspace | None = None

    def _workspace(self) -> Workspace:
        from kernel_tui.core.workspace import Workspace

        if self._ws is None:
            self._ws = Workspace.open(self.root)
        return self._ws

    def history(self) -> HistoryData:
        from kernel_tui.tui import present

        with self._lock:
            return present.history(self._workspace())

    def detail(self, commit: str, against: str | None, label: str) -> VersionDetail:
        from kernel_tui.tui import present

        with self._lock:
            return present.detail(self._workspace(), commit, against, label)

    def profile_view(self, commit: str, against: str | None) -> ProfileView:
        from kernel_tui.tui import present

        off = self.profiles_off()
        with self._lock:
            return present.profile_view(self._workspace(), commit, against, off)
