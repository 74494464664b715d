"""No target given: pick an existing workspace to resume, or a fixture to start a new workspace on."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, OptionList
from textual.widgets.option_list import Option

from kernel_tui.tui.view import Candidate


class CandidatesFound(Message):
    def __init__(self, found: list[Candidate]) -> None:
        super().__init__()
        self.found = found


class PickerScreen(Screen[str]):
    AUTO_FOCUS = "#choices"

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Label("Resume a workspace (workspaces/*) or start a new one on a task (fixtures/*/task.json). "
                    "enter opens, q quits.", id="picker-help")
        yield OptionList(Option("looking…", disabled=True), id="choices")
        yield Footer()

    def on_mount(self) -> None:
        self.app.find_candidates(self)  # type: ignore[attr-defined]

    @on(CandidatesFound)
    def _found(self, message: CandidatesFound) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        if not message.found:
            options.add_option(Option("no workspaces/ or fixtures/ here: give a task or workspace path", disabled=True))
            return
        options.add_options(Option(c.label, id=c.path) for c in message.found)
        options.highlighted = 0

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.dismiss(event.option.id)
