"""History: the accepted lineage (git log of best) or every proposal; a version's source and diffs; restore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from kernel_tui.tui.messages import DetailLoaded, HistoryLoaded, Restored
from kernel_tui.tui.screens.modals import ConfirmModal
from kernel_tui.tui.view import NA, HistoryData, VersionRow
from kernel_tui.tui.widgets.diff import DiffText
from kernel_tui.tui.widgets.footer import KeyFooter, Tiers
from kernel_tui.tui.widgets.source import code_view

if TYPE_CHECKING:
    from kernel_tui.tui.controller import Controller

BASES = ("previous", "baseline", "marked")
# The screen must not import the core (it paints before the core loads): the column legend is its own.
FIGURES_LEGEND = ("gate vs inc. = the gate's paired estimate against the incumbent the round was judged against "
                  "(not today's best) · lat. vs base = 1 - latency / baseline latency")
# Keyed by the words shown (kernel_tui.core.verdicts and history.VERSION_LABELS); failures are red.
STATUS_STYLES = {"accepted": "bold green", "baseline": "bold", "restored": "bold cyan", "chosen start": "bold cyan",
                 "rejected by the gate": "yellow",
                 "rejected by the person": "cyan", "unevaluated draft": "dim", "pending": "dim"}


AFTER_RESTORE = "The run pauses: n runs one round against it, space resumes."


def restore_question(row: VersionRow) -> str:
    question = (f"Restore {row.short} ({row.change[:50]}) as the incumbent? A new commit on best; nothing is "
                f"rewritten. {AFTER_RESTORE}")
    if row.latency == NA:  # a draft, a failure, a version a person rejected: later rounds would be judged against it
        return (f"⚠ {row.short} was never measured ({row.status}): as the incumbent it has no latency to compare "
                f"against.\n{question}")
    if row.status == "rejected by the gate":  # measured, and found not faster than what it was judged against
        instead = " (b makes it the starting point instead, recorded as your choice)" if row.startable else ""
        return (f"⚠ the gate rejected {row.short}: not faster than its incumbent ({row.vs_previous}). Later rounds "
                f"are judged against it{instead}.\n{question}")
    return question


def start_question(row: VersionRow) -> str:
    """b: what starting from a version means, asked before it is done."""
    return (f"Start from {row.short} ({row.change[:50]})? It passed correctness; {row.start_note}. It becomes best "
            "by your choice, not by a verdict, and the history and the report say so; the search then starts "
            f"from it. A new commit on best; nothing is rewritten. {AFTER_RESTORE}")


HISTORY_HELP = f"""\
[b]History[/b]: the accepted lineage (git log best --first-parent, newest first) \
or every proposal; on the right, the selected version's change, verdict and diff.

[b]Keys[/b]
  ↑ ↓      select a version
  v        all: every proposal / back to the accepted lineage
  s        status: every proposal of one status; each press the next
           status, then all again
  o        proposer: every proposal of one proposer (likewise)
  m        mark the selected version (◆), or unmark it
  d        diff base: the diff is against the previous version, the
           baseline or the marked one; each press the next
  f        source: the selected version's full source / its diff
  r        restore the selected version as the incumbent: asks first
           (and warns for a version the gate rejected or never
           measured), then a new commit on best (nothing is rewritten);
           later rounds are judged against it. The run pauses: n runs
           one round, space resumes
  b        start from the selected version: where the task starts from
           PyTorch eager, make a correct Triton version the gate did not
           find faster than eager (always so on the CPU interpreter) the
           starting point by your choice, recorded so in the history and
           the report; the built-in search starts from it
  i        profile: the selected version's profile, and what changed
           against the diff base
  esc / h  back to the run
  ?        this help          q   quit

[b]The table[/b]: ★ best · ◆ marked · {FIGURES_LEGEND}.

Keys can be remapped by binding id: history-back, history-all, history-status, \
history-proposer, history-mark, history-diff-base, history-source, history-restore, \
history-start-from, history-profile. A narrow footer leaves some keys out; they all still work.
"""
# Footer keys left out below a width (they still work; ? lists every key); the line under the table names them.
# (b is named in the detail of a version it applies to.)
FOOTER_TIERS: Tiers = ((100, frozenset({"status_filter", "proposer_filter", "start_from"})),)


def cycle(options: list[str], current: str) -> str:
    return options[(options.index(current) + 1) % len(options)] if current in options else options[0]


class HistoryScreen(Screen):
    AUTO_FOCUS = "#versions"
    BINDINGS = [
        Binding("escape,h", "back", "Back", id="history-back"),
        Binding("v", "toggle_all", "All", id="history-all"),
        Binding("s", "status_filter", "Status", id="history-status"),
        Binding("o", "proposer_filter", "Proposer", id="history-proposer"),
        Binding("m", "mark", "Mark", id="history-mark"),
        Binding("d", "diff_base", "Diff base", id="history-diff-base"),
        Binding("f", "toggle_source", "Source", id="history-source"),
        Binding("r", "restore", "Restore", id="history-restore"),
        Binding("b", "start_from", "Start from", id="history-start-from"),
        Binding("i", "profile", "Profile", id="history-profile"),
    ]
    KEYS_HELP = HISTORY_HELP  # what ? shows on this screen

    def __init__(self, controller: Controller) -> None:
        super().__init__(id="history")
        self.controller = controller
        self.data: HistoryData | None = None
        self.show_all = False
        self.status_filter = "all"
        self.proposer_filter = "all"
        self.marked: str | None = None
        self.base = "previous"
        self.shown: list[VersionRow] = []

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="history-body"):
            yield DataTable(id="versions", cursor_type="row", zebra_stripes=True)
            with Vertical(id="version-detail"):
                yield Static("", id="detail-info")
                with VerticalScroll(id="detail-diff-box"):
                    yield Static("", id="detail-diff")
                yield code_view("detail-source")
        yield Static("", id="history-line")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#versions", DataTable)
        for label, width in (("commit", 10), ("round", 5), ("status", 18), ("latency", 9), ("gate vs inc.", 12),
                             ("lat. vs base", 12), ("proposer", 28), ("change", 60)):
            table.add_column(label, width=width)  # fixed: auto widths are measured late (see TrajectoryTable)
        self.query_one("#version-detail").border_title = "select a version"
        self.reload()

    def on_resize(self, event) -> None:
        self.query_one(KeyFooter).fit(event.size.width, FOOTER_TIERS)

    def reload(self) -> None:
        self.app.load_history(self.controller, self)  # type: ignore[attr-defined]

    # --- data ------------------------------------------------------------------------------------------
    @on(HistoryLoaded)
    def _loaded(self, message: HistoryLoaded) -> None:
        self.data = message.data
        self.fill()

    def rows(self) -> list[VersionRow]:
        if self.data is None:
            return []
        if not self.show_all:
            return list(self.data.lineage)
        return [r for r in self.data.proposals
                if self.status_filter in ("all", r.status) and self.proposer_filter in ("all", r.proposer)]

    def fill(self) -> None:
        table = self.query_one("#versions", DataTable)
        keep = self.selected.commit if self.selected else None
        table.clear()
        self.shown = self.rows()
        best = self.data.best if self.data else ""
        for r in self.shown:
            mark = ("★" if r.commit == best else "") + ("◆" if r.commit == self.marked else "")
            table.add_row(
                f"{mark}{r.short}", "-" if r.round is None else str(r.round),
                Text(r.status, style=STATUS_STYLES.get(r.status, "red")), r.latency, r.vs_previous, r.vs_baseline,
                r.proposer, r.change[:60],
            )
        index = next((i for i, r in enumerate(self.shown) if r.commit == keep), 0)
        if self.shown:
            table.move_cursor(row=index)
        self.describe()

    def describe(self) -> None:
        what = "every proposal" if self.show_all else "accepted lineage, newest first"
        filters = f" · s status: {self.status_filter} · o proposer: {self.proposer_filter}" if self.show_all else ""
        marked = f" · marked {self.marked[:8]}" if self.marked else ""
        self.query_one("#history-line", Static).update(
            f"{what}{filters}{marked} · d diff against: {self.base} · ★ best ◆ marked\n{FIGURES_LEGEND}")

    @property
    def selected(self) -> VersionRow | None:
        table = self.query_one("#versions", DataTable)
        if not self.shown or table.cursor_row is None or not 0 <= table.cursor_row < len(self.shown):
            return None
        return self.shown[table.cursor_row]

    @on(DataTable.RowHighlighted, "#versions")
    def _highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.load_detail()

    def load_detail(self) -> None:
        row = self.selected
        if row is None or self.data is None:
            return
        against = self._against(row)
        kind = self.base if self.base != "marked" or self.marked else "previous"
        label = f"{kind} ({against[:8]})" if against else "previous (none)"
        self.app.load_detail(self.controller, self, row.commit, against, label)  # type: ignore[attr-defined]

    @on(DetailLoaded)
    def _detail(self, message: DetailLoaded) -> None:
        d = message.detail
        if self.selected is None or self.selected.commit != d.commit:
            return  # the selection moved on
        row = self.selected
        box = self.query_one("#version-detail")
        box.border_title = f"{d.commit[:8]} · diff against {d.against}"
        info = Text()
        if row is not None:
            info.append(f"{row.change}\n", style="bold")
            if row.startable:  # the way on from a task that starts from PyTorch eager: first, the box is 4 lines
                info.append("b starts from this version (correct; not faster than eager by the gate)\n", style="bold cyan")
            peak = f" · peak {row.memory}" if row.memory != NA else ""
            info.append(f"{row.proposer} · {row.status} · {row.latency}{peak}" + (f" · {row.reason}" if row.reason else ""))
        for line in d.profile:  # the version's profile and what changed against the diff base (i opens it)
            info.append(f"\n{line}", style="magenta")
        self.query_one("#detail-info", Static).update(info)
        self.query_one("#detail-diff", Static).update(DiffText(d.diff))
        area = self.query_one("#detail-source")
        if area.text != d.source:  # type: ignore[attr-defined]
            area.load_text(d.source)  # type: ignore[attr-defined]

    # --- actions ---------------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self.fill()

    def action_status_filter(self) -> None:
        if self.data is None:
            return
        self.show_all = True
        self.status_filter = cycle(["all", *sorted({r.status for r in self.data.proposals})], self.status_filter)
        self.fill()

    def action_proposer_filter(self) -> None:
        if self.data is None:
            return
        self.show_all = True
        self.proposer_filter = cycle(["all", *sorted({r.proposer for r in self.data.proposals})], self.proposer_filter)
        self.fill()

    def action_mark(self) -> None:
        row = self.selected
        if row is not None:
            self.marked = None if self.marked == row.commit else row.commit
            self.fill()

    def action_diff_base(self) -> None:
        self.base = cycle(list(BASES), self.base)
        if self.base == "marked" and not self.marked:
            self.notify("no version is marked (m marks the selected one): diffing against previous")
        self.describe()
        self.load_detail()

    def action_toggle_source(self) -> None:
        self.query_one("#version-detail").toggle_class("source")

    def _against(self, row: VersionRow) -> str | None:
        """The version the detail is diffed against (the d key's choice)."""
        if self.base == "baseline" and self.data is not None:
            return self.data.baseline
        if self.base == "marked" and self.marked:
            return self.marked
        return row.parent or None

    def action_profile(self) -> None:
        from kernel_tui.tui.screens.profile import ProfileScreen

        row = self.selected
        if row is not None:
            self.app.push_screen(ProfileScreen(self.controller, row.commit, self._against(row)))

    def action_restore(self) -> None:
        row = self.selected
        if row is None:
            return

        self.app.push_screen(ConfirmModal(restore_question(row)), lambda yes: self._queue_restore(row, yes, start=False))

    def action_start_from(self) -> None:
        row = self.selected
        if row is None:
            return
        if not row.startable:
            self.notify(f"b: {row.start_note}" if row.start_note else "b: not a version to start from", severity="warning")
            return
        self.app.push_screen(ConfirmModal(start_question(row)), lambda yes: self._queue_restore(row, yes, start=True))

    def _queue_restore(self, row: VersionRow, yes: bool | None, *, start: bool) -> None:
        if not yes:
            return
        waiting = self.controller.waiting
        if waiting is not None:  # the round holds the workspace until the person decides it
            self.notify(f"queued: it runs once round {waiting.round}'s proposal is decided — esc back to the run, "
                        "then a approves or r rejects it", severity="warning", timeout=10)
        self.app.restore_version(self.controller, self, row.commit, start=start)  # type: ignore[attr-defined]

    @on(Restored)
    def _restored(self, message: Restored) -> None:
        """Back to the run, where best, the candidate pane and the state line show what changed."""
        self.notify(message.text, timeout=10)
        if self.app.screen is self:
            self.app.pop_screen()
        else:
            self.reload()
