"""The four PNG figures. matplotlib is imported only here, lazily, with the Agg backend; a figure that
cannot be drawn becomes a placeholder with a note, never a failed report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.core.metrics import Roof
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.report.records import RunRecords, accepted_record, category, status_counts
from kernel_tui.core.report.text import cell, format_latency
from kernel_tui.core.verdicts import ACCEPTED, REJECTED_BY_GATE, REJECTED_BY_PERSON, label

if TYPE_CHECKING:
    from matplotlib.artist import Artist

FIGURES = ("rounds_overview.png", "process_timeline.png", "status_breakdown.png", "roofline.png")
REJECTED = REJECTED_BY_GATE


def x_positions(lines: Sequence[TrajectoryLine]) -> list[float]:
    """x = round; verdicts sharing a round are spread a little so that none hides another."""
    by_round: dict[int, int] = {}
    for line in lines:
        by_round[line.round] = by_round.get(line.round, 0) + 1
    seen: dict[int, int] = {}
    xs = []
    for line in lines:
        n, i = by_round[line.round], seen.get(line.round, 0)
        seen[line.round] = i + 1
        xs.append(line.round + (0.0 if n == 1 else -0.3 + 0.6 * i / (n - 1)))
    return xs


def _parse_time(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _suptitle(fig, r: RunRecords, what: str) -> float:
    """Title, and the interpreter banner under it; returns the top of the room left for the axes."""
    height = fig.get_figheight()
    fig.text(0.5, 1 - 0.12 / height, f"{r.task_name}: {what}", ha="center", va="top", fontsize=13)
    if not r.interpreter:
        return 1 - 0.5 / height
    fig.text(0.5, 1 - 0.5 / height, "CPU INTERPRETER — timings are not GPU timings", ha="center", va="top",
             color="darkred", fontsize=11, fontweight="bold", bbox=dict(facecolor="#fff0f0", edgecolor="darkred"))
    return 1 - 0.9 / height


def _note_figure(path: Path, r: RunRecords, what: str, note: str) -> None:
    plt = _pyplot()
    fig = plt.figure(figsize=(8, 4))
    _suptitle(fig, r, what)
    fig.text(0.5, 0.45, note, ha="center", va="center", fontsize=14, color="dimgray")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def record_line(r: RunRecords, xs: list[float]) -> tuple[list[float], list[float], str | None]:
    """The record line of the rounds figure: x, the accepted version's latency in seconds (it changes only on
    an accept; NaN where unknown), and a note. Where the best is now a restore, the line ends at the latency
    of the version it carries, and the note says so."""
    if not xs:
        return [], [], None
    _, record = accepted_record(r.lines, r.restores)
    rx, ry = [*xs, max(xs) + 0.5], [*record, record[-1]]
    b = r.best
    if b is not None and b.restored_from and b.latency is not None:
        ry[-1] = b.latency
        return rx, ry, f"now {b.restored_from[:8]}, restored"
    return rx, ry, None


def _plot_rounds(path: Path, r: RunRecords) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    lines = r.lines
    xs = x_positions(lines)
    rx, record, restored = record_line(r, xs)
    baseline, _ = r.baseline_latency()
    known = [v for v in [ln.latency for ln in lines] + record + [baseline] if v is not None and math.isfinite(v)]
    scale, unit = (1e3, "ms") if known and max(known) >= 1e-3 else (1e6, "µs")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 8), height_ratios=[3, 2])
    room = _suptitle(fig, r, "rounds overview")

    for accepted in (False, True):
        pts = [(x, ln.latency * scale) for x, ln in zip(xs, lines) if ln.latency is not None and ln.accepted == accepted]
        if not pts:
            continue
        px, py = zip(*pts)
        if accepted:
            top.scatter(px, py, marker="*", s=260, color="tab:green", edgecolors="black", zorder=4,
                        label="candidate latency — accepted (filled star)")
        else:
            top.scatter(px, py, marker="o", s=55, facecolors="none", edgecolors="dimgray", linewidths=1.5,
                        zorder=3, label="candidate latency — rejected (open circle)")
    if any(math.isfinite(v) for v in record):
        top.plot(rx, [v * scale for v in record], drawstyle="steps-post", color="tab:blue", lw=2.2, zorder=2,
                 label="accepted version (record: changes only on accept" + (f"; {restored})" if restored else ")"))
    lost = [x for x, ln in zip(xs, lines) if ln.accepted and ln.latency is None]
    for i, x in enumerate(lost):
        top.axvline(x, color="tab:blue", ls=(0, (2, 3)), lw=1.2,
                    label="accepted, latency not recorded (gap in the record)" if i == 0 else None)
    if baseline is not None:
        top.axhline(baseline * scale, color="gray", ls=":", lw=1.5, label=f"baseline {format_latency(baseline)}")
    if not any(ln.latency is not None for ln in lines):
        top.text(0.5, 0.5, "no verdict has a latency", transform=top.transAxes, ha="center", color="dimgray")
    top.set_ylabel(f"median latency per call ({unit})")
    top.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=8, loc="best")

    imp = [(x, ln, ln.improvement) for x, ln in zip(xs, lines) if ln.improvement is not None]
    for x, ln, improvement in imp:
        h = improvement * 100
        if ln.accepted:
            bottom.bar(x, h, width=0.6, color="#9fd89f", edgecolor="black", hatch="///", zorder=2)
            tip = max(h, ln.ci_high * 100) if h >= 0 and ln.ci_high is not None else \
                min(h, ln.ci_low * 100) if ln.ci_low is not None else h
            bottom.annotate("accepted", (x, tip), xytext=(0, 4 if h >= 0 else -11), textcoords="offset points",
                            ha="center", fontsize=7, fontweight="bold")
        else:
            bottom.bar(x, h, width=0.6, color="lightgray", edgecolor="dimgray", zorder=2)
        if ln.ci_low is not None and ln.ci_high is not None:
            lo, hi = ln.ci_low * 100, ln.ci_high * 100
            bottom.errorbar(x, h, yerr=[[max(h - lo, 0)], [max(hi - h, 0)]], color="black", capsize=3, lw=1, zorder=3)
    none_x = [x for x, ln in zip(xs, lines) if ln.improvement is None]
    if none_x:
        bottom.scatter(none_x, [0] * len(none_x), marker="x", color="firebrick", zorder=3)
    bottom.axhline(0, color="black", lw=0.8)
    handles: list[Artist] = [Patch(facecolor="#9fd89f", edgecolor="black", hatch="///", label="paired improvement — accepted (hatched)"),
               Patch(facecolor="lightgray", edgecolor="dimgray", label="paired improvement — rejected (plain)")]
    if r.min_improvement is not None:
        bottom.axhline(r.min_improvement * 100, color="tab:red", ls="--", lw=1.5)
        handles.append(Line2D([], [], color="tab:red", ls="--", label=f"threshold: min improvement {r.min_improvement:.1%}"))
    if none_x:
        handles.append(Line2D([], [], marker="x", ls="", color="firebrick", label="no estimate (failed or not timed)"))
    bottom.legend(handles=handles, fontsize=8, loc="best")
    if not imp:
        bottom.text(0.5, 0.6, "no verdict has an improvement estimate", transform=bottom.transAxes,
                    ha="center", color="dimgray")
    bottom.set_ylabel("gate's paired improvement (%)\nbars: estimate, whiskers: CI")
    bottom.set_xlabel("round")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.grid(axis="y", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def timeline_axis(times: list[datetime]) -> tuple[list[float], str]:
    """Minutes since the first verdict, one unit on the whole axis, and a label naming the clock time
    it starts at (date tick labels mixed clock times with seconds)."""
    start = min(times)
    return [(t - start).total_seconds() / 60 for t in times], f"minutes since the first verdict ({start:%Y-%m-%d %H:%M} UTC)"


def _plot_timeline(path: Path, r: RunRecords) -> None:
    plt = _pyplot()
    timed = [(t, ln) for ln in r.lines if (t := _parse_time(ln.time)) is not None]
    if not timed:
        _note_figure(path, r, "process timeline", "no verdict has a readable time")
        return
    cats = list(status_counts([ln for _, ln in timed]))
    fig, ax = plt.subplots(figsize=(11, max(3.5, 1.2 + 0.55 * len(cats))))
    room = _suptitle(fig, r, "process timeline (verdicts over wall time)")
    styles = {ACCEPTED: dict(marker="*", s=260, color="tab:green", edgecolors="black"),
              REJECTED: dict(marker="o", s=60, facecolors="none", edgecolors="dimgray", linewidths=1.5),
              REJECTED_BY_PERSON: dict(marker="s", s=50, color="#bcd4ec", edgecolors="steelblue")}
    xs, axis_label = timeline_axis([t for t, _ in timed])
    for cat in cats:
        pts = [x for x, (_, ln) in zip(xs, timed) if category(ln) == cat]
        ax.scatter(pts, [cats.index(cat)] * len(pts), zorder=3, label=label(cat),
                   **styles.get(cat, dict(marker="X", s=60, color="firebrick")))
    span = max(xs) * 60
    middle = max(xs) / 2
    for x, (_, ln) in zip(xs, timed):
        text = f"r{ln.round} accepted: {cell(ln.change, 32)}" if ln.accepted else f"r{ln.round}"
        right = x <= middle
        ax.annotate(text, (x, cats.index(category(ln))), xytext=(7 if right else -7, 7),
                    textcoords="offset points", ha="left" if right else "right",
                    fontsize=8 if ln.accepted else 7, fontweight="bold" if ln.accepted else "normal")
    if span < 60:
        pad = (60 - span) / 2 / 60
        ax.set_xlim(-pad, max(xs) + pad)
        ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= max(xs) + pad])  # no time before the first verdict
    ax.set_yticks(range(len(cats)), [label(c) for c in cats])
    ax.set_ylim(-0.7, len(cats) - 0.3)
    ax.invert_yaxis()
    skipped = len(r.lines) - len(timed)
    ax.set_xlabel(f"{axis_label}; {len(timed)} verdicts over {span / 60:.1f} min"
                  + (f"; {skipped} without a readable time not shown" if skipped else ""))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


BAR_STYLES = {ACCEPTED: dict(color="#9fd89f", edgecolor="black", hatch="///"),
              REJECTED: dict(color="lightgray", edgecolor="dimgray"),
              REJECTED_BY_PERSON: dict(color="#bcd4ec", edgecolor="steelblue", hatch="..")}


def _plot_statuses(path: Path, r: RunRecords) -> None:
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    by = status_counts(r.lines)
    fig, ax = plt.subplots(figsize=(9, max(3.0, 1.2 + 0.5 * len(by))))
    failed = sum(v for k, v in by.items() if k not in (ACCEPTED, REJECTED))
    room = _suptitle(fig, r, f"{len(r.lines)} verdicts: {by.get(ACCEPTED, 0)} accepted, "
                      f"{by.get(REJECTED, 0)} rejected by the gate, {failed} other")
    names = list(by)
    for i, name in enumerate(names):
        style = BAR_STYLES.get(name, dict(color="#f2b8b8", edgecolor="firebrick"))
        ax.barh(i, by[name], **style)
        ax.text(by[name], i, f" {by[name]}", va="center", fontsize=10, fontweight="bold")
    ax.set_yticks(range(len(names)), [label(n) for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, max(by.values()) * 1.15 + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("verdicts")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _versions(r: RunRecords) -> list[tuple[str, float, bool]]:
    """(label, latency, accepted) of the baseline and every verdict with a latency."""
    out: list[tuple[str, float, bool]] = []
    baseline, _ = r.baseline_latency()
    if baseline is not None:
        out.append(("baseline", baseline, True))
    out += [(f"round {ln.round}", ln.latency, ln.accepted) for ln in r.lines if ln.latency]
    return out


def roofline_points(roof: Roof, versions: list[tuple[str, float, bool]]) -> list[tuple[str, float, float, bool]]:
    """Where each version sits in the roofline figure, (name, x, y, accepted): under a compute roof, x the
    task's arithmetic intensity and y the achieved FLOP/s; without one, x its place in order and y the
    achieved bytes/s in TB/s (cost-model counts over the latency)."""
    assert roof.nbytes is not None
    if roof.intensity is not None and roof.peak and roof.flops:
        return [(name, roof.intensity, roof.flops / seconds, accepted) for name, seconds, accepted in versions]
    return [(name, float(i), roof.nbytes / seconds / 1e12, accepted) for i, (name, seconds, accepted) in enumerate(versions)]


def _plot_roofline(path: Path, r: RunRecords) -> None:
    """Every version as a point under the measured roofs: achieved FLOP/s against the task's arithmetic
    intensity (all versions share it: the cost model is the task's), or achieved bytes/s per round where
    there is no compute roof."""
    roof = r.roofline_inputs()
    if not roof.usable:
        _note_figure(path, r, "roofline", f"no roofline: {roof.why}")
        return
    assert roof.nbytes is not None and roof.bandwidth is not None
    versions = _versions(r)
    if not versions:
        _note_figure(path, r, "roofline", "no version has a latency yet")
        return
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    intensity = roof.intensity
    points = roofline_points(roof, versions)
    if intensity is not None and roof.peak and roof.flops:
        room = _suptitle(fig, r, f"roofline: {roof.dtype} matmul peak {roof.peak / 1e12:.0f} TFLOP/s, "
                                 f"copy {roof.bandwidth / 1e12:.2f} TB/s")
        ridge = roof.peak / roof.bandwidth
        lo, hi = min(intensity, ridge) / 30, max(intensity, ridge) * 30
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(xs, [min(roof.peak, x * roof.bandwidth) for x in xs], color="black", lw=1.5, label="roof")
        for name, x, y, accepted in points:
            ax.plot(x, y, "*" if accepted else "o", ms=11 if accepted else 7,
                    color="goldenrod" if name == "baseline" else ("seagreen" if accepted else "gray"),
                    mfc="none" if not accepted else None, label=None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axvline(intensity, color="steelblue", lw=0.8, ls=":")
        ax.set_xlabel("arithmetic intensity (cost-model FLOP / byte)")
        ax.set_ylabel("achieved FLOP/s")
    else:
        why = "no matmul peak measured" if roof.flops else "the cost model counts no FLOPs"
        room = _suptitle(fig, r, f"bandwidth roof {roof.bandwidth / 1e12:.2f} TB/s ({why})")
        for name, x, y, accepted in points:
            ax.plot(x, y, "*" if accepted else "o", ms=11 if accepted else 7,
                    color="goldenrod" if name == "baseline" else ("seagreen" if accepted else "gray"),
                    mfc="none" if not accepted else None)
        ax.axhline(roof.bandwidth / 1e12, color="black", lw=1.5)
        ax.set_xticks(range(len(versions)), [v[0] for v in versions], rotation=60, fontsize=7)
        ax.set_ylabel("achieved TB/s (cost-model bytes / latency)")
        ax.set_ylim(0, roof.bandwidth / 1e12 * 1.15)
    best = min(versions, key=lambda v: v[1])
    place = roof.place(best[1])
    if place is not None:
        ax.set_title(f"fastest: {best[0]}, {format_latency(best[1])}, {place.fraction:.1%} of roofline, {place.words}",
                     fontsize=10)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_figures(ws: Path, records: RunRecords) -> tuple[list[Path], list[str]]:
    """Every figure into the workspace: (the paths written, notes on the figures that failed)."""
    plotters = {"rounds_overview.png": (_plot_rounds, "rounds overview"),
                "process_timeline.png": (_plot_timeline, "process timeline"),
                "status_breakdown.png": (_plot_statuses, "status breakdown"),
                "roofline.png": (_plot_roofline, "roofline")}
    written: list[Path] = []
    notes: list[str] = []
    for name in FIGURES:
        plot, what = plotters[name]
        path = ws / name
        try:
            if records.lines:
                plot(path, records)
            else:
                _note_figure(path, records, what, "no verdicts yet")
            written.append(path)
        except Exception as exc:  # noqa: BLE001 - a figure must never stop the report; say what went wrong instead
            notes.append(f"{name} could not be drawn: {type(exc).__name__}: {exc}")
            try:
                _pyplot().close("all")
                _note_figure(path, records, what, f"figure failed: {type(exc).__name__}")
                written.append(path)
            except Exception as exc2:  # noqa: BLE001 - nothing more to try
                notes.append(f"{name}: placeholder failed too ({type(exc2).__name__})")
    return written, notes
