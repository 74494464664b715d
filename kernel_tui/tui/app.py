"""The Textual App of kernel-tui: screens, global keys, and `run_tui`, the entry point the CLI calls.

The App holds no run state: the Controller (controller.py) owns the Session, its thread and the person's
decisions; the workers (workers.py) run its blocking jobs; the screens display what it posts.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker

from kernel_tui.tui.controller import Controller, RunOptions
from kernel_tui.tui.screens.main import MainScreen
from kernel_tui.tui.workers import WorkersMixin

EXIT_OK, EXIT_BAD_INPUT = 0, 2
STOP_WAIT_SECONDS = 60.0


class KernelTuiApp(WorkersMixin, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "kernel-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark", "help", "Help", id="help"),
    ]

    def __init__(self, options: RunOptions, *, keymap: dict[str, str] | None = None) -> None:
        super().__init__()
        self.started = time.perf_counter()
        self.first_paint: float | None = None  # seconds from construction to the main screen's first paint
        self.options = options
        self.controller: Controller | None = None
        self.main_screen: MainScreen | None = None
        self.open_error: str | None = None
        if keymap:
            self.set_keymap(keymap)

    def on_mount(self) -> None:
        if self.options.target is None:
            from kernel_tui.tui.screens.picker import PickerScreen

            self.push_screen(PickerScreen(), lambda path: self.open_target(Path(path)) if path else None)
        else:
            self.open_target(Path(self.options.target))

    def open_target(self, target: Path) -> None:
        self.options.target = target
        self.controller = Controller(self.options, self._post)
        self.main_screen = MainScreen(self.controller)
        self.push_screen(self.main_screen)

    def _post(self, message: Any) -> None:
        if self.main_screen is not None:
            self.main_screen.post_message(message)

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        self.worker_failed(event)

    def painted(self) -> None:
        if self.first_paint is None:
            self.first_paint = time.perf_counter() - self.started

    def action_help(self) -> None:
        """The help of the screen shown: its own (a screen's KEYS_HELP) where it has one, else the run's."""
        from kernel_tui.tui.screens.modals import HELP, HelpScreen

        self.push_screen(HelpScreen(getattr(self.screen, "KEYS_HELP", HELP)))

    async def action_quit(self) -> None:
        """Safe at any moment: the round in flight stops (it stays pending on disk), the workspace unlocks."""
        if self.controller is not None:
            self.controller.stop()
            self.notify("stopping: the round in flight stays pending and resumes when you reopen…")
            deadline = time.monotonic() + STOP_WAIT_SECONDS
            while any(not w.is_finished for w in self.workers) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        self.exit(return_code=EXIT_BAD_INPUT if self.open_error else EXIT_OK)

    def on_unmount(self) -> None:
        if self.controller is not None:
            self.controller.stop()


def create_app(
    target: Path | None = None,
    *,
    device: str = "auto",
    proposer: Any = None,
    candidates: Path | None = None,
    max_steps: int | None = None,
    workspace: Path | None = None,
    keymap: dict[str, str] | None = None,
    **extra: Any,
) -> KernelTuiApp:
    """The app factory (run_tui and the tests build the app through it). extra: person, auto_approve, paused, gpus."""
    options = RunOptions(target=Path(target) if target is not None else None, device=device, proposer=proposer,
                         candidates=Path(candidates) if candidates else None, max_steps=max_steps,
                         workspace=Path(workspace) if workspace else None, **extra)
    return KernelTuiApp(options, keymap=keymap)


def run_tui(
    target: Path | None,
    *,
    device: str = "auto",
    proposer: Any = None,
    candidates: Path | None = None,
    max_steps: int | None = None,
    workspace: Path | None = None,
    keymap: dict[str, str] | None = None,
    gpus: str | None = None,
) -> int:
    """Run the interactive screen; returns the exit code (0, or 2 when the target could not be opened).

    target None: a picker of fixtures/*/task.json and workspaces/*; a task directory: a new workspace
    (at `workspace`, else workspaces/<task>-<time>); a workspace: resume it. proposer: "search", "llm",
    "replay" (with candidates) or None (the workspace's own on resume, else llm if configured, else search).
    """
    app = create_app(target, device=device, proposer=proposer, candidates=candidates, max_steps=max_steps,
                     workspace=workspace, keymap=keymap, gpus=gpus)
    app.run()
    return app.return_code if app.return_code is not None else EXIT_OK
