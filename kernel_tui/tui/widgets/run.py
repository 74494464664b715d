"""The trajectory table, the evaluation progress bar and the status line."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import DataTable, Label, ProgressBar, Static

from kernel_tui.tui.view import EvalStep, StatusView, VerdictRow

# keyed by the words of kernel_tui.core.verdicts.LABELS (widgets do not import the core)
VERDICT_STYLES = {"accepted": "bold green", "rejected by the gate": "yellow", "rejected by the person": "cyan"}
# Fixed widths: auto-sized columns are measured on idle, and a frame drawn before that keeps header widths.
COLUMNS = (("round", 5), ("verdict", 18), ("latency", 9), ("vs incumbent", 12), ("CI", 20), ("p", 9),
           ("change", 40), ("proposer", 28), ("reason", 80))


class TrajectoryTable(DataTable):
    """One row per verdict, newest last; the cursor follows the newest unless the person moved it."""

    def __init__(self, **kw) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kw)
        self.rows_shown: tuple[VerdictRow, ...] = ()

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, width=width)

    def show(self, rows: tuple[VerdictRow, ...]) -> None:
        if rows == self.rows_shown:
            return
        follow = self.cursor_row >= len(self.rows_shown) - 1
        self.rows_shown = rows
        self.clear()
        for r in rows:
            style = VERDICT_STYLES.get(r.status, "red")
            self.add_row(
                str(r.round), Text(r.status, style=style), r.latency, r.improvement, r.ci, r.p,
                _clip(r.change, 40), _clip(r.proposer, 28), _clip(r.reason, 80), key=str(r.round),
            )
        if rows and follow:
            self.move_cursor(row=len(rows) - 1)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class EvalBar(Horizontal):
    """What the run is doing, and the evaluation in flight: where, phase, block, k/n and a bar."""

    DEFAULT_CSS = """
    EvalBar { height: 1; }
    EvalBar > #run-state { width: 1fr; padding: 0 1; text-style: italic; }
    EvalBar > #eval-label { width: auto; padding: 0 1; }
    EvalBar > ProgressBar { width: 42; }
    EvalBar.idle > ProgressBar, EvalBar.idle > #eval-label { display: none; }
    """

    state: reactive[str] = reactive("starting…")

    def compose(self) -> ComposeResult:
        yield Label("", id="run-state")
        yield Label("", id="eval-label")
        yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="eval-bar")

    def on_mount(self) -> None:
        self.add_class("idle")

    def watch_state(self, state: str) -> None:
        self.query_one("#run-state", Label).update(state)

    @property
    def evaluating(self) -> bool:
        return not self.has_class("idle")

    def show(self, step: EvalStep | None) -> None:
        self.set_class(step is None, "idle")
        if step is None:
            return
        self.query_one("#eval-label", Label).update(step.label)
        self.query_one(ProgressBar).update(total=max(step.n, 1), progress=min(step.k, max(step.n, 1)))


class StatusLine(Static):
    """Device (or the interpreter warning), proposer, model, budget left, auto-approve and pause."""

    paused: reactive[bool] = reactive(False)
    auto: reactive[bool] = reactive(False)

    def __init__(self, **kw) -> None:
        super().__init__("", **kw)
        self.base: StatusView | None = None

    def show(self, status: StatusView) -> None:
        self.base = status
        self.refresh_line()

    def watch_paused(self) -> None:
        self.refresh_line()

    def watch_auto(self) -> None:
        self.refresh_line()

    def refresh_line(self) -> None:
        out = Text(no_wrap=True, overflow="ellipsis")
        s = self.base
        if s is not None:
            interp = "interpreter" in s.device.lower()
            out.append(s.device, style="bold red" if interp else "bold")
            out.append(f" │ proposer {s.proposer} │ model {s.model} │ budget {s.left} of {s.total} rounds left │ ")
        out.append("auto-approve ON" if self.auto else "auto-approve off", style="bold magenta" if self.auto else "")
        if self.paused:
            out.append(" │ ")
            out.append("PAUSED", style="bold yellow")
        self.update(out)
