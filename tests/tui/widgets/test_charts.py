"""The charts with a round 25× slower than best: the axes stay fitted to the other rounds, the slow one is
drawn clipped with its figure, and the titles stay (a -2455% bar used to set the axis to -20000000000)."""

from __future__ import annotations

import re

import pytest

from kernel_tui.tui.app import create_app
from kernel_tui.tui.widgets.charts import (
    ImprovementChart,
    LatencyChart,
    even_axis,
    off_scale,
    ratio_label,
    title_room,
)
from tests.support.tui import rendered, run, wait_for_tables, wait_settled
from tests.support.workspaces import ADA, slow_round_workspace


def y_ticks(text: str) -> list[float]:
    return [float(m[1]) for m in re.finditer(r"^│?\s*(-?\d[\d.]*)\s*[┤├]", text, re.M)]


def test_an_axis_across_zero_on_a_short_chart_stays_near_its_values():
    for lo, hi in ((-2455.0, 18.0), (-7.3, 18.0), (-0.5, 0.25)):
        for rows in (3, 4, 5, 8):
            ticks, (bottom, top) = even_axis(lo, hi, rows)
            assert bottom <= lo and top >= hi and 0.0 in ticks, (lo, hi, rows, ticks)
            assert top - bottom <= 4 * (hi - lo), (lo, hi, rows, ticks)


def test_a_slowdown_is_a_speed_ratio_and_beyond_twice_as_slow_it_is_off_the_scale():
    assert ratio_label(-24.55) == "0.039×" and ratio_label(-1.63) == "0.38×" and ratio_label(0.5) == "2×"
    assert not off_scale(-1.0) and off_scale(-1.01) and not off_scale(0.18)


def test_the_title_room_is_what_plotext_draws():
    """plotext centres the title on the canvas, right of the y tick labels, and drops one that does not fit."""
    import plotext as plt

    for width in (20, 33, 40):
        for label_width in (1, 4, 12):
            longest = 0
            for length in range(1, width + 2):
                plt.clear_figure()
                plt.plotsize(width, 10)
                plt.scatter([1, 2], [0, 1])
                plt.yticks([0, 1], ["8" * label_width, "9" * label_width])
                plt.title("T" * length)
                if "T" * length in plt.build():
                    longest = length
            assert longest == title_room(width, label_width), (width, label_width)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_one_very_slow_round_is_clipped_and_the_other_rounds_and_the_titles_stay_readable(tmp_path, size):
    ws = slow_round_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=size) as pilot:
            await wait_settled(pilot)
            await pilot.press("3")  # the charts (at 80×24, one pane at a time)
            await wait_for_tables(pilot)
            latency = rendered(app.main_screen.query_one(LatencyChart))
            improvement = rendered(app.main_screen.query_one(ImprovementChart))
            assert "latency" in latency and "improvement %" in improvement  # the titles
            assert "▼0.039×" in improvement  # round 5: its speed against its incumbent, at the axis' bottom
            assert "▲41.9" in latency  # its latency (ms), at the axis' top
            assert y_ticks(improvement) and all(abs(t) <= 50 for t in y_ticks(improvement)), improvement
            assert y_ticks(latency) and all(t <= 2.5 for t in y_ticks(latency)), latency
            await pilot.press("q")

    run(scenario())
