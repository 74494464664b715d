"""The three live charts. `plot()` only declares the chart from the ChartData it was given.

Three quantities, kept apart as the report keeps them: each verdict's own latency (points) with the
accepted version's record line (moves only on an accept, starts at the first one); the gate's paired
improvement estimate per verdict (bars) against the threshold; and how many verdicts ended how.
"""

from __future__ import annotations

import math

from rich.console import RenderableType
from textual_plotext import PlotextPlot

from kernel_tui.tui.view import ChartData

# keyed by the words of kernel_tui.core.verdicts.LABELS (widgets do not import the core)
STATUS_COLOURS = {"accepted": "green", "rejected by the gate": "gray", "rejected by the person": "cyan"}


class Chart(PlotextPlot):
    """Keys to the marks go in the border subtitle: an in-plot legend would hide the data under it."""

    DEFAULT_CSS = "Chart { height: 1fr; width: 1fr; }"
    KEY = ""

    def on_mount(self) -> None:
        super().on_mount()
        self.border_subtitle = self.KEY

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.data = ChartData()

    def set_data(self, data: ChartData) -> None:
        self.data = data
        self.refresh()

    def render(self) -> RenderableType:
        self.plt.clear_figure()
        self.plot()
        return super().render()

    def plot(self) -> None:
        raise NotImplementedError

    def _rounds_axis(self) -> None:
        rounds = list(self.data.rounds)
        if rounds and len(rounds) <= 12:
            self.plt.xticks(rounds)
        if rounds:
            self.plt.xlim(min(rounds) - 0.5, max(rounds) + 0.5)


def _scale(values: list[float]) -> tuple[float, str]:
    return (1e3, "ms") if values and max(values) >= 1e-3 else (1e6, "µs")


class LatencyChart(Chart):
    """Each verdict's own latency; the accepted version's record as a step line from the first accept."""

    KEY = "* accepted · o rejected · blue: record · gray: baseline"

    def plot(self) -> None:
        d, plt = self.data, self.plt
        suffix = " · CPU interpreter" if d.interpreter else ""
        known = [v for v in d.latencies if v is not None] + [v for v in d.record if math.isfinite(v)]
        scale, unit = _scale(known + ([d.baseline] if d.baseline else []))
        plt.title(f"latency per verdict ({unit}){suffix}")
        if not d.rounds:
            return
        xs, ys = [], []
        points = [(r, v) for r, v in zip(d.rounds, d.record) if math.isfinite(v)]
        for i, (r, v) in enumerate(points):  # steps: flat until the next accept
            if i:
                xs.append(r)
                ys.append(points[i - 1][1] * scale)
            xs.append(r)
            ys.append(v * scale)
        if xs:
            xs.append(max(d.rounds) + 0.5)
            ys.append(ys[-1])
            plt.plot(xs, ys, color="blue")  # drawn first: the verdicts' own points stay visible on top
        if d.baseline:
            plt.hline(d.baseline * scale, "gray")
        for accepted, marker, colour in ((False, "o", "gray"), (True, "*", "green")):
            pts = [(r, v * scale) for r, v, a in zip(d.rounds, d.latencies, d.accepted) if v is not None and a == accepted]
            if pts:
                plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=colour)
        self._rounds_axis()


class ImprovementChart(Chart):
    """The gate's paired improvement per verdict, % (bars), and the accept threshold (line)."""

    KEY = "green: accepted · gray: rejected · red: threshold"

    def plot(self) -> None:
        d, plt = self.data, self.plt
        threshold = f", threshold {d.threshold:.1%}" if d.threshold is not None else ""
        plt.title(f"paired improvement %{threshold}")
        if not d.rounds:
            return
        for accepted, colour in ((True, "green"), (False, "gray")):
            pts = [(r, v * 100) for r, v, a in zip(d.rounds, d.improvements, d.accepted) if v is not None and a == accepted]
            if pts:
                plt.bar([p[0] for p in pts], [p[1] for p in pts], color=colour, width=0.4)
        if d.threshold is not None:
            plt.hline(d.threshold * 100, "red")
        plt.hline(0.0, "gray")
        self._rounds_axis()


class StatusChart(Chart):
    """How every verdict ended: accepted, ok but rejected by the gate, rejected by a person, failures."""

    KEY = "how each verdict ended"

    def plot(self) -> None:
        d, plt = self.data, self.plt
        total = sum(n for _, n in d.statuses)
        if not d.statuses:
            plt.title(f"{total} verdicts")
            return
        for i, (name, n) in enumerate(d.statuses):
            plt.bar([i], [n], orientation="horizontal", color=STATUS_COLOURS.get(name, "red"), width=0.5)
        rows = self.size.height - 3  # title, frame, axis
        if rows >= len(d.statuses):
            plt.title(f"{total} verdicts")
            plt.yticks(list(range(len(d.statuses))), [f"{name} {n}" for name, n in d.statuses])
        else:  # too short for a label per bar: the counts go in the title, bars unlabelled
            plt.title(" · ".join(f"{name} {n}" for name, n in d.statuses))
            plt.yticks([])
        plt.xlim(0, max(n for _, n in d.statuses) * 1.15 + 0.5)
