"""The trajectory table, the evaluation progress bar and the status line."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Label, ProgressBar, Static

from kernel_tui.tui.view import NA, EvalStep, StatusView, VerdictRow

# keyed by the words of kernel_tui.core.verdicts.LABELS (widgets do not import the core)
VERDICT_STYLES = {"accepted": "bold green", "rejected by the gate": "yellow", "rejected by the person": "cyan"}
# (header, the VerdictRow field, the widest it gets: longer text is clipped here and shown whole in the detail
# line). Widths are set from the rows, not measured on idle: a frame drawn before that would keep header widths.
COLUMNS = (("round", "round", 5), ("verdict", "status", 24), ("change", "change", 48), ("latency", "latency", 9),
           ("incumbent", "incumbent_latency", 9), ("vs incumbent", "improvement", 12), ("CI", "ci", 20),
           ("p", "p", 9), ("proposer", "proposer", 32), ("reason", "reason", 80))
# After the latencies, only where some evaluation recorded a peak: the CPU interpreter has none, and a column of
# dashes would only take room.
MEMORY_COLUMN = ("peak mem", "memory", 11)
SHOWN_KERNELS = 3


def columns(rows: tuple[VerdictRow, ...]) -> tuple[tuple[str, str, int], ...]:
    if not any(r.memory != NA for r in rows):
        return COLUMNS
    at = [field for _, field, _ in COLUMNS].index("incumbent_latency") + 1
    return (*COLUMNS[:at], MEMORY_COLUMN, *COLUMNS[at:])


def column_widths(rows: tuple[VerdictRow, ...]) -> list[int]:
    """Each column as wide as its widest cell (or header), up to its limit."""
    return [min(limit, max([len(header)] + [len(str(getattr(r, field))) for r in rows]))
            for header, field, limit in columns(rows)]


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def detail_text(row: VerdictRow) -> Text:
    """The selected verdict in full: what changed, who proposed it, its latency and why it ended so."""
    out = Text()
    out.append(f"round {row.round}: ")
    out.append(row.change, style="bold")
    out.append(f" · {row.proposer}\n")
    out.append(row.status, style=VERDICT_STYLES.get(row.status, "red"))
    if row.latency != NA:  # beside its own incumbent's, measured in the same evaluation under the same load
        out.append(f" · {row.latency}" + (f" (incumbent {row.incumbent_latency})" if row.incumbent_latency != NA else ""))
    if row.memory != NA:
        out.append(f" · peak {row.memory}")
    out.append(_reason(row.status, row.reason))
    for kernel in row.kernels[:SHOWN_KERNELS]:  # registers, spills, shared memory, occupancy
        out.append(f"\n  {kernel}", style="dim")
    if len(row.kernels) > SHOWN_KERNELS:  # an autotuner compiles many variants: the report lists them all
        out.append(f"\n  … {len(row.kernels) - SHOWN_KERNELS} more compiled variant(s) in the report", style="dim")
    return out


def _reason(status: str, reason: str) -> str:
    """`rejected by the gate: -7.3% …` rather than `rejected by the gate — rejected: -7.3% …`."""
    word = status.split()[0] + ":" if status else ""
    if word and reason.startswith(word):
        return ": " + reason[len(word):].strip()
    return f" — {reason}" if reason else ""


class TrajectoryTable(DataTable):
    """One row per verdict, newest last; the cursor follows the newest unless the person moved it."""

    def __init__(self, **kw) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kw)
        self.rows_shown: tuple[VerdictRow, ...] = ()

    def on_mount(self) -> None:
        self._columns_for(())

    def _columns_for(self, rows: tuple[VerdictRow, ...]) -> list[int]:
        widths = column_widths(rows)
        self.clear(columns=True)
        for (header, _, _), width in zip(columns(rows), widths):
            self.add_column(header, width=width)
        return widths

    def show(self, rows: tuple[VerdictRow, ...]) -> None:
        if rows == self.rows_shown:
            return
        follow = self.cursor_row >= len(self.rows_shown) - 1
        kept = None if follow or self.selected is None else self.selected.round  # the row the person chose
        self.rows_shown = rows
        widths = self._columns_for(rows)
        shown = columns(rows)
        for r in rows:
            cells: list[str | Text] = [clip(str(getattr(r, field)), width) for (_, field, _), width in zip(shown, widths)]
            cells[1] = Text(clip(r.status, widths[1]), style=VERDICT_STYLES.get(r.status, "red"))
            self.add_row(*cells, key=str(r.round))
        if rows and follow:
            self.move_cursor(row=len(rows) - 1)
        elif kept is not None:  # rebuilding the table put the cursor on the first row
            self.move_cursor(row=next((i for i, r in enumerate(rows) if r.round == kept), 0))

    @property
    def selected(self) -> VerdictRow | None:
        row = self.cursor_row
        return self.rows_shown[row] if self.rows_shown and 0 <= row < len(self.rows_shown) else None


class TrajectoryPane(Vertical):
    """The trajectory table and, under it, the selected verdict in full (nothing clipped there)."""

    def compose(self) -> ComposeResult:
        yield TrajectoryTable(id="trajectory-table")
        yield Static("no verdicts yet", id="trajectory-detail")

    def on_mount(self) -> None:
        self.border_title = "trajectory"

    def show(self, rows: tuple[VerdictRow, ...]) -> None:
        self.query_one(TrajectoryTable).show(rows)
        self._describe()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._describe()

    def _describe(self) -> None:
        row = self.query_one(TrajectoryTable).selected
        self.query_one("#trajectory-detail", Static).update(detail_text(row) if row else "no verdicts yet")


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
    """Device (or the interpreter warning), budget left, auto-approve, pause, proposer and model."""

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
        """The switches and the budget first: on a narrow screen the line wraps, and they stay in sight."""
        out = Text()
        s = self.base
        if s is not None:
            interp = "interpreter" in s.device.lower()
            out.append(s.device, style="bold red" if interp else "bold")
            if s.not_confined:
                out.append(" │ ")
                out.append("candidates are not confined", style="bold red")
            out.append(f" │ {s.left} of {s.total} rounds left │ ")
        out.append("auto-approve ON" if self.auto else "auto-approve off", style="bold magenta" if self.auto else "")
        if self.paused:
            out.append(" │ ")
            out.append("PAUSED", style="bold yellow")
        if s is not None:
            out.append(f" │ proposer {s.proposer} │ model {s.model}")
        self.update(out)
