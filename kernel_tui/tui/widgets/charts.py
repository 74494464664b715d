"""The three live charts. `plot()` only declares the chart from the ChartData it was given (and the size
it has to fill). Latency and improvement are plotext plots; how the verdicts ended is words, counts and
bars, which stay readable however narrow the chart.

Three quantities, kept apart as the report keeps them: each verdict's own latency (points) with the
accepted version's record line (moves only on an accept, starts at the first one); the gate's paired
improvement estimate per verdict (bars) against the threshold; and how many verdicts ended how.

A candidate more than twice as slow would stretch an axis until every other round sits on one row (one
25.6× slower than its incumbent is an improvement of -2458%). The axes are fitted to the other rounds,
and such a verdict is drawn at the axis' edge: ▼ and its speed as a ratio (0.039×) at the end of a bar
clipped there, when the gate's estimate is below -100%; ▲ and its latency, when that is more than twice
the baseline's and every accepted version's.
"""

from __future__ import annotations

import math

from rich.console import Group
from rich.text import Text
from textual.app import RenderResult
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from kernel_tui.core.format import speed_ratio, speed_ratio_text
from kernel_tui.tui.view import ChartData

# keyed by the words of kernel_tui.core.verdicts.LABELS (widgets do not import the core)
STATUS_COLOURS = {"accepted": "green", "rejected by the gate": "gray", "rejected by the person": "cyan"}
NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
FRAME_ROWS = 4  # the title, the frame's top and bottom lines, the x tick labels
FRAME_COLUMNS = 8  # y tick labels and the frame, for a chart of numbers
TWICE_AS_SLOW = 2.0  # beyond this (a candidate's time over its incumbent's), a verdict is clipped at the axis


# --- pure helpers: words and ticks -------------------------------------------------------------------

def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def fit(variants: tuple[str, ...], width: int) -> str:
    """The first (longest, most telling) variant that fits in width; the last one otherwise."""
    return next((v for v in variants if len(v) <= width), variants[-1])


def nice_step(span: float, count: int) -> float:
    """1, 2, 2.5 or 5 times a power of ten: at most `count` ticks over `span`."""
    raw = span / max(count - 1, 1)
    if not raw > 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in NICE_STEPS if m * magnitude >= raw * (1 - 1e-9))


def next_nice(step: float) -> float:
    magnitude = 10 ** math.floor(math.log10(step) + 1e-9)
    return next(m * magnitude for m in NICE_STEPS if m * magnitude > step * (1 + 1e-9))


def even_axis(lo: float, hi: float, rows: int, most: int = 6) -> tuple[list[float], tuple[float, float]]:
    """Round ticks that land on evenly spaced rows of a plot `rows` high, and the limits that make them.

    A plot maps a value to the nearest row, so ticks are even on screen only when the rows between two
    ticks are a whole number: the limits are stretched (less than one step, above) to make them so.
    """
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    steps = max(1, min(most - 1, (rows - 1) // 2))  # at least two rows from one tick label to the next
    if lo < 0 < hi:
        steps = max(steps, 2)  # one step from a multiple of it below zero never reaches above zero
    step = nice_step(hi - lo, steps + 1)
    while math.floor(lo / step + 1e-9) * step + steps * step < hi - step * 1e-9:
        step = next_nice(step)
    first = math.floor(lo / step + 1e-9) * step
    needed = max(1, math.ceil((hi - first) / step - 1e-9))  # fewer steps may do with the step found
    per_step = max(1, (rows - 1) // needed)
    span = step * max(rows - 1, 1) / per_step
    ticks = [first + i * step for i in range(max(rows - 1, 1) // per_step + 1)]
    return ticks, (first, first + span)


def integer_ticks(lo: int, hi: int, count: int) -> list[int]:
    """Whole numbers only (rounds, counts), evenly spaced, covering lo..hi."""
    step = max(1, math.ceil(nice_step(max(hi - lo, 1), count)))
    first = lo - lo % step
    return list(range(first, hi + step if hi % step else hi + 1, step))


def tick_labels(ticks: list[float]) -> list[str]:
    """As many decimals as the step needs, the same for every tick."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = 0
    while decimals < 6 and abs(round(step, decimals) - step) > step * 1e-6:
        decimals += 1
    return [f"{t:.{decimals}f}" for t in ticks]


def tick_count(cells: int, per_tick: int, most: int = 6) -> int:
    return max(2, min(most, cells // per_tick + 1))


def title_room(width: int, label_width: int) -> int:
    """The longest title plotext shows: it centres the title on the canvas (right of the y tick labels)
    and drops, rather than cuts, one that would cross the plot's edge."""
    canvas_start = label_width + 1
    centre = canvas_start + (width - canvas_start - 1) // 2
    return max(0, min(2 * (width - centre), 2 * centre + 1))


def ratio_label(improvement: float) -> str:
    """The incumbent's time over the candidate's, as every improvement below -100% is written: -2458% is 0.039×."""
    return speed_ratio_text(improvement)


def off_scale(improvement: float) -> bool:
    """More than twice as slow as its incumbent: drawn clipped, so that it does not squash the other rounds."""
    return speed_ratio(improvement) < 1 / TWICE_AS_SLOW


# --- the charts ----------------------------------------------------------------------------------------

class Keyed(Widget):
    """Holds the ChartData; keys to the marks go in the border subtitle (an in-plot legend would hide the
    data under it). KEYS and titles are given longest first; the longest that fits the width is shown."""

    KEYS: tuple[str, ...] = ("",)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.data = ChartData()

    def on_resize(self) -> None:
        self.border_subtitle = fit(self.KEYS, self.outer_size.width - 6)

    def set_data(self, data: ChartData) -> None:
        self.data = data
        self.refresh(layout=True)


class Chart(Keyed, PlotextPlot):
    DEFAULT_CSS = "Chart { height: 1fr; width: 1fr; }"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.titles: tuple[str, ...] = ()
        self.label_width = 0  # of the y tick labels: the title is centred on the canvas right of them

    def render(self) -> RenderResult:
        self.plt.clear_figure()
        self.titles, self.label_width = (), 0
        self.plot()
        if self.titles:  # once the tick labels are known: a title too long for the room left is not drawn
            self.plt.title(fit(self.titles, title_room(self.size.width, self.label_width)))
        return super().render()

    def plot(self) -> None:
        raise NotImplementedError

    def title(self, *variants: str) -> None:
        """Longest first: the longest that fits is shown."""
        self.titles = variants

    def _rounds_axis(self) -> None:
        rounds = list(self.data.rounds)
        if not rounds:
            return
        ticks = [t for t in integer_ticks(min(rounds), max(rounds), tick_count(self.size.width - FRAME_COLUMNS, 5, 12))
                 if t >= min(rounds)]
        self.plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
        self.plt.xlim(min(rounds) - 0.5, max(rounds) + 0.5)

    def _value_axis(self, values: list[float]) -> tuple[float, float]:
        """Round y ticks over the values, evenly spaced on screen; the axis' limits."""
        ticks, limits = even_axis(min(values), max(values), self.size.height - FRAME_ROWS)
        labels = tick_labels(ticks)
        self.plt.yticks(ticks, labels)
        self.plt.ylim(*limits)
        self.label_width = max(len(label) for label in labels)
        return limits

    def _clipped(self, x: float, y: float, label: str, colour: str) -> None:
        """A verdict off the scale, at the axis' edge: the label (▼ or ▲ and its figure) is its mark."""
        self.plt.text(label, x, y, color=colour, alignment="center")


def _scale(values: list[float]) -> tuple[float, str]:
    return (1e3, "ms") if values and max(values) >= 1e-3 else (1e6, "µs")


class LatencyChart(Chart):
    """Each verdict's own latency; the accepted version's record as a step line from the first accept."""

    KEYS = ("* accepted · o rejected · blue: record · gray: baseline", "* accepted · o rejected · blue: record",
            "* accepted · o rejected", "* acc · o rej")

    def plot(self) -> None:
        d, plt = self.data, self.plt
        reference = max([v for v in d.record if math.isfinite(v)] + ([d.baseline] if d.baseline else []), default=None)
        clipped = {r for r, v in zip(d.rounds, d.latencies)
                   if v is not None and reference is not None and v > TWICE_AS_SLOW * reference}
        known = [v for r, v in zip(d.rounds, d.latencies) if v is not None and r not in clipped]
        known += [v for v in d.record if math.isfinite(v)] + ([d.baseline] if d.baseline else [])
        scale, unit = _scale(known)
        where = " · CPU interpreter" if d.interpreter else ""
        self.title(f"latency per verdict ({unit}){where}", f"latency per verdict ({unit})", f"latency ({unit})")
        if not d.rounds:
            return
        self._record_line(scale)
        if d.baseline:
            plt.hline(d.baseline * scale, "gray")
        for accepted, marker, colour in ((False, "o", "gray"), (True, "*", "green")):
            pts = [(r, v * scale) for r, v, a in zip(d.rounds, d.latencies, d.accepted)
                   if v is not None and a == accepted and r not in clipped]
            if pts:
                plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=colour)
        if known:
            top = self._value_axis([v * scale for v in known])[1]
            for r, v, a in zip(d.rounds, d.latencies, d.accepted):
                if r in clipped and v is not None:
                    self._clipped(r, top, f"▲{v * scale:.3g}", "green" if a else "gray")
        self._rounds_axis()

    def _record_line(self, scale: float) -> None:
        """Steps: flat until the next accept; drawn first, so the verdicts' own points stay visible on top."""
        d = self.data
        xs: list[float] = []
        ys: list[float] = []
        points = [(r, v) for r, v in zip(d.rounds, d.record) if math.isfinite(v)]
        for i, (r, v) in enumerate(points):
            if i:
                xs.append(r)
                ys.append(points[i - 1][1] * scale)
            xs.append(r)
            ys.append(v * scale)
        if xs:
            xs.append(max(d.rounds) + 0.5)
            ys.append(ys[-1])
            self.plt.plot(xs, ys, color="blue")


class ImprovementChart(Chart):
    """The gate's paired improvement per verdict, % (bars), and the accept threshold (line)."""

    KEYS = ("green: accepted · gray: rejected · red: threshold", "green: accepted · red: threshold",
            "red: threshold")

    def plot(self) -> None:
        d, plt = self.data, self.plt
        if d.threshold is not None:
            self.title(f"paired improvement %, threshold {d.threshold:.1%}", f"improvement %, min {d.threshold:.1%}",
                       "improvement %")
        else:
            self.title("paired improvement %", "improvement %")
        if not d.rounds:
            return
        bars = [(r, v, a) for r, v, a in zip(d.rounds, d.improvements, d.accepted) if v is not None]
        shown = [0.0] + ([d.threshold * 100] if d.threshold is not None else [])
        shown += [v * 100 for _, v, _ in bars if not off_scale(v)]
        if any(off_scale(v) for _, v, _ in bars):  # room below zero: a clipped bar is at least the longest one
            shown.append(-max(abs(v) for v in shown) or -1.0)
        bottom = self._value_axis(shown)[0]
        for accepted, colour in ((True, "green"), (False, "gray")):
            pts = [(r, bottom if off_scale(v) else v * 100) for r, v, a in bars if a == accepted]
            if pts:
                plt.bar([p[0] for p in pts], [p[1] for p in pts], color=colour, width=0.4)
        if d.threshold is not None:
            plt.hline(d.threshold * 100, "red")
        plt.hline(0.0, "gray")
        for r, v, _ in bars:
            if off_scale(v):
                self._clipped(r, bottom, f"▼{ratio_label(v)}", "red")
        self._rounds_axis()


BAR_ROOM = 10  # the bars' share of the width the status chart asks for


def column_widths(statuses: tuple[tuple[str, int], ...]) -> tuple[int, int]:
    return max((len(name) for name, _ in statuses), default=0), max((len(str(n)) for _, n in statuses), default=1)


def status_bars(statuses: tuple[tuple[str, int], ...], width: int, height: int) -> Group:
    """How every verdict ended, as words, counts and bars: readable at any width (no axis to read)."""
    total = sum(n for _, n in statuses)
    title = Text(plural(total, "verdict") if statuses else "no verdicts yet", style="bold")
    shown = statuses if len(statuses) < height else statuses[: max(height - 2, 0)]  # and a line saying so
    label_width, count_width = column_widths(shown)
    room = max(width - label_width - count_width - 2, 1)
    most = max((n for _, n in statuses), default=1)
    rows = [Text.assemble(f"{name:>{label_width}} {n:>{count_width}} ",
                          ("█" * max(1, round(room * n / most)), STATUS_COLOURS.get(name, "red")), no_wrap=True)
            for name, n in shown]
    if len(shown) < len(statuses):
        rows.append(Text(f"… {plural(len(statuses) - len(shown), 'more kind')}", style="dim"))
    return Group(title, *rows)


class StatusChart(Keyed, Static):
    """How every verdict ended: accepted, ok but rejected by the gate, rejected by a person, failures."""

    DEFAULT_CSS = "StatusChart { height: 1fr; width: 1fr; padding: 0 1; }"
    KEYS = ("how each verdict ended", "outcomes")

    def get_content_width(self, container, viewport) -> int:
        """As wide as the words and counts, plus room for bars (the plots take the rest of the row)."""
        label_width, count_width = column_widths(self.data.statuses)
        return max(label_width + count_width + 2 + BAR_ROOM, len("no verdicts yet"))

    def get_content_height(self, container, viewport, width: int) -> int:
        """A line for the total and one per way of ending (where the screen lets it size itself)."""
        return len(self.data.statuses) + 1

    def render(self) -> RenderResult:
        return self.plot()

    def plot(self) -> Group:
        return status_bars(self.data.statuses, self.size.width, self.size.height)
