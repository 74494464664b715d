"""The best version's source, and the candidate pane (diff against best, or the full source)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TextArea

from kernel_tui.tui.view import BestView, PendingView
from kernel_tui.tui.widgets.diff import DiffText


def code_view(id: str) -> TextArea:
    area = TextArea("", language="python", read_only=True, show_line_numbers=True, soft_wrap=False, id=id)
    area.cursor_blink = False
    return area


class BestPane(Vertical):
    """Titled with the version (short sha), its latency and its % of roofline."""

    DEFAULT_CSS = """
    BestPane { border: round $primary; }
    BestPane > TextArea { border: none; padding: 0; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.best: BestView | None = None

    def compose(self) -> ComposeResult:
        yield code_view("best-source")

    def on_mount(self) -> None:
        self.border_title = "best: loading…"

    def on_resize(self) -> None:
        self._title()

    def _title(self) -> None:
        if self.best is not None:
            width = self.outer_size.width - 6
            self.border_title = next((t for t in self.best.titles if len(t) <= width), self.best.titles[-1])

    def show(self, best: BestView) -> None:
        self.best = best
        self._title()
        area = self.query_one(TextArea)
        if area.text != best.source:
            area.load_text(best.source)


class CandidatePane(Vertical):
    """The proposal waiting for a decision (or the person's edit of it): change, proposer, diff vs best."""

    DEFAULT_CSS = """
    CandidatePane { border: round $secondary; }
    CandidatePane.waiting { border: heavy $warning; }
    CandidatePane > #candidate-info { height: auto; max-height: 4; padding: 0 1; color: $text; }
    CandidatePane > #candidate-diff { height: 1fr; }
    CandidatePane > TextArea { border: none; padding: 0; height: 1fr; display: none; }
    CandidatePane.full > #candidate-diff { display: none; }
    CandidatePane.full > TextArea { display: block; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.pending: PendingView | None = None

    def compose(self) -> ComposeResult:
        yield Static("no proposal waiting", id="candidate-info")
        with VerticalScroll(id="candidate-diff"):
            yield Static("", id="diff")
        yield code_view("candidate-source")

    def on_mount(self) -> None:
        self.border_title = "candidate"
        self.border_subtitle = "f: full source / diff"

    @property
    def full(self) -> bool:
        return self.has_class("full")

    def toggle_full(self) -> bool:
        self.toggle_class("full")
        self.border_subtitle = "f: diff" if self.full else "f: full source"
        return self.full

    def show(self, p: PendingView | None, *, idle: str | None = None) -> None:
        """`idle`: with no proposal, why nothing is proposed and what the person can do."""
        self.pending = p
        self.set_class(bool(p and p.waiting), "waiting")
        if p is None:
            self.border_title = "candidate"
            self.query_one("#candidate-info", Static).update(Text(idle, style="bold") if idle else "no proposal waiting")
            self.query_one("#diff", Static).update("")
            self.query_one("#candidate-source", TextArea).load_text("")
            return
        self.border_title = p.title
        info = Text()
        info.append(p.change + "\n", style="bold")
        info.append(p.state, style="italic")
        if p.queue and p.waiting:  # the rest of its batch, proposed from the same best
            info.append("\nnext in this batch: " + " · ".join(p.queue), style="dim")
        self.query_one("#candidate-info", Static).update(info)
        self.query_one("#diff", Static).update(DiffText(p.diff))
        area = self.query_one("#candidate-source", TextArea)
        if area.text != p.source:
            area.load_text(p.source)
