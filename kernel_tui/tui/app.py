"""The Textual App of kernel-tui: screens, global keys, and `run_tui`, the entry point the CLI calls.

The App holds no run state: the Controller (controller.py) owns the Session, its thread and the person's
decisions; the workers (workers.py) run its blocking jobs; the screens display what it posts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.worker import Worker

from kernel_tui.tui.controller import Controller
from kernel_tui.tui.messages import OpenFailed
from kernel_tui.tui.options import RunOptions
from kernel_tui.tui.screens.main import MainScreen
from kernel_tui.tui.workers import WorkersMixin

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from kernel_tui.core.config import AgentSettings

EXIT_OK, EXIT_BAD_INPUT = 0, 2
STOP_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Closed:
    """How the screen closed: the exit code, and the workspace it had open (None: none was opened)."""

    code: int
    workspace: Path | None


class BackToPicker(Message):
    """A target chosen in the picker could not be opened after all: the picker again, with the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


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
        self.picked = False  # the target comes from the picker: one that fails to open goes back to it
        if keymap:
            self.set_keymap(keymap)

    def on_mount(self) -> None:
        if self.options.target is None:
            self.picked = True
            self.show_picker()
        else:
            self.open_target(Path(self.options.target))

    def show_picker(self, reason: str | None = None) -> None:
        from kernel_tui.tui.screens.picker import PickerScreen

        self.push_screen(PickerScreen(reason), lambda path: self.open_target(path) if path else None)

    def open_target(self, target: Path) -> None:
        self.options.target = target
        controller = self.controller = Controller(self.options, lambda message: self._post(controller, message))
        self.main_screen = MainScreen(self.controller)
        self.push_screen(self.main_screen)

    @property
    def workspace(self) -> Path | None:
        """The workspace this session opened (or created), once it is open."""
        ws = self.controller.ws if self.controller is not None else None
        return ws.root if ws is not None else None

    def _post(self, source: Controller, message: Any) -> None:
        """The controller's messages (from its threads too) go to the main screen; a choice of the picker that
        fails to open goes back to the picker rather than leaving a dashboard with nothing behind it."""
        if source is not self.controller:
            return  # a controller given up for the picker says no more
        if self.picked and isinstance(message, OpenFailed):
            self.post_message(BackToPicker(message.error))
        elif self.main_screen is not None:
            self.main_screen.post_message(message)

    @on(BackToPicker)
    def _back_to_picker(self, message: BackToPicker) -> None:
        if self.controller is not None:
            self.controller.stop()
        if self.main_screen is not None and self.main_screen in self.screen_stack:
            while self.screen is not self.main_screen:
                self.pop_screen()
            self.pop_screen()
        self.controller = self.main_screen = None
        self.options.target = None
        self.show_picker(message.reason)

    # The picker's jobs (they read folders, git and task.json): here, so the one StateChanged handler sees them.
    @work(thread=True, exclusive=True, exit_on_error=False, group="picker", description="find workspaces and tasks")
    def list_choices(self, target: MessagePump, root: Path) -> None:
        from kernel_tui.core.opening import choices
        from kernel_tui.tui.screens.picker import ChoicesFound

        target.post_message(ChoicesFound(choices(root)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="picker-check", description="check the choice")
    def check_choice(self, target: MessagePump, path: Path) -> None:
        """The checks `kernel-tui TARGET` makes before its screen opens: a workspace in use, a broken task."""
        from kernel_tui.core.errors import KernelTuiError
        from kernel_tui.core.opening import check_proposer, check_target
        from kernel_tui.tui.screens.picker import ChoiceChecked

        opts = self.options
        try:
            resumed = check_target(path, opts.workspace)
            if not hasattr(opts.proposer, "propose"):  # a Proposer object (the tests') needs no check
                check_proposer(opts.proposer, opts.candidates, resumed, opts.agent_settings(resumed))
        except KernelTuiError as exc:
            target.post_message(ChoiceChecked(path, str(exc)))
            return
        except Exception as exc:  # shown by the worker handler too; the picker must not wait on it forever
            target.post_message(ChoiceChecked(path, f"{type(exc).__name__}: {exc}"))
            raise
        target.post_message(ChoiceChecked(path, None))

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
    """The app factory (run_tui and the tests build the app through it). extra: person, auto_approve, paused, gpus,
    settings (the agent's, as the command line loaded them)."""
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
    settings: AgentSettings | None = None,
) -> Closed:
    """Run the interactive screen until it closes: its exit code (0, or 2 when the target could not be opened)
    and the workspace it had open, if any.

    target None: a picker of workspaces (workspaces/*, ./*) and tasks (fixtures/*, ./*); a task directory: a new
    workspace (at `workspace`, else workspaces/<task>-<time>); a workspace: resume it. proposer: "search", "llm",
    "replay" (with candidates) or None (the workspace's own on resume, else llm if configured, else search).
    settings: the agent's, loaded by the command line where the proposer uses them (else the screen loads them).
    """
    app = create_app(target, device=device, proposer=proposer, candidates=candidates, max_steps=max_steps,
                     workspace=workspace, keymap=keymap, gpus=gpus, settings=settings)
    app.run()
    return Closed(app.return_code if app.return_code is not None else EXIT_OK, app.workspace)
