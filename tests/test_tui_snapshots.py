"""Snapshots of the main and history screens on a fixed workspace (fixed commits, numbers and times).

No evaluation runs (the budget is spent), the focus sits on a table (no text cursor), and nothing on
screen depends on the temporary path. Update with: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.tui.app import create_app
from tests.test_tui_support import (
    ADA,
    CANDIDATES,
    fixed_workspace,
    wait_for_tables,
    wait_for_workers,
    wait_settled,
    wait_until,
)


def fixed_app(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    return create_app(ws.root, device="cpu", proposer=ReplayProposer(CANDIDATES), person=ADA)


def test_main_screen(tmp_path, snap_compare):
    assert snap_compare(fixed_app(tmp_path), terminal_size=(160, 50), run_before=wait_settled)


def test_main_screen_small_terminal(tmp_path, snap_compare):
    assert snap_compare(fixed_app(tmp_path), terminal_size=(100, 30), run_before=wait_settled)


def test_history_screen(tmp_path, snap_compare):
    async def open_history(pilot):
        await wait_settled(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "data", None) is not None, 30, "history")
        await wait_for_workers(pilot)
        await pilot.press("down")  # the baseline, diffed against nothing earlier
        await pilot.press("up")  # back to round 1, diffed against the baseline
        await wait_for_workers(pilot)
        await wait_for_tables(pilot)

    assert snap_compare(fixed_app(tmp_path), terminal_size=(160, 50), run_before=open_history)
