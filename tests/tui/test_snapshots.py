"""Snapshots of the main and history screens on a fixed workspace (fixed commits, numbers and times).

The main screen is shown at 80×24 (one pane at a time: the candidate, the charts, the trajectory),
120×40 and 200×60 (every pane), with round 5's proposal waiting: its changes sit at the far end of long
lines; and its charts at 80×24 with a round 25.6× slower than best. The history at 80×24, 120×40 and
160×50, and its help at 80×24. No evaluation runs, and nothing on screen depends on the temporary
path. Last, a check that every screen of kernel_tui/tui/screens/ has snapshots at 80×24 and 120×40 (here or
beside its own tests). Update with:
pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from textual.screen import Screen

from kernel_tui.tui.app import create_app
from tests.support.tui import fixed_app, wait_for_tables, wait_for_workers, wait_settled, wait_until
from tests.support.workspaces import ADA, fixed_git_dates, slow_round_workspace, waiting_workspace


@pytest.fixture
def round_5_app(tmp_path):
    """Round 5 is proposed when the app opens: its commit gets a fixed date, so a fixed sha."""
    ws = waiting_workspace(tmp_path / "ws", tmp_path / "candidates")
    with fixed_git_dates():
        yield create_app(ws.root, device="cpu", person=ADA)


def show_pane(key: str):
    async def run_before(pilot):
        await wait_settled(pilot)
        await pilot.press(key)
        await wait_for_tables(pilot)

    return run_before


def test_main_screen_80x24_candidate(round_5_app, snap_compare):
    assert snap_compare(round_5_app, terminal_size=(80, 24), run_before=wait_settled)


def test_main_screen_80x24_charts(round_5_app, snap_compare):
    assert snap_compare(round_5_app, terminal_size=(80, 24), run_before=show_pane("3"))


def test_main_screen_80x24_trajectory(round_5_app, snap_compare):
    assert snap_compare(round_5_app, terminal_size=(80, 24), run_before=show_pane("4"))


def test_main_screen_120x40(round_5_app, snap_compare):
    assert snap_compare(round_5_app, terminal_size=(120, 40), run_before=wait_settled)


def test_main_screen_200x60(round_5_app, snap_compare):
    assert snap_compare(round_5_app, terminal_size=(200, 60), run_before=wait_settled)


async def open_history(pilot):
    await wait_settled(pilot)
    await pilot.press("h")
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "data", None) is not None, 30, "history")
    await wait_for_workers(pilot)
    await pilot.press("down")  # the baseline, diffed against nothing earlier
    await pilot.press("up")  # back to round 1, diffed against the baseline
    await wait_for_workers(pilot)
    await wait_for_tables(pilot)


def test_history_screen(tmp_path, snap_compare):
    assert snap_compare(fixed_app(tmp_path), terminal_size=(160, 50), run_before=open_history)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_history_screen_keys(tmp_path, snap_compare, size):
    """Every key in the footer (120×40); at 80×24 the filters' are left out, and the line above names them."""
    async def every_proposal(pilot):
        await open_history(pilot)
        await pilot.press("v")
        await wait_for_workers(pilot)
        await wait_for_tables(pilot)

    assert snap_compare(fixed_app(tmp_path), terminal_size=size, run_before=every_proposal)


def test_history_help_80x24(tmp_path, snap_compare):
    async def history_help(pilot):
        await open_history(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(fixed_app(tmp_path), terminal_size=(80, 24), run_before=history_help)


def test_main_screen_80x24_charts_with_a_very_slow_round(tmp_path, snap_compare):
    """Round 5 is 25.6× slower than best: clipped at the axis' edge with its figure; the rest stay readable."""
    app = create_app(slow_round_workspace(tmp_path / "ws").root, device="cpu", person=ADA)
    assert snap_compare(app, terminal_size=(80, 24), run_before=show_pane("3"))


# --- every screen, at 80×24 and 120×40 -------------------------------------------------------------------

TESTS = Path(__file__).resolve().parents[1]
SNAPSHOTS = {  # a screen of kernel_tui/tui/screens/ -> its snapshots at 80×24 and at 120×40
    "MainScreen": ("tui/__snapshots__/test_snapshots/test_main_screen_80x24_candidate.svg",
                   "tui/__snapshots__/test_snapshots/test_main_screen_120x40.svg"),
    "HistoryScreen": ("tui/__snapshots__/test_snapshots/test_history_screen_keys[size0].svg",
                      "tui/__snapshots__/test_snapshots/test_history_screen_keys[size1].svg"),
    "PickerScreen": ("tui/screens/__snapshots__/test_picker/test_picker_snapshot[size0].svg",
                     "tui/screens/__snapshots__/test_picker/test_picker_snapshot[size1].svg"),
    "ProfileScreen": ("tui/screens/__snapshots__/test_profile/test_profile_snapshot[size0].svg",
                      "tui/screens/__snapshots__/test_profile/test_profile_snapshot[size1].svg"),
    "HelpScreen": ("tui/screens/__snapshots__/test_modals/test_help_snapshot[size0].svg",
                   "tui/screens/__snapshots__/test_modals/test_help_snapshot[size1].svg"),
    "EditScreen": ("tui/screens/__snapshots__/test_modals/test_editor_snapshot[size0].svg",
                   "tui/screens/__snapshots__/test_modals/test_editor_snapshot[size1].svg"),
    "ConfirmModal": ("tui/screens/__snapshots__/test_modals/test_discard_question_snapshot[size0].svg",
                     "tui/screens/__snapshots__/test_modals/test_discard_question_snapshot[size1].svg"),
    "ReasonModal": ("tui/screens/__snapshots__/test_modals/test_reason_snapshot[size0].svg",
                    "tui/screens/__snapshots__/test_modals/test_reason_snapshot[size1].svg"),
}


def terminal_size(svg: str) -> tuple[int, int]:
    """Columns and rows of a snapshot, from its terminal's clip rectangle (cells of 12.2 × 24.4 units)."""
    width, height = re.search(r'clip-terminal">\s*<rect x="0" y="0" width="([\d.]+)" height="([\d.]+)"', svg).groups()
    return round((float(width) + 1) / 12.2), round((float(height) + 1) / 24.4)


def test_every_screen_has_snapshots_at_80x24_and_120x40():
    import kernel_tui.tui.screens as package

    screens = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        screens |= {name for name, value in vars(module).items()
                    if inspect.isclass(value) and issubclass(value, Screen) and value.__module__ == module.__name__}
    assert screens == set(SNAPSHOTS), "a screen without snapshots (or a snapshot of a screen that is gone)"
    for name, paths in SNAPSHOTS.items():
        assert [terminal_size((TESTS / p).read_text(encoding="utf-8")) for p in paths] == [(80, 24), (120, 40)], name
