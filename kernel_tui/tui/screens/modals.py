"""Small screens: the reason for a rejection, the in-place editor, a yes/no question, the help."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static, TextArea

REASON_REQUIRED = "a reason is required: the proposer is told why (escape cancels; the proposal keeps waiting)"


class ReasonModal(ModalScreen[str | None]):
    """Asks why; the answer goes back to the proposer with the rejection. An empty answer is refused."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel-reason")]

    def __init__(self, title: str) -> None:
        super().__init__(id="reason-modal")
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-box"):
            yield Label(self.title_text, id="reason-title")
            yield Label("Why? The proposer is told. enter rejects · escape cancels")
            yield Input(placeholder="e.g. too big a jump, try 512 first", id="reason-input")
            yield Label("", id="reason-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        reason = " ".join(event.value.split())
        if not reason:
            self.query_one("#reason-error", Label).update(REASON_REQUIRED)
            return
        self.dismiss(reason)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """A yes/no question; `yes` and `no` say what each answer does ("discard", "keep editing")."""

    BINDINGS = [Binding("y", "yes", "Yes", id="confirm-yes"), Binding("n,escape", "no", "No", id="confirm-no")]

    def __init__(self, question: str, *, yes: str = "yes", no: str = "no") -> None:
        super().__init__(id="confirm-modal")
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question)
            yield Static(f"y: {self.yes} · n / escape: {self.no}")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


def same_code(a: str, b: str) -> bool:
    """Equal but for trailing spaces and blank lines at the end: such an edit changes nothing."""
    def norm(text: str) -> list[str]:
        return [line.rstrip() for line in text.rstrip().splitlines()]

    return norm(a) == norm(b)


SUBJECT_KEYS = "enter or tab: to the code · shift+tab: back to the subject · ctrl+s keeps · escape discards"
DISCARD_QUESTION = "Discard your changes to the code?"


class EditScreen(Screen[tuple[str, str] | None]):
    """A full-screen Python editor. ctrl+s keeps the text (and the change line), escape throws it away
    (asking first when the code was changed).

    With ask_change it starts on the one-line subject; enter (or tab) goes to the code, shift+tab back.
    `refuse(text)` may return why the text cannot be kept (the editor then stays open and says so).
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Keep", id="edit-save", priority=True),
        Binding("escape", "cancel", "Discard", id="edit-cancel", priority=True),
    ]

    def __init__(self, source: str, title: str, *, ask_change: bool = False,
                 refuse: Callable[[str], str | None] | None = None) -> None:
        super().__init__(id="edit-screen")
        self.source, self.title_text, self.ask_change, self.refuse = source, title, ask_change, refuse

    def compose(self) -> ComposeResult:
        keys = SUBJECT_KEYS if self.ask_change else "ctrl+s keeps · escape discards"
        yield Label(f"{self.title_text} — {keys}", id="edit-title")
        if self.ask_change:
            yield Input(placeholder="what you changed, in one line (the commit's subject)", id="edit-change")
        area = TextArea(self.source, language="python", show_line_numbers=True, tab_behavior="indent", id="edit-area")
        area.cursor_blink = False
        yield area
        yield Footer()

    def on_mount(self) -> None:
        (self.query_one("#edit-change", Input) if self.ask_change else self.query_one(TextArea)).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        problem = self.refuse(text) if self.refuse is not None else None
        if problem:
            self.notify(problem, severity="warning")
            return
        change = self.query_one("#edit-change", Input).value.strip() if self.ask_change else ""
        self.dismiss((text, change or "person's candidate"))

    def action_cancel(self) -> None:
        if self.query_one(TextArea).text == self.source:
            self.dismiss(None)
            return
        self.app.push_screen(ConfirmModal(DISCARD_QUESTION, yes="discard", no="keep editing"), self._discard)

    def _discard(self, discard: bool | None) -> None:
        if discard:
            self.dismiss(None)


HELP = """\
[b]A round[/b]: the proposer proposes a candidate (its diff against best is in the candidate pane); you \
decide; an approved candidate is evaluated (correctness, then paired timing against best until the gate \
decides); an accepted one becomes the new best. Everything is on disk before the next step: q is safe at \
any moment, and reopening the workspace resumes a round in flight.

[b]Deciding[/b]
  a        approve (or send your edit, when the pane says "your edit")
  A        approve it and the rest of its batch (with --gpus, the search proposes one candidate per GPU;
           they are evaluated in parallel, and after an accept the others are gated again against the new best)
  r        reject, with a reason (required) that goes back to the proposer
  e        edit the candidate here; ctrl+s keeps it, then a evaluates it as your revision (committed as yours)
  E        edit it in $EDITOR
  w        write your own candidate, starting from best: the next round's proposal is yours. It opens on
           the one-line subject: enter or tab goes to the code, shift+tab back; ctrl+s keeps (a copy of
           best, a syntax error or a broken rule is refused before a round is spent), escape asks before
           discarding changes
  f        the candidate's full source / its diff against best

[b]The panes[/b]
  1-5      best, candidate, charts, trajectory, log. On a screen too small for all of them (under 110×34)
           one is shown at a time and these switch; otherwise they move the focus (arrows scroll it).
           In the trajectory, the line under the table shows the selected verdict in full.

[b]The run[/b]
  space    pause / resume (takes effect between rounds)
  n        one more round while paused or idle (with --gpus, one more batch)
  t        auto-approve on/off (a waiting proposal is approved at once)
  c        final comparison: baseline vs best in fresh processes (pauses rounds first; waits for your
           decision when a proposal is waiting)
  p        write report.md and the figures
  h        history: the accepted lineage, every proposal, diffs, restore (the run then pauses), b start from
           a correct Triton version over an eager start (i there: the selected version's profile)
  i        the best version's profile: what Nsight Compute says holds it back (DRAM and compute use,
           occupancy, cache hit rates, warp stalls) and what changed against the baseline; r in it profiles
           now. Each accepted version is profiled on a GPU with ncu; where it cannot be, the log says why once.
  ?        this help          q   quit

[b]The charts[/b] keep three things apart: each verdict's own latency (points) and the accepted \
version's record line, which moves only on an accept; the gate's paired improvement estimate per verdict \
(bars) against the threshold (red line); and how every verdict ended.

A narrow footer leaves some keys out; they all still work.
"""
KEY_COLUMN = 11  # a help's key rows: two spaces, the key, its text from this column


def help_body(text: str) -> Group:
    """A help (rich markup) as it is shown: a key row's text wraps under itself, at any width.

    Key rows are written `  key      what it does`, the text from KEY_COLUMN; a line that starts at that
    column continues the row above (its line breaks are the source's, not the screen's). Other lines are
    paragraphs, wrapped as they come.
    """
    parts: list[RenderableType] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            table = Table.grid(padding=(0, 2))
            table.add_column(min_width=KEY_COLUMN - 4, no_wrap=True)
            table.add_column()
            for key, what in rows:
                table.add_row(Text.from_markup(key), Text.from_markup(what))
            parts.append(Padding(table, (0, 0, 0, 2)))
            rows.clear()

    for line in text.splitlines():
        head, body = line[:KEY_COLUMN], line[KEY_COLUMN:]
        starts_text = body[:1].strip() != "" and head.endswith(" ")
        if starts_text and not head.strip() and rows:
            rows[-1][1] += " " + body.strip()
        elif starts_text and head.startswith("  ") and head[2:3].strip():
            rows.append([head.strip(), body.rstrip()])
        else:
            flush()
            parts.append(Text.from_markup(line))
    flush()
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    """A screen's keys and what they do (rich markup): the run's by default."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def __init__(self, text: str = HELP) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_body(self.text), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
