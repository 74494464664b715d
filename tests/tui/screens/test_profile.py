"""The profile view: the best version's profile and what changed against the baseline (key i), a version's
from the history (i there), its headline in the history's detail, and r where profiling cannot work.
Snapshots of the view at 80×24 and 120×40; update with:
pytest tests/tui/screens/test_profile.py --snapshot-update
"""

from __future__ import annotations

import pytest

from kernel_tui.core.workspace import Workspace
from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.profile import ProfileScreen
from tests.core.profile.test_store import profiled_workspace
from tests.support.tui import run, wait_for_workers, wait_until, waiting_app
from tests.support.workspaces import ADA, RecordingReplay

pytestmark = pytest.mark.slow
SIZE = (160, 50)


def screen_text(screen) -> str:
    return str(screen.query_one("#profile-text").render())


async def open_profile(pilot, app) -> ProfileScreen:
    """Once the run is idle, i: the profile screen of the best version."""
    await wait_until(pilot, lambda: app.main_screen.query_one("#eval").state.startswith("idle"), 60, "idle")
    await pilot.press("i")
    screen = app.screen
    assert isinstance(screen, ProfileScreen)
    return screen


def test_the_profile_view_shows_the_best_versions_profile_and_what_changed(tmp_path):
    ws, r1 = profiled_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer=RecordingReplay())

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_profile(pilot, app)
            assert screen.commit == r1.commit
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
            assert not app.controller._paused  # nothing could run: the rounds were not paused for it
            log = " ".join(" ".join(line.text for line in app.main_screen.query_one("#log").lines).split())  # unwrapped
            assert "profiles need a GPU" in log
            await pilot.press("escape", "escape")
            await pilot.press("q")

    run(scenario())


def test_with_two_devices_A_approves_the_rest_of_the_batch_and_both_are_judged(tmp_path):
    from tests.support.workspaces import preflighted

    ws = preflighted(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=RecordingReplay(), max_steps=2,
                               gpus="2") as (app, pilot):
            first = app.controller.waiting
            assert first.queued == 1
            assert "1 more of this batch wait (A approves them all)" in app.main_screen.query_one("#eval").state
            shown = str(app.main_screen.query_one("#candidate-info").render())
            assert "next in this batch: round 2: " in shown
            await pilot.press("A")
            await wait_until(pilot, lambda: len(Workspace.open(ws.root).trajectory()) == 2, 600, "both verdicts")
            assert app.controller.waiting is None  # round 2 needed no second key
            await pilot.press("q")

    run(scenario())
    lines = {ln.round: ln for ln in Workspace.open(ws.root).trajectory()}
    assert set(lines) == {1, 2} and all(ln.status != "rejected_by_person" for ln in lines.values())


def test_what_the_profile_view_says_of_itself_a_restore_a_failure_and_a_missing_comparison(tmp_path):
    from kernel_tui.core.profile.store import ProfileRecord, save, stored
    from kernel_tui.core.proposers.base import ProposerInfo
    from kernel_tui.tui import present

    ws, r1 = profiled_workspace(tmp_path / "ws")
    base = ws.baseline.hexsha
    # the baseline against itself: no comparison line (and no diff)
    assert not [ln for ln in present.profile_comparison(ws, base, base) if ln.startswith("against")]
    assert present.detail(ws, base, base, "baseline").diff == "(this is the baseline itself)\n"
    # a restore carries the profile of the version it copies
    restored = ws.restore(base, ProposerInfo(kind="person", name="Ada"))
    assert stored(ws, restored.hexsha) == stored(ws, base)
    assert present.profile_view(ws, restored.hexsha, r1.commit).profiled
    # the other version has no profile: said, not left out
    unprofiled = next(ln for ln in ws.trajectory() if ln.round == 2).commit
    lines = present.profile_comparison(ws, r1.commit, unprofiled)
    assert lines[-1] == f"against {unprofiled[:8]}: not compared, it was not profiled"
    # a failed profile on a machine that cannot profile: why, not "r tries again"
    save(ws, ProfileRecord(commit=unprofiled, round=2, status="failed", reason="ncu was killed", shape="main",
                           created="2025-01-02T03:04:05+00:00"))
    view = present.profile_view(ws, unprofiled, None, off="profiles need a GPU")
    assert view.lines == ("no profile: ncu was killed", "no profile can be taken here: profiles need a GPU")
    assert view.off == "profiles need a GPU"
    assert present.profile_view(ws, unprofiled, None).lines[-1] == "r tries again"
    assert present.profile_comparison(ws, r1.commit, unprofiled)[-1] == (
        f"against {unprofiled[:8]}: not compared, it has no profile (ncu was killed)")


def test_a_profile_taken_while_its_screen_is_open_is_shown_there(tmp_path):
    # on a GPU each accepted version is profiled after its verdict: a person may open i before it is done
    from kernel_tui.core.profile import parse_ncu_csv
    from kernel_tui.core.profile.store import ProfileRecord, save
    from kernel_tui.tui.messages import ProfileTaken
    from tests.core.profile.test_store import NCU_DATA
    from tests.support.workspaces import fixed_workspace

    ws = fixed_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer=RecordingReplay())

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_profile(pilot, app)
            await wait_until(pilot, lambda: "not profiled" in screen_text(screen), 30, "no profile yet")
            profile = parse_ncu_csv((NCU_DATA / "vector_add.log").read_text())
            save(ws, ProfileRecord(commit=screen.commit, status="ok", profile=profile, shape="main",
                                   created="2025-01-02T03:04:05+00:00"))
            app.main_screen.post_message(ProfileTaken("0" * 40))  # another version's: nothing to show
            await wait_for_workers(pilot)
            assert "not profiled" in screen_text(screen)
            app.main_screen.post_message(ProfileTaken(screen.commit))
            await wait_until(pilot, lambda: "DRAM-bound" in screen_text(screen), 30, "the new profile")
            await pilot.press("escape", "q")

    run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_profile_snapshot(tmp_path, snap_compare, size):
    """i: the best version's profile (round 1, from a hand-written ncu log) and what changed against the baseline."""
    ws, _ = profiled_workspace(tmp_path / "ws")

    async def opened(pilot):
        screen = await open_profile(pilot, pilot.app)
        await wait_until(pilot, lambda: "DRAM-bound" in screen_text(screen), 30, "the profile")
        await wait_for_workers(pilot)

    app = create_app(ws.root, device="cpu", person=ADA, proposer=RecordingReplay())
    assert snap_compare(app, terminal_size=size, run_before=opened)
