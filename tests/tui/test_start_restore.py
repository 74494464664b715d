"""Going on from a task that starts from PyTorch eager, and restores that show and record what they did.

On the CPU interpreter a correct Triton kernel cannot beat PyTorch eager, and the built-in search starts only
from a Triton version: the candidate pane says why nothing is proposed and what to do; `b` in the history
makes a correct Triton version the starting point by the person's choice, recorded so in git, the history
and report.md. A restore changes the best pane, the candidate pane and the state line, says the run is
paused and how to go on, warns first for a version the gate rejected, and is listed in the report; `c`
says what it waits for. No evaluation runs: the rounds are recorded verdicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_tui.core.format import percent
from kernel_tui.core.history import (
    accepted_versions,
    current_best,
    restores,
    start_candidates,
    start_from,
    start_refusal,
    version_label,
)
from kernel_tui.core.report import accepted_record, load_records, write_report
from kernel_tui.core.workspace import Workspace, WorkspaceError
from kernel_tui.tui import present
from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.history import HistoryScreen
from kernel_tui.tui.screens.modals import ConfirmModal
from kernel_tui.tui.widgets.run import TrajectoryTable, detail_text
from kernel_tui.tui.widgets.source import BestPane, CandidatePane
from tests.conftest import FIXTURES
from tests.core.test_history import round_commit, with_round_5
from tests.core.test_pytorch_start import pytorch_task
from tests.support.tui import log_text, run, run_state, wait_for_tables, wait_for_workers, wait_settled, wait_until
from tests.support.workspaces import (
    ADA,
    FIXED_DATE,
    fixed_git_dates,
    fixed_workspace,
    line,
    slow_round_workspace,
    waiting_workspace,
)

SMALL = (80, 24)
TRITON = (FIXTURES / "vector_add" / "baseline.py").read_text()
EAGER_GATE = "not faster: 0.018× (CI 0.018×…0.019×)"  # what the gate says of a Triton kernel against eager on the CPU


def pytorch_workspace(path: Path, *, triton_round: str | None = "ok", budget: int = 5) -> Workspace:
    """A task that starts from PyTorch eager, its preflight recorded; round 1 (if any) a Triton version
    judged against eager: "ok" (correct, rejected by the gate) or "incorrect"."""
    with fixed_git_dates():
        ws = Workspace.create(pytorch_task(path.parent / f"{path.name}-task"), path=path)
        ws.write_json("preflight.json", {"status": "ok", "reference": "ok", "baseline": "correct on 4 shape×seed cases",
                                         "device": "cpu", "time": FIXED_DATE})
        ws.write_json("hardware.json", {"device": "cpu"})
        ws.write_json("environment.json", {"device": "cpu", "device_name": "cpu"})
        ws.write_json("baseline-evaluation.json", {"status": "ok", "reason": "baseline", "timing": {
            "candidate": [2.0e-5] * 3, "incumbent": [2.0e-5] * 3}})
        if triton_round == "ok":
            c1 = ws.commit_proposal(1, TRITON, "Triton vector add", ADA)
            ws.record_verdict(line(1, c1.hexsha, "Triton vector add", "ok", False, ADA, reason=EAGER_GATE,
                                   latency=1.09e-3, incumbent_latency=2.0e-5, improvement=-53.62, ci_low=-54.0,
                                   ci_high=-53.0, p_value=1.0, incumbent_commit=ws.baseline.hexsha))
        elif triton_round == "incorrect":
            c1 = ws.commit_proposal(1, TRITON.replace("mask=mask", "mask=None"), "Triton vector add, no mask", ADA)
            ws.record_verdict(line(1, c1.hexsha, "Triton vector add, no mask", "incorrect", False, ADA,
                                   reason="case small/seed 17: out of bounds", incumbent_commit=ws.baseline.hexsha))
        ws.write_json("session.json", {"max_steps": budget, "proposer": {}, "finished": False})
    return ws


def text_of(static) -> str:
    """A Static's text, whole (what it wraps on screen)."""
    return " ".join(str(static.content).split())


def pane_text(app) -> str:
    pane = app.main_screen.query_one(CandidatePane)
    assert pane.has_class("shown")  # the pane shown at 80×24
    return text_of(pane.query_one("#candidate-info"))


def best_title(app) -> str:
    return str(app.main_screen.query_one(BestPane).border_title)


async def shown_log(pilot) -> str:
    """The log pane's words (at 80×24 it is drawn once shown), then back to the candidate pane."""
    await pilot.press("5")
    await pilot.pause()
    text = log_text(pilot.app)
    await pilot.press("2")
    return text


async def open_every_proposal(pilot) -> HistoryScreen:
    await pilot.press("h")
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    await wait_until(pilot, lambda: screen.data is not None, 30, "history")
    await pilot.press("v")
    await wait_for_workers(pilot)
    await wait_for_tables(pilot)
    return screen


# --- A1 (a): why nothing is proposed, and what to do ------------------------------------------------------

@pytest.mark.parametrize("triton_round, says", [
    (None, "nothing proposed: the search starts from a Triton version — w writes one (once judged correct, b in "
           "the history starts from it), or import with --baseline FILE"),
    ("ok", "nothing proposed: the search starts from a Triton version — round 1 is one (correct, not faster than "
           "eager): h, v, select round 1, b starts from it · or w writes one"),
])
def test_the_candidate_pane_says_why_the_search_proposes_nothing_and_what_to_do(tmp_path, triton_round, says):
    ws = pytorch_workspace(tmp_path / "ws", triton_round=triton_round)
    app = create_app(ws.root, device="cpu", person=ADA, proposer="search")

    async def scenario():
        async with app.run_test(size=SMALL) as pilot:
            await wait_settled(pilot)
            await wait_until(pilot, lambda: "nothing proposed" in pane_text(app), 30, "the candidate pane")
            assert pane_text(app) == says  # in the pane shown at 80×24, not only in the log
            await pilot.press("q")

    run(scenario())


# --- A1 (b): start from a correct Triton version, by the person's choice -----------------------------------

def test_b_in_the_history_starts_from_a_correct_triton_version_and_the_search_goes_on(tmp_path):
    ws = pytorch_workspace(tmp_path / "ws")
    c1 = round_commit(ws, 1)
    app = create_app(ws.root, device="cpu", person=ADA, proposer="search")

    async def scenario():
        async with app.run_test(size=SMALL) as pilot:
            await wait_settled(pilot)
            await open_every_proposal(pilot)
            detail = text_of(app.screen.query_one("#detail-info"))
            assert "b starts from this version (correct; not faster than eager by the gate)" in detail
            await pilot.press("b")
            assert isinstance(app.screen, ConfirmModal)
            assert "started from round 1 by the person's choice, not faster than PyTorch eager by the gate " \
                   "(0.018×)" in app.screen.question and "n runs one round" in app.screen.question
            await pilot.press("y")
            await wait_until(pilot, lambda: app.screen is app.main_screen, 60, "back to the run")
            await wait_until(pilot, lambda: "chosen start" in best_title(app), 30, "the best pane")
            assert best_title(app).startswith(f"best {Workspace.open(ws.root).best.hexsha[:8]} (round 1, chosen start)")
            assert run_state(app).startswith("paused — best is now") and "n runs one round" in run_state(app)
            assert pane_text(app).startswith("best is now round 1, your chosen start (not faster than eager by the "
                                             "gate); the run is paused — n runs one round, space resumes")
            assert "started from round 1 by the person's choice" in await shown_log(pilot)
            await pilot.press("n")  # the built-in search starts from it
            await wait_until(pilot, lambda: app.controller.waiting is not None, 60, "round 2's proposal")
            assert app.controller.waiting.round == 2 and "@triton.jit" in app.controller.waiting.source
            assert app.controller.waiting.best_source == TRITON
            await pilot.press("q")

    run(scenario())
    ws = Workspace.open(ws.root)
    restore = ws.repo.commit("best")
    subject, trailers = ws.proposal_info(restore)
    assert subject == "Start from round 1 by the person's choice"
    assert trailers["Restored-from"] == c1 and trailers["Chosen-start"] == "round 1" and trailers["After-round"] == "1"
    assert restore.author.name == "Ada Lovelace"
    assert "Started from round 1 by the person's choice, not faster than PyTorch eager by the gate (0.018×)." \
        in restore.message


def test_b_refuses_a_version_that_failed_correctness(tmp_path):
    ws = pytorch_workspace(tmp_path / "ws", triton_round="incorrect")
    app = create_app(ws.root, device="cpu", person=ADA, proposer="search")

    async def scenario():
        async with app.run_test(size=SMALL) as pilot:
            await wait_settled(pilot)
            await open_every_proposal(pilot)
            await pilot.press("b")
            await pilot.pause()
            assert isinstance(app.screen, HistoryScreen)  # no question: it cannot be done
            said = [n.message for n in app._notifications]
            assert "b: round 1 is incorrect: only a version that passed correctness can be the start" in said
            await pilot.press("q")

    run(scenario())
    assert Workspace.open(ws.root).best_is_pytorch_start


def test_a_chosen_start_is_recorded_in_the_history_and_the_report(tmp_path):
    ws = pytorch_workspace(tmp_path / "ws")
    c1 = round_commit(ws, 1)
    assert [ln.round for ln in start_candidates(ws)] == [1]
    with fixed_git_dates():
        commit = start_from(ws, c1, ADA)
    assert not ws.best_is_pytorch_start and ws.best_source == TRITON and start_candidates(ws) == []
    best = current_best(ws)
    assert best.status == "started" and version_label(best) == "round 1, chosen start" and best.latency == 1.09e-3
    assert best.reason == "started from round 1 by the person's choice, not faster than PyTorch eager by the gate (0.018×)"
    assert accepted_versions(ws)[0].commit == commit.hexsha
    [restore] = restores(ws)
    assert restore.chosen_start and restore.after_round == 1 and restore.by == "Ada Lovelace" and restore.round == 1
    write_report(ws.root)
    md = (ws.root / "report.md").read_text()
    assert "## Restores" in md
    assert (f"- after round 1, by Ada Lovelace: started from round 1 by the person's choice, not faster than PyTorch "
            f"eager by the gate (0.018×) (`{c1[:12]}`), latency 1.09 ms; commit `{commit.hexsha[:12]}`") in md
    assert "Best version: round 1, **the person's chosen start** (started from round 1" in md
    assert "- The best version is the person's chosen start, not a gate verdict: started from round 1" in md
    assert "Nothing was accepted: the baseline is still the best version." not in md


def test_start_from_is_only_for_a_correct_triton_version_while_best_is_pytorch(tmp_path):
    ws = pytorch_workspace(tmp_path / "ws", triton_round="incorrect")
    c1 = round_commit(ws, 1)
    assert start_refusal(ws, c1) == "round 1 is incorrect: only a version that passed correctness can be the start"
    assert start_refusal(ws, ws.baseline.hexsha).startswith("this is the PyTorch starting point itself")
    with pytest.raises(WorkspaceError, match="only a version that passed correctness"):
        start_from(ws, c1, ADA)
    triton = fixed_workspace(tmp_path / "triton")  # a task with a Triton baseline: the search starts from it
    assert start_refusal(triton, round_commit(triton, 2)).startswith("the task starts from a Triton baseline")
    started = pytorch_workspace(tmp_path / "started")
    start_from(started, round_commit(started, 1), ADA)
    assert start_refusal(started, round_commit(started, 1)).startswith("best is already a Triton version")


# --- A7: a restore shows, warns, records --------------------------------------------------------------------

@pytest.mark.parametrize("budget, then, state", [
    (6, "the run is paused — n runs one round, space resumes", "n runs one round · space resumes"),
    (4, "the budget is spent — c runs the final comparison against it, p writes the report",
     "budget spent: c final comparison · p report"),
])
def test_restoring_a_gate_rejected_version_asks_first_and_shows_what_happened(tmp_path, budget, then, state):
    ws = fixed_workspace(tmp_path / "ws")  # round 2 was measured and rejected by the gate; the replay has no more
    ws.write_json("session.json", {**ws.read_json("session.json"), "max_steps": budget})
    c2 = round_commit(ws, 2)
    app = create_app(ws.root, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SMALL, notifications=True) as pilot:
            await wait_settled(pilot)
            before = best_title(app)
            screen = await open_every_proposal(pilot)
            await pilot.press("down")  # round 2
            await wait_until(pilot, lambda: screen.selected is not None and screen.selected.round == 2, 10, "round 2")
            await pilot.press("r")
            assert isinstance(app.screen, ConfirmModal)
            assert app.screen.question.startswith(f"⚠ the gate rejected {c2[:8]}: not faster than its incumbent (+0.30%)")
            assert "The run pauses: n runs one round against it, space resumes." in app.screen.question
            await pilot.press("y")
            await wait_until(pilot, lambda: app.screen is app.main_screen, 60, "back to the run")
            await wait_until(pilot, lambda: best_title(app) != before, 30, "the best pane")
            new = Workspace.open(ws.root).best.hexsha
            assert best_title(app).startswith(f"best {new[:8]} (round 2, restored from {c2[:8]}) · 1.63 ms")
            assert run_state(app) == f"paused — best is now {new[:8]} (round 2, restored from {c2[:8]}) · {state}"
            assert pane_text(app) == f"best is now round 2, restored (rejected by the gate when judged); {then}"
            assert (f"restored round 2 ({c2[:8]}, rejected by the gate when judged) as the incumbent: best is now "
                    f"{new[:8]}, a new commit (history kept); later rounds are judged against it; {then}") \
                in await shown_log(pilot)
            said = [n.message for n in app._notifications]
            assert f"best is now {new[:8]}: round 2 restored; {then}" in said
            await pilot.press("q")

    run(scenario())
    subject, trailers = Workspace.open(ws.root).proposal_info(Workspace.open(ws.root).best)
    assert subject == f"Restore round 2 ({c2[:8]}, rejected by the gate) as incumbent" and trailers["After-round"] == "4"


def test_a_restore_is_listed_in_the_report_and_moves_the_record_line(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    with_round_5(ws)
    c1 = round_commit(ws, 1)
    with fixed_git_dates():
        restored = ws.restore(c1, ADA)  # as `kernel-tui restore` does: the trailers say where it sits
        c6 = ws.commit_proposal(6, ws.best_source + "\n# six\n", "Round six", ADA)
        ws.record_verdict(line(6, c6.hexsha, "Round six", "ok", False, ADA, reason="not faster: -1.0%", latency=1.66e-3,
                               incumbent_latency=1.64e-3, improvement=-0.01, incumbent_commit=restored.hexsha))
    [restore] = restores(ws)
    assert (restore.after_round, restore.round, restore.verdict, restore.latency) == (5, 1, "accepted", 1.64e-3)
    records = load_records(ws.root)
    rounds, record = accepted_record(records.lines, records.restores)
    assert rounds == [1, 2, 3, 4, 5, 6]
    assert record == [1.64e-3] * 4 + [1.5e-3, 1.64e-3]  # round 6 was judged against the restored round 1
    assert present.charts(ws, ws.trajectory(), "cpu").record[-1] == 1.64e-3  # the screen's record line too
    write_report(ws.root)
    md = (ws.root / "report.md").read_text()
    assert (f"- after round 5, by Ada Lovelace: restored round 1 (`{c1[:12]}`, accepted when judged), latency 1.64 ms; "
            f"commit `{restored.hexsha[:12]}`") in md


def test_c_says_it_waits_for_the_decision_on_the_waiting_proposal(tmp_path):
    ws = waiting_workspace(tmp_path / "ws", tmp_path / "candidates")
    app = create_app(ws.root, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SMALL) as pilot:
            await wait_settled(pilot)
            assert app.controller.waiting is not None and app.controller.waiting.round == 5
            await pilot.press("c")
            said = "final comparison queued: it waits for your decision on round 5 (a approve · r reject), then runs"
            assert said in [n.message for n in app._notifications]
            await wait_until(pilot, lambda: run_state(app).startswith("final comparison: waits for your decision on "
                                                                      "round 5"), 10, "the state line")
            await pilot.press("q")

    run(scenario())


# --- A11: slowdowns as a speed ratio, each round beside its own incumbent ------------------------------------

def test_a_slowdown_beyond_minus_100_percent_reads_as_a_speed_ratio_everywhere():
    assert percent(-62.51) == "0.016×" and percent(-24.55, digits=1) == "0.039×" and percent(-1.5) == "0.40×"
    assert percent(-1.0) == "-100.00%" and percent(0.032) == "+3.20%" and percent(float("-inf")) == "-inf%"
    assert percent(0.25, signed=False) == "25.00%"


def test_the_trajectory_shows_each_rounds_incumbent_latency_and_a_slowdown_as_a_ratio(tmp_path):
    ws = slow_round_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SMALL) as pilot:
            await wait_settled(pilot)
            await pilot.press("4")
            await wait_for_tables(pilot)
            table = app.main_screen.query_one(TrajectoryTable)
            headers = [str(c.label) for c in table.columns.values()]
            row = [str(c) for c in table.get_row_at(4)]  # round 5, 25.6× slower than its incumbent
            assert row[headers.index("latency")] == "41.9 ms" and row[headers.index("incumbent")] == "1.64 ms"
            assert row[headers.index("vs incumbent")] == "0.039×" and row[headers.index("CI")] == "[0.038×, 0.040×]"
            assert table.selected is not None and table.selected.round == 5
            assert "41.9 ms (incumbent 1.64 ms)" in text_of(app.main_screen.query_one("#trajectory-detail"))
            await pilot.press("q")

    run(scenario())
    assert "41.9 ms (incumbent 1.64 ms)" in detail_text(present.rows(ws.trajectory())[4]).plain


# --- snapshots: the way on from an imported problem, as a person sees it ---------------------------------------

@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_nothing_proposed_on_a_task_from_pytorch(tmp_path, snap_compare, size):
    """The candidate pane names round 1 (correct, rejected by the gate against eager) and the keys to start from it."""
    ws = pytorch_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer="search")

    async def idle(pilot):
        await wait_settled(pilot)
        await wait_until(pilot, lambda: "nothing proposed" in pane_text(app), 30, "the candidate pane")

    assert snap_compare(app, terminal_size=size, run_before=idle)


def test_snapshot_history_offers_b_on_a_correct_triton_version_80x24(tmp_path, snap_compare):
    ws = pytorch_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA, proposer="search")

    async def every_proposal(pilot):
        await wait_settled(pilot)
        await open_every_proposal(pilot)
        await wait_until(pilot, lambda: "b starts from" in text_of(app.screen.query_one("#detail-info")), 30, "the detail")

    assert snap_compare(app, terminal_size=SMALL, run_before=every_proposal)
