"""Small screens: the reason for a rejection, the in-place editor, a yes/no question, the help."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static, TextArea


class ReasonModal(ModalScreen[str | None]):
    """Asks why; the answer goes back to the proposer with the rejection."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel-reason")]

    def __init__(self, title: str) -> None:
        super().__init__(id="reason-modal")
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-box"):
            yield Label(self.title_text, id="reason-title")
            yield Label("Why? (the proposer is told; enter sends, escape cancels)")
            yield Input(placeholder="e.g. too big a jump, try 512 first", id="reason-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    BINDINGS = [Binding("y", "yes", "Yes", id="confirm-yes"), Binding("n,escape", "no", "No", id="confirm-no")]

    def __init__(self, question: str) -> None:
        super().__init__(id="confirm-modal")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question)
            yield Static("y: yes · n / escape: no")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class EditScreen(Screen[tuple[str, str] | None]):
    """A full-screen Python editor. ctrl+s keeps the text (and the change line), escape throws it away."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Keep", id="edit-save", priority=True),
        Binding("escape", "cancel", "Discard", id="edit-cancel", priority=True),
    ]

    def __init__(self, source: str, title: str, *, ask_change: bool = False) -> None:
        super().__init__(id="edit-screen")
        self.source, self.title_text, self.ask_change = source, title, ask_change

    def compose(self) -> ComposeResult:
        yield Label(self.title_text + " — ctrl+s keeps, escape discards", id="edit-title")
        if self.ask_change:
            yield Input(placeholder="what you changed, in one line (the commit's subject)", id="edit-change")
        area = TextArea(self.source, language="python", show_line_numbers=True, tab_behavior="indent", id="edit-area")
        area.cursor_blink = False
        yield area
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        change = self.query_one("#edit-change", Input).value.strip() if self.ask_change else ""
        self.dismiss((self.query_one(TextArea).text, change or "person's candidate"))

    def action_cancel(self) -> None:
        self.dismiss(None)


HELP = """\
[b]A round[/b]: the proposer proposes a candidate (its diff against best is in the candidate pane); you \
decide; an approved candidate is evaluated (correctness, then paired timing against best until the gate \
decides); an accepted one becomes the new best. Everything is on disk before the next step: q is safe at \
any moment, and reopening the workspace resumes a round in flight.

[b]Deciding[/b]
  a        approve (or send your edit, when the pane says "your edit")
  r        reject, with a reason that goes back to the proposer
  e        edit the candidate here; ctrl+s keeps it, then a evaluates it as your revision (committed as yours)
  E        edit it in $EDITOR
  w        write your own candidate, starting from best: the next round's proposal is yours
  f        the candidate's full source / its diff against best

[b]The run[/b]
  space    pause / resume (takes effect between rounds)
  n        one more round while paused or idle
  t        auto-approve on/off (a waiting proposal is approved at once)
  c        final comparison: baseline vs best in fresh processes (pauses rounds first)
  p        write report.md and the figures
  h        history: the accepted lineage, every proposal, diffs, restore
  ?        this help          q   quit

[b]The charts[/b] keep three things apart: each verdict's own latency (points) and the accepted \
version's record line, which moves only on an accept; the gate's paired improvement estimate per verdict \
(bars) against the threshold (red line); and how every verdict ended.

Keys can be remapped by binding id (App.set_keymap, or run_tui(keymap={...})): approve, reject, edit, \
edit-external, write-own, next-round, pause, auto-approve, full-source, history, final-comparison, report, \
help, quit.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
