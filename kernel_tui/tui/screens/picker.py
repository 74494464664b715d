"""No target given: pick a workspace to resume, or a task to start a new workspace on.

The choice is checked before the picker closes (the same checks as `kernel-tui WORKSPACE`: a workspace in
use, a broken task.json); a refused one stays here, its reason on the line above the list.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from kernel_tui.core.opening import Choice

PICKER_HELP = ("Resume a workspace, or start a new one on a task (a folder holding task.json: fixtures/*, "
               "the folders here). enter opens, q quits.")
NOTHING_HERE = "no workspaces or tasks here: run kernel-tui TASK_DIR or WORKSPACE, or cd where they are"


class ChoicesFound(Message):
    def __init__(self, found: list[Choice]) -> None:
        super().__init__()
        self.found = found


class ChoiceChecked(Message):
    """The chosen path, and why it cannot be opened (None: it can)."""

    def __init__(self, path: Path, refused: str | None) -> None:
        super().__init__()
        self.path, self.refused = path, refused


class Row:
    """An option's one line, cut with … at the edge (the option list wraps a plain Text however it is told
    not to); str() is its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.text, no_wrap=True, overflow="ellipsis")


def label(choice: Choice) -> Row:
    """What enter does, where, then the workspace's verdicts or the task's description."""
    if choice.kind == "workspace":
        return Row(f"resume  {choice.where}  ({choice.detail})")
    return Row(f"new     {choice.where}" + (f": {choice.detail}" if choice.detail else ""))


class PickerScreen(Screen[Path]):
    """Dismissed with the chosen path once the checks passed; `reason`: why the last choice was refused."""

    AUTO_FOCUS = "#choices"

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(id="picker")
        self.reason = reason
        self.checking = False

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(self._help(), id="picker-help")
        yield OptionList(Option("looking…", disabled=True), id="choices")
        yield Footer()

    def _help(self) -> Text:
        text = Text(PICKER_HELP)
        if self.reason:
            text.append(f"\ncannot open: {self.reason}", style="bold red")
        return text

    def on_mount(self) -> None:
        self.app.list_choices(self, Path.cwd())  # type: ignore[attr-defined]

    @on(ChoicesFound)
    def _found(self, message: ChoicesFound) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        if not message.found:
            options.add_option(Option(NOTHING_HERE, disabled=True))
            return
        options.add_options(Option(label(c), id=c.where) for c in message.found)  # paths from here: shorter reasons
        options.highlighted = 0

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id and not self.checking:
            self.checking = True
            self.app.check_choice(self, Path(event.option.id))  # type: ignore[attr-defined]

    @on(ChoiceChecked)
    def _checked(self, message: ChoiceChecked) -> None:
        self.checking = False
        if message.refused is None:
            self.dismiss(message.path)
            return
        self.reason = message.refused
        self.query_one("#picker-help", Static).update(self._help())
