"""Pilot tests of the TUI through the real app factory, on the CPU interpreter with a replay proposer.

Each workspace starts with its preflight recorded (tests/test_tui_support.py), so the only evaluations
run are the ones a test asks for: three in all (approve, in-place edit, and a partial one cut by quit).
"""

from __future__ import annotations

import json
import time

import git
import pytest

from kernel_tui.core.workspace import Workspace
from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.history import HistoryScreen
from kernel_tui.tui.screens.modals import EditScreen, ReasonModal
from kernel_tui.tui.widgets.charts import ImprovementChart, LatencyChart, StatusChart
from kernel_tui.tui.widgets.run import EvalBar, StatusLine, TrajectoryTable
from kernel_tui.tui.widgets.source import CandidatePane
from tests.test_tui_support import (
    ADA,
    CANDIDATES,
    RecordingReplay,
    fixed_workspace,
    preflighted,
    run,
    wait_for_workers,
    wait_until,
)

SIZE = (160, 50)
EVAL_TIMEOUT = 240.0  # one evaluation on the CPU interpreter: ~5-20 s here, far more on a loaded machine

pytestmark = pytest.mark.slow


def app_for(ws_root, **kw):
    kw.setdefault("proposer", RecordingReplay())
    return create_app(ws_root, device="cpu", person=ADA, **kw)


def trajectory(root) -> list[dict]:
    path = root / "trajectory.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def status(app) -> StatusLine:
    return app.main_screen.query_one(StatusLine)


def run_state(app) -> str:
    return app.main_screen.query_one(EvalBar).state


def log_text(app) -> str:
    return "\n".join(line.text for line in app.main_screen.query_one("#log").lines)


def pane(app) -> CandidatePane:
    return app.main_screen.query_one(CandidatePane)


async def waiting_for_decision(pilot, round_no: int) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: app.controller is not None and app.controller.waiting is not None
                     and app.controller.waiting.round == round_no, 120, f"round {round_no} to await a decision")
    await wait_until(pilot, lambda: pane(app).pending is not None and pane(app).pending.round == round_no, 10, "the pane")


async def evaluating(pilot) -> None:
    bar = pilot.app.main_screen.query_one(EvalBar)
    await wait_until(pilot, lambda: bar.evaluating, 120, "the evaluation to start")


def test_approve_runs_the_evaluation_and_keys_work_meanwhile(tmp_path):
    ws = preflighted(tmp_path / "ws")
    app = app_for(ws.root, max_steps=2)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            assert "BLOCK_SIZE = 1024" in pane(app).pending.diff and "-BLOCK_SIZE = 256" in pane(app).pending.diff
            await pilot.press("f")  # the full source, and back
            assert pane(app).full
            await pilot.press("f")
            await pilot.press("a")
            await evaluating(pilot)
            # keys are handled at once while the evaluation runs in its worker thread
            for key, check in (("t", lambda: status(app).auto), ("t", lambda: not status(app).auto),
                               ("space", lambda: status(app).paused)):
                started = time.monotonic()
                await pilot.press(key)
                await wait_until(pilot, check, 5, f"key {key}")
                assert time.monotonic() - started < 2.0
            await pilot.press("h")
            assert isinstance(app.screen, HistoryScreen)
            await wait_until(pilot, lambda: app.screen.data is not None, 30, "history")
            await pilot.press("escape")
            assert app.screen is app.main_screen
            assert app.controller.evaluator is not None and not trajectory(ws.root)  # still evaluating
            table = app.main_screen.query_one(TrajectoryTable)
            await wait_until(pilot, lambda: table.row_count == 1, EVAL_TIMEOUT, "the verdict row")
            charts = [app.main_screen.query_one(c).data for c in (LatencyChart, ImprovementChart, StatusChart)]
            assert all(c.rounds == (1,) for c in charts) and sum(n for _, n in charts[2].statuses) == 1
            line = trajectory(ws.root)[0]
            assert line["round"] == 1 and line["status"] in ("ok", "incorrect", "timeout") and line["proposer"]["kind"] == "replay"
            if line["accepted"]:
                assert charts[0].record[0] == pytest.approx(line["latency"])
                assert git.Repo(ws.root).commit("best").hexsha == line["commit"]
            await wait_until(pilot, lambda: run_state(app).startswith("paused"), 30, "paused after the round")
            assert app.controller.waiting is None  # paused: no second proposal was asked for
            await pilot.press("q")
        assert app.return_code == 0

    run(scenario())
    Workspace.open(ws.root).lock()  # quit unlocked it


def test_reject_with_a_reason_goes_back_to_the_proposer(tmp_path):
    ws = preflighted(tmp_path / "ws")
    proposer = RecordingReplay()
    app = app_for(ws.root, proposer=proposer, max_steps=2)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            await pilot.press("r")
            assert isinstance(app.screen, ReasonModal)
            await pilot.press(*"too big a jump")
            await pilot.press("enter")
            await wait_until(pilot, lambda: trajectory(ws.root), 30, "the rejection to be recorded")
            await waiting_for_decision(pilot, 2)  # the next proposal is up, nothing was evaluated
            assert app.main_screen.query_one(TrajectoryTable).row_count == 1
            await pilot.press("q")

    run(scenario())
    [line] = trajectory(ws.root)
    assert line["status"] == "rejected_by_person" and line["reason"] == "too big a jump"
    assert proposer.feedbacks[0].rejected_by_person and proposer.feedbacks[0].reason == "too big a jump"
    note = json.loads(git.Repo(ws.root).git.notes("--ref", "refs/notes/verdicts", "show", line["commit"]))
    assert note["status"] == "rejected_by_person"


def test_edit_in_place_commits_the_persons_revision_then_evaluates_it(tmp_path):
    ws = preflighted(tmp_path / "ws")
    proposer = RecordingReplay()
    app = app_for(ws.root, proposer=proposer, max_steps=1)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            await pilot.press("e")
            assert isinstance(app.screen, EditScreen)
            area = app.screen.query_one("#edit-area")
            area.text = area.text.replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 512")
            await pilot.press("ctrl+s")
            assert app.screen is app.main_screen
            view = pane(app).pending
            assert view.edited and "+BLOCK_SIZE = 512" in view.diff and not trajectory(ws.root)
            await pilot.press("a")  # sends the edit
            await wait_until(pilot, lambda: trajectory(ws.root), EVAL_TIMEOUT, "the edited round's verdict")
            await pilot.press("q")

    run(scenario())
    repo = git.Repo(ws.root)
    edit = repo.commit("refs/candidates/0001")
    assert edit.author.name == "Ada Lovelace" and edit.author.email == "ada@example.org"
    assert edit.parents[0].author.name.startswith("kernel-tui")  # on top of the proposal as proposed
    assert "BLOCK_SIZE = 512" in edit.tree["kernel.py"].data_stream.read().decode()
    assert "Edited-by: Ada Lovelace" in edit.message
    [line] = trajectory(ws.root)
    assert line["commit"] == edit.hexsha and line["proposer"]["kind"] == "person" and line["status"] != "rejected_by_person"
    assert (ws.root / line["evaluation_dir"] / "candidate.py").read_text().count("BLOCK_SIZE = 512") == 1
    assert proposer.feedbacks[0].edited_source and "BLOCK_SIZE = 512" in proposer.feedbacks[0].edited_source


def test_quit_mid_evaluation_then_reopen_resumes_the_round(tmp_path):
    ws = preflighted(tmp_path / "ws")
    app = app_for(ws.root, max_steps=2)

    async def first():
        async with app.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            await pilot.press("a")
            await evaluating(pilot)
            started = time.monotonic()
            await pilot.press("q")
            return time.monotonic() - started

    took = run(first())
    assert took < 30, f"quit took {took:.1f}s"
    assert not trajectory(ws.root)  # nothing judged, nothing half-written
    pending = git.Repo(ws.root).commit("refs/candidates/0001").hexsha
    probe = Workspace.open(ws.root)
    probe.lock()  # the TUI unlocked it
    probe.unlock()

    again = create_app(ws.root, device="cpu", person=ADA)  # proposer from session.json: the replay, where it was

    async def second():
        async with again.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            assert again.controller.waiting.commit == pending
            assert "resuming" in log_text(again)
            await pilot.press("q")

    run(second())
    assert not trajectory(ws.root)


def test_write_your_own_candidate_is_the_next_proposal_authored_by_you(tmp_path):
    ws = preflighted(tmp_path / "ws")
    app = app_for(ws.root, max_steps=3)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await waiting_for_decision(pilot, 1)
            await pilot.press("w")
            assert isinstance(app.screen, EditScreen)
            app.screen.query_one("#edit-change").value = "Block size 512, by hand"
            area = app.screen.query_one("#edit-area")
            assert "BLOCK_SIZE = 256" in area.text  # starts from best
            area.text = area.text.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512")
            await pilot.press("ctrl+s")
            await pilot.press("r", *"later", "enter")
            await waiting_for_decision(pilot, 2)
            waiting = app.controller.waiting
            assert waiting.proposer.kind == "person" and waiting.change == "Block size 512, by hand"
            assert "+BLOCK_SIZE = 512" in waiting.diff
            await pilot.press("q")

    run(scenario())
    commit = git.Repo(ws.root).commit("refs/candidates/0002")
    assert commit.author.name == "Ada Lovelace" and "Proposer: person:Ada Lovelace" in commit.message
    assert not (ws.root / ".work" / "person-draft.py").exists()


def test_edit_in_editor_keeps_the_edit_pending(tmp_path, monkeypatch):
    ws = preflighted(tmp_path / "ws")
    script = tmp_path / "fake-editor.sh"
    script.write_text("#!/bin/sh\nsed -i 's/BLOCK_SIZE = 1024/BLOCK_SIZE = 2048/' \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(script))
    app = app_for(ws.root, max_steps=1)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            import contextlib

            app.suspend = contextlib.nullcontext  # headless tests cannot hand the terminal over
            await waiting_for_decision(pilot, 1)
            await pilot.press("E")
            await wait_until(pilot, lambda: pane(app).pending.edited, 10, "the edit")
            assert "+BLOCK_SIZE = 2048" in pane(app).pending.diff
            assert app.controller.staged and "BLOCK_SIZE = 2048" in app.controller.staged
            await pilot.press("q")

    run(scenario())
    assert not trajectory(ws.root)  # quit before sending: the round stays pending


def test_history_restore_adds_a_commit_on_best(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    before = ws.best.hexsha
    app = app_for(ws.root)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: run_state(app).startswith("idle"), 60, "idle")
            await pilot.press("h")
            screen = app.screen
            await wait_until(pilot, lambda: screen.data is not None, 30, "history")
            assert [r.round for r in screen.shown] == [1, 0]  # lineage, newest first
            await pilot.press("v")  # every proposal
            assert [r.status for r in screen.shown] == ["accepted", "rejected by the gate", "rejected by the person", "incorrect"]
            await pilot.press("s", "s")  # status filter: all -> accepted -> incorrect
            assert [r.status for r in screen.shown] == ["incorrect"]
            await pilot.press("v")  # back to the lineage; select the baseline, diff it against the best
            await pilot.press("down")
            await wait_for_workers(pilot)
            assert screen.selected.round == 0
            await pilot.press("m", "up", "d", "d")
            await wait_for_workers(pilot)
            assert screen.base == "marked" and "marked" in screen.query_one("#version-detail").border_title
            await pilot.press("down", "r")
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.data is not None and screen.data.best != before, 30, "restore")
            assert [r.status for r in screen.shown][:2] == ["restored", "accepted"]
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.main_screen.query_one("#best").border_title.startswith(
                f"best {screen.data.best[:8]}"), 10, "the best pane")
            await pilot.press("q")

    run(scenario())
    repo = git.Repo(ws.root)
    best = repo.commit("best")
    assert best.parents[0].hexsha == before and best.author.name == "Ada Lovelace"
    assert best.tree["kernel.py"].data_stream.read() == repo.commit("refs/candidates/0000").tree["kernel.py"].data_stream.read()
    assert (ws.root / "best.py").read_text() == (CANDIDATES.parent.parent.parent / "fixtures/vector_add/baseline.py").read_text()


def test_a_failing_worker_is_shown_not_a_crash(tmp_path):
    ws = preflighted(tmp_path / "ws")

    class Broken(RecordingReplay):
        def propose(self, context):
            raise RuntimeError("the proposer broke")

    app = app_for(ws.root, proposer=Broken())

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: "session rounds failed" in log_text(app), 60, "the failure in the log")
            assert "session rounds failed: RuntimeError: the proposer broke" in log_text(app)
            assert "stopped by an error" in run_state(app)
            await pilot.press("a")  # still answering keys
            await pilot.press("q")
        assert app.return_code == 0

    run(scenario())
    Workspace.open(ws.root).lock()  # unlocked although the loop died


def test_a_target_that_is_neither_task_nor_workspace_is_reported(tmp_path):
    app = create_app(tmp_path, device="cpu")

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.open_error is not None, 30, "the error")
            assert "neither a task directory" in app.open_error
            await pilot.press("q")
        assert app.return_code == 2

    run(scenario())


def test_picker_lists_workspaces_and_tasks_and_opens_the_choice(tmp_path, monkeypatch):
    import shutil

    from tests.conftest import FIXTURES

    shutil.copytree(FIXTURES / "vector_add", tmp_path / "fixtures" / "vector_add")
    ws = fixed_workspace(tmp_path / "workspaces" / "vector_add-old")
    monkeypatch.chdir(tmp_path)
    app = create_app(None, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.screen.query_one("#choices").option_count == 2, 30, "choices")
            labels = [str(app.screen.query_one("#choices").get_option_at_index(i).prompt) for i in range(2)]
            assert labels[0].startswith("resume") and "vector_add-old" in labels[0] and labels[1].startswith("new")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.main_screen is not None and app.controller.ready.is_set(), 60, "open")
            await wait_until(pilot, lambda: run_state(app).startswith("idle"), 60, "idle")
            assert app.main_screen.query_one(TrajectoryTable).row_count == 4
            await pilot.press("q")

    run(scenario())
    assert ws.best.hexsha == Workspace.open(ws.root).best.hexsha


def test_the_agent_log_follows_the_records_as_they_grow(tmp_path):
    import threading

    from kernel_tui.tui.agentlog import follow

    (tmp_path / "model-messages.jsonl").write_text(json.dumps({"role": "user", "content": "old news"}) + "\n")
    seen: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(tmp_path, seen.append, stop, 0.02))
    thread.start()
    try:
        time.sleep(0.1)
        with open(tmp_path / "model-messages.jsonl", "a") as f:
            f.write(json.dumps({"role": "assistant", "content": "try BLOCK 512", "tool_calls": [
                {"function": {"name": "compile_candidate", "arguments": "{}"}}]}) + "\n")
            f.write('{"role": "assistant", "content": "half a li')  # still being written
        (tmp_path / "tool-calls.jsonl").write_text(json.dumps({"name": "compile_candidate", "error": False,
                                                               "result": "ok: compiles\nmore"}) + "\n")
        deadline = time.monotonic() + 5
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join()
    assert sorted(seen) == ["assistant: try BLOCK 512 → compile_candidate({})", "tool compile_candidate ✓ ok: compiles"]
