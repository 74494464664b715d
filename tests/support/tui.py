"""Helpers for the screen's tests: the app built through the real factory, run under `App.run_test`, and
waits for what it does in its own time (workers, a proposal, tables sizing their columns)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.tui.app import KernelTuiApp, create_app
from kernel_tui.tui.widgets.run import EvalBar
from kernel_tui.tui.widgets.source import CandidatePane
from kernel_tui.tui.workers import LONG_LIVED
from tests.support.workspaces import ADA, CANDIDATES, RecordingReplay, fixed_workspace

SIZE = (160, 50)  # every pane shown, the charts with room


def run(coro) -> object:
    return asyncio.run(coro)


def app_for(ws_root, **kw) -> KernelTuiApp:
    """The app on a workspace, with a replay proposer that keeps its feedback unless another is given."""
    kw.setdefault("proposer", RecordingReplay())
    return create_app(ws_root, device="cpu", person=ADA, **kw)


def fixed_app(tmp_path: Path) -> KernelTuiApp:
    """The app on the fixed workspace (four judged rounds, the budget spent) under tmp_path."""
    ws = fixed_workspace(tmp_path / "ws")
    return create_app(ws.root, device="cpu", proposer=ReplayProposer(CANDIDATES), person=ADA)


@contextlib.asynccontextmanager
async def waiting_app(target: Path, *, round_no: int, size: tuple[int, int], notifications: bool = False,
                      **app_kw: Any) -> AsyncIterator[tuple[KernelTuiApp, Pilot]]:
    """The app on `target` (a workspace, or a task with `workspace=` in `app_kw`) under `run_test` at `size`,
    from the moment round `round_no`'s proposal waits for a decision and shows in the candidate pane.

    `app_kw` goes to `create_app` (proposer, max_steps, gpus, ...); the person is ADA, the device the CPU.
    """
    app = create_app(target, device="cpu", person=ADA, **app_kw)
    async with app.run_test(size=size, notifications=notifications) as pilot:
        await waiting_for_decision(pilot, round_no)
        yield app, pilot


async def waiting_for_decision(pilot, round_no: int) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: app.controller is not None and app.controller.waiting is not None
                     and app.controller.waiting.round == round_no, 120, f"round {round_no} to await a decision")
    await wait_until(pilot, lambda: pane(app).pending is not None and pane(app).pending.round == round_no, 10, "the pane")


async def wait_until(pilot, predicate: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")


async def wait_for_workers(pilot, timeout: float = 60.0, ignore: frozenset[str] = LONG_LIVED) -> None:
    """Until every worker except the long-lived ones (the session loop, the agent log) has finished."""
    await wait_until(pilot, lambda: all(w.is_finished for w in pilot.app.workers if w.group not in ignore),
                     timeout, "workers to finish")
    await pilot.pause()


async def wait_settled(pilot, timeout: float = 60.0) -> None:
    """Until the workspace is open and the run has settled: idle, paused, or awaiting a decision."""
    app = pilot.app

    def settled() -> bool:
        if app.controller is None or not app.controller.ready.is_set() or app.main_screen is None:
            return False
        state = app.main_screen.query_one("#eval").state
        return state.startswith(("idle", "paused")) or "awaiting your decision" in state

    await wait_until(pilot, settled, timeout, "a settled run")
    await wait_for_workers(pilot, timeout)
    await wait_for_tables(pilot, timeout)


async def wait_for_tables(pilot, timeout: float = 30.0) -> None:
    """DataTables size their columns on idle: a screenshot taken before that shows header widths.

    (Reads two private attributes of DataTable; there is no public "layout done" signal.)
    """
    from textual.widgets import DataTable

    def done() -> bool:
        return all(not t._updated_cells and not t._require_update_dimensions for t in pilot.app.screen.query(DataTable))

    await wait_until(pilot, done, timeout, "the tables to size their columns")
    await pilot.pause()


def run_state(app) -> str:
    return app.main_screen.query_one(EvalBar).state


def log_text(app) -> str:
    """The log's words, whatever the width its lines were wrapped at."""
    return " ".join(" ".join(line.text for line in app.main_screen.query_one("#log").lines).split())


def pane(app) -> CandidatePane:
    return app.main_screen.query_one(CandidatePane)


def rendered(widget) -> str:
    """What the widget draws inside its frame, at its width (beyond a scrolled viewport too), as plain text."""
    from rich.console import Console

    console = Console(width=widget.content_size.width, record=True, file=io.StringIO())
    drawn = widget.render()
    console.print(getattr(drawn, "_renderable", drawn))  # a Static's content comes wrapped in a RichVisual
    return console.export_text()


def footer_right(screen) -> int:
    """The column just after the footer's last key (margins included: they push the next key right)."""
    keys = list(screen.query("FooterKey")) + list(screen.query("FooterLabel"))
    return max(k.region.right + k.styles.margin.right for k in keys)
