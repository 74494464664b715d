"""The profile view: the best version's profile and what changed against the baseline (key i), a version's
from the history (i there), its headline in the history's detail, and r where profiling cannot work."""

from __future__ import annotations

import pytest

from kernel_tui.core.workspace import Workspace
from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.profile import ProfileScreen
from tests.test_profile_store import profiled_workspace
from tests.test_tui_support import ADA, RecordingReplay, run, wait_for_workers, wait_until

pytestmark = pytest.mark.slow
SIZE = (160, 50)


def screen_text(screen) -> str:
    return str(screen.query_one("#profile-text").render())


def test_the_profile_view_shows_the_best_versions_profile_and_what_changed(tmp_path):
    ws, r1 = profiled_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer=RecordingReplay())

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.main_screen.query_one("#eval").state.startswith("idle"), 60, "idle")
            await pilot.press("i")
            screen = app.screen
            assert isinstance(screen, ProfileScreen) and screen.commit == r1.commit
            await wait_until(pilot, lambda: "DRAM-bound" in screen_text(screen), 30, "the profile")
            text = screen_text(screen)
            assert f"against {ws.baseline.hexsha[:8]}" in text and "DRAM throughput" in text
            assert "kernel time" in text  # 1.5x the time before: a change that matters
            await pilot.press("escape")
            await pilot.press("h")
            history = app.screen
            await wait_until(pilot, lambda: history.data is not None, 30, "history")
            await wait_for_workers(pilot)
            info = str(history.query_one("#detail-info").render())
            assert "profile at shape main: DRAM-bound" in info and f"against {ws.baseline.hexsha[:8]}" in info
            await pilot.press("v")  # every proposal: round 2 was never profiled
            await wait_for_workers(pilot)
            await pilot.press("down")
            assert history.selected.round == 2
            await pilot.press("i")
            profile = app.screen
            assert isinstance(profile, ProfileScreen)
            # on the CPU: the screen says why there is none, and r changes nothing
            await wait_until(pilot, lambda: "not profiled: profiles need a GPU" in screen_text(profile), 30, "why")
            await pilot.press("r")
            await wait_for_workers(pilot)
            await wait_until(pilot, lambda: "not profiled: profiles need a GPU" in screen_text(profile), 30, "still")
            log = " ".join(line.text for line in app.main_screen.query_one("#log").lines)
            assert "profiles need a GPU" in log
            await pilot.press("escape", "escape")
            await pilot.press("q")

    run(scenario())


def test_with_two_devices_A_approves_the_rest_of_the_batch_and_both_are_judged(tmp_path):
    from tests.test_tui_support import preflighted

    ws = preflighted(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer=RecordingReplay(), max_steps=2, gpus="2")

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.controller.waiting is not None, 120, "the first proposal")
            first = app.controller.waiting
            assert first.round == 1 and first.queued == 1
            assert "1 more of this batch wait (A approves them all)" in app.main_screen.query_one("#eval").state
            from kernel_tui.tui.widgets.source import CandidatePane

            await wait_until(pilot, lambda: app.main_screen.query_one(CandidatePane).pending is not None, 30, "the pane")
            shown = str(app.main_screen.query_one("#candidate-info").render())
            assert "next in this batch: round 2: " in shown
            await pilot.press("A")
            await wait_until(pilot, lambda: len(Workspace.open(ws.root).trajectory()) == 2, 600, "both verdicts")
            assert app.controller.waiting is None  # round 2 needed no second key
            await pilot.press("q")

    run(scenario())
    lines = {ln.round: ln for ln in Workspace.open(ws.root).trajectory()}
    assert set(lines) == {1, 2} and all(ln.status != "rejected_by_person" for ln in lines.values())
