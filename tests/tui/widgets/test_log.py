"""The log pane: a line wraps at the pane's width whatever is on screen when it arrives, and re-flows when
the pane is shown at another width (it used to stay wrapped at ~20 columns)."""

from __future__ import annotations

from kernel_tui.tui.messages import LogLine
from kernel_tui.tui.screens.history import HistoryScreen
from kernel_tui.tui.widgets.log import LogPane
from tests.support.tui import run, wait_until, waiting_app
from tests.support.workspaces import waiting_workspace

WORDS = " ".join(f"word{i:02d}" for i in range(60))  # 419 columns, in words of 6


def wrapped_rows(log: LogPane) -> list[str]:
    return [line.text.rstrip() for line in log.lines if "word" in line.text]


def wrapped_at(log: LogPane, width: int) -> bool:
    """Every row of the long line but its last is as full as words of 6 allow at `width`."""
    rows = wrapped_rows(log)
    return " ".join(rows).split() == WORDS.split() and all(width - 7 <= len(row) <= width for row in rows[:-1])


def assert_wrapped_at(log: LogPane, width: int) -> None:
    assert wrapped_at(log, width), (width, [len(r) for r in wrapped_rows(log)])


async def post_and_wait(pilot, log: LogPane) -> None:
    pilot.app.main_screen.post_message(LogLine(WORDS, ""))
    await wait_until(pilot, lambda: wrapped_rows(log), 10, "the line")
    await pilot.pause()


def test_a_line_that_arrives_while_the_log_is_hidden_wraps_at_its_width_and_reflows_when_shown(tmp_path):
    """80×24: the log is one pane of five; the line arrives while another pane and then the history are shown."""
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(80, 24)) as (app, pilot):
            log = app.main_screen.query_one(LogPane)
            await pilot.press("5", "2", "h")  # the log shown once (its width is known), then hidden
            assert isinstance(app.screen, HistoryScreen) and log.scrollable_content_region.width == 0
            await post_and_wait(pilot, log)
            assert_wrapped_at(log, 76)  # the width it was last shown at, not min_width
            await pilot.press("escape")
            await pilot.resize_terminal(100, 30)  # still one pane at a time, each 20 columns wider
            await pilot.press("5")
            await pilot.pause()
            width = log.scrollable_content_region.width
            assert width == 96
            await wait_until(pilot, lambda: wrapped_at(log, width), 5, f"the log to re-flow at {width}")
            assert_wrapped_at(log, width)
            await pilot.press("q")

    run(scenario())


def test_a_line_that_arrives_behind_another_screen_reflows_to_the_width_the_log_comes_back_at(tmp_path):
    """120×40: every pane shown; the terminal grows while the help covers the run."""
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(120, 40)) as (app, pilot):
            log = app.main_screen.query_one(LogPane)
            before = log.scrollable_content_region.width
            await pilot.press("question_mark")
            await post_and_wait(pilot, log)
            assert_wrapped_at(log, before)
            await pilot.resize_terminal(160, 50)
            await pilot.press("escape")
            await pilot.pause()
            width = log.scrollable_content_region.width
            assert width > before
            await wait_until(pilot, lambda: wrapped_at(log, width), 5, f"the log to re-flow at {width}")
            assert_wrapped_at(log, width)
            assert log.scroll_y == log.max_scroll_y  # a log followed to its end stays at its end
            await pilot.press("q")

    run(scenario())
