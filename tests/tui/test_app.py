"""Pilot tests of the TUI through the real app factory, on the CPU interpreter with a replay proposer.

Each workspace starts with its preflight recorded (tests/support/workspaces.py), so the only evaluations
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
from tests.support.tui import (
    SIZE,
    app_for,
    footer_right,
    log_text,
    pane,
    rendered,
    run,
    run_state,
    wait_for_workers,
    wait_until,
    waiting_app,
    waiting_for_decision,
)
from tests.support.workspaces import ADA, CANDIDATES, RecordingReplay, fixed_workspace, preflighted, waiting_workspace

EVAL_TIMEOUT = 240.0  # one evaluation on the CPU interpreter: ~5-20 s here, far more on a loaded machine

pytestmark = pytest.mark.slow


def trajectory(root) -> list[dict]:
    path = root / "trajectory.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def status(app) -> StatusLine:
    return app.main_screen.query_one(StatusLine)


async def evaluating(pilot) -> None:
    bar = pilot.app.main_screen.query_one(EvalBar)
    await wait_until(pilot, lambda: bar.evaluating, 120, "the evaluation to start")


def test_approve_runs_the_evaluation_and_keys_work_meanwhile(tmp_path):
    ws = preflighted(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=RecordingReplay(), max_steps=2) as (app, pilot):
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

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=proposer, max_steps=2) as (app, pilot):
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

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=proposer, max_steps=1) as (app, pilot):
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

    async def first():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=RecordingReplay(), max_steps=2) as (app, pilot):
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

    async def second():  # the proposer from session.json: the replay, where it was
        async with waiting_app(ws.root, round_no=1, size=SIZE) as (again, pilot):
            assert again.controller.waiting.commit == pending
            assert "resuming" in log_text(again)
            await pilot.press("q")

    run(second())
    assert not trajectory(ws.root)


def test_write_your_own_candidate_is_the_next_proposal_authored_by_you(tmp_path):
    ws = preflighted(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=RecordingReplay(), max_steps=3) as (app, pilot):
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

    async def scenario():
        async with waiting_app(ws.root, round_no=1, size=SIZE, proposer=RecordingReplay(), max_steps=1) as (app, pilot):
            import contextlib

            app.suspend = contextlib.nullcontext  # headless tests cannot hand the terminal over
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
            # back to the run, where the best pane shows the restored version
            await wait_until(pilot, lambda: app.screen is app.main_screen, 30, "restore")
            best = git.Repo(ws.root).commit("best").hexsha
            assert best != before
            await wait_until(pilot, lambda: app.main_screen.query_one("#best").border_title.startswith(
                f"best {best[:8]}"), 10, "the best pane")
            await pilot.press("h")
            screen = app.screen
            await wait_until(pilot, lambda: screen.data is not None, 30, "history")
            assert [r.status for r in screen.shown][:2] == ["restored", "accepted"]
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


# --- the screen at every size: panes, diffs, the trajectory, charts, notifications, the dialogs ---------

PANE_KEYS = {"1": "best", "2": "candidate", "3": "charts", "4": "trajectory", "5": "log"}


def test_at_80x24_every_pane_is_reachable_one_at_a_time_with_its_key_in_the_footer(tmp_path):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(80, 24)) as (app, pilot):
            screen = app.main_screen
            wanted = {f"show_pane('{name}')" for name in PANE_KEYS.values()}
            decisions = {"approve", "reject", "help"}

            def settled() -> bool:
                actions = {k.action for k in screen.query("FooterKey")}
                return wanted <= actions and decisions <= {a.removeprefix("app.") for a in actions}

            # the footer recomposes when the bindings' state changes (a proposal arrives), the pane keys and
            # the decision keys not always in one pass: wait for both
            await wait_until(pilot, settled, 10, "the footer")
            footer_actions = {k.action for k in screen.query("FooterKey")}
            assert wanted <= footer_actions
            assert decisions <= {a.removeprefix("app.") for a in footer_actions}
            for key, name in PANE_KEYS.items():
                await pilot.press(key)
                await pilot.pause()
                pane = screen.query_one(f"#{name}")
                assert pane.display and pane.region.width >= 76 and pane.region.height >= 14, (name, pane.region)
                others = [screen.query_one(f"#{n}") for n in PANE_KEYS.values() if n != name]
                assert all(o.region.area == 0 for o in others), name
                for line in ("#eval", "#status"):  # the run line and the status line stay in sight
                    assert screen.query_one(line).region.bottom <= 23
            await pilot.press("3")
            await pilot.pause()
            for chart in (LatencyChart, ImprovementChart, StatusChart):
                assert screen.query_one(chart).region.height >= 6, chart
            await pilot.press("q")

    run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (160, 50), (200, 60)])
def test_the_footer_keys_fit_the_width_help_and_quit_included(tmp_path, size):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=size) as (app, pilot):
            await pilot.pause()
            screen = app.main_screen
            wanted = {"approve", "reject", "edit", "write_own", "show_pane('log')", "help", "quit"}

            def actions() -> set[str]:
                return {k.action.removeprefix("app.") for k in screen.query("FooterKey")}

            # the footer recomposes when a proposal arrives, not always in one pass (CI saw it caught between)
            await wait_until(pilot, lambda: wanted <= actions(), 10, "the footer's decision keys")
            assert footer_right(screen) <= size[0], actions()  # nothing cut off at the edge
            await pilot.press("q")

    run(scenario())


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
def test_on_a_large_screen_every_pane_is_shown_and_the_charts_have_room(tmp_path, size):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=size) as (app, pilot):
            screen = app.main_screen
            for name in PANE_KEYS.values():
                assert screen.query_one(f"#{name}").region.height >= 8, name
            for chart in (LatencyChart, ImprovementChart, StatusChart):
                assert screen.query_one(chart).region.height >= 10, chart
            assert not screen.query_one("#pane-tabs").display
            await pilot.press("5")  # on a large screen the keys focus a pane
            assert app.focused is screen.query_one("#log")
            await pilot.press("q")

    run(scenario())


def test_a_change_at_the_end_of_a_long_line_is_shown_whole_in_a_narrow_pane(tmp_path):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(80, 24)) as (app, pilot):
            text = rendered(pane(app).query_one("#diff"))
            assert 'eviction_policy="evict_first"' in text and "num_warps=8" in text and "num_warps=4" in text
            assert "…" not in text
            await pilot.press("q")

    run(scenario())


def test_diff_marks_the_changed_part_of_a_line_and_folds_long_lines():
    from rich.console import Console

    from kernel_tui.tui.widgets.diff import DiffText, changed_spans, diff_lines

    old = "    launch[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)"
    new = old.replace("num_warps=4", "num_warps=8")
    _, spans = changed_spans(old, new)
    assert [new[a:b] for a, b in spans] == ["8"]
    lines = diff_lines(f"-{old}\n+{new}\n")
    marked = [lines[1].plain[s.start:s.end] for s in lines[1].spans if "reverse" in str(s.style)]
    assert marked == ["8"]
    console = Console(width=30, record=True)
    console.print(DiffText(f"-{old}\n+{new}\n"))
    rows = console.export_text().splitlines()
    assert all(len(r) <= 30 for r in rows) and any("num_warps=8" in r for r in rows)
    # continuation rows carry their line's marker, and ↪ ends their indent under the code
    assert all(r.startswith("-    ↪ ") for r in rows[1:3]), rows
    assert all(r[:1] in "+-" for r in rows), rows  # every row reads as a diff row


def test_trajectory_shows_the_change_and_whole_verdicts_and_the_selected_row_in_full(tmp_path):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(120, 40)) as (app, pilot):
            table = app.main_screen.query_one(TrajectoryTable)
            columns = {str(c.label): c for c in table.columns.values()}
            assert columns["verdict"].width >= len("rejected by the person")
            change = columns["change"]
            start = sum(c.get_render_width(table) for c in list(table.columns.values())[: list(table.columns.values()).index(change)])
            assert change.width >= len("Block size 256 -> 1024: fewer, fuller programs")
            assert start + change.get_render_width(table) <= table.size.width  # on screen without scrolling
            detail = app.main_screen.query_one("#trajectory-detail")
            assert "incorrect" in rendered(detail) and "replay of vector_add [replay]" in rendered(detail)
            await pilot.press("4", "up")  # round 3
            await pilot.pause()
            text = rendered(detail)
            assert "Block size 1024 -> 32" in text and "far too small a block" in text and "rejected by the person" in text
            await pilot.press("q")

    run(scenario())


def test_charts_have_whole_keys_even_ticks_whole_counts_and_words_for_people(tmp_path):
    import re

    from kernel_tui.tui.view import ChartData

    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(120, 40)) as (app, pilot):
            charts = [app.main_screen.query_one(c) for c in (LatencyChart, ImprovementChart, StatusChart)]
            for chart in charts:
                assert len(chart.border_subtitle) <= chart.outer_size.width - 4, chart.border_subtitle
            for chart in charts[:2]:  # y ticks: round values, as many rows apart each
                rows = [(i, line.split("┤")[0].split("├")[0].strip()) for i, line in enumerate(rendered(chart).splitlines())
                        if re.match(r"\s*-?\d[\d.]*\s*[┤├]", line)]
                values = [float(v) for _, v in rows]
                assert len(rows) >= 2
                assert len({round(values[k] - values[k + 1], 9) for k in range(len(values) - 1)}) == 1, rows
                assert len({rows[k + 1][0] - rows[k][0] for k in range(len(rows) - 1)}) == 1, rows
            status = rendered(charts[2])
            assert "4 verdicts" in status and "rejected by the person 1" in status
            assert not re.search(r"\d\.\d", status)  # counts are whole numbers
            charts[2].set_data(ChartData(statuses=(("accepted", 1),)))
            await pilot.pause()
            assert "1 verdict" in rendered(charts[2]) and "1 verdicts" not in rendered(charts[2])
            await pilot.press("q")

    run(scenario())


def test_chart_axis_helpers():
    from kernel_tui.tui.widgets.charts import even_axis, integer_ticks, plural, tick_labels

    assert plural(1, "verdict") == "1 verdict" and plural(0, "verdict") == "0 verdicts"
    for lo, hi, rows in ((1.63, 2.0, 10), (-7.3, 18.0, 13), (0.5, 0.5, 6), (1e-6, 3e-6, 20)):
        ticks, (bottom, top) = even_axis(lo, hi, rows)
        assert bottom <= lo and top >= hi and ticks[0] == bottom
        steps = {round(b - a, 12) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1
        per_row = (top - bottom) / (rows - 1)  # every tick lands on a whole row
        assert all(abs((t - bottom) / per_row - round((t - bottom) / per_row)) < 1e-6 for t in ticks)
    assert integer_ticks(0, 7, 4) == [0, 3, 6, 9] and integer_ticks(0, 1, 6) == [0, 1]
    assert tick_labels([1.5, 1.75, 2.0]) == ["1.50", "1.75", "2.00"]


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
def test_notifications_stay_clear_of_the_run_line_the_status_line_and_the_log(tmp_path, size):
    """At the top right: over the candidate pane's corner on a large screen; at 80x24, where one pane fills
    the screen, over that pane's top (the log's oldest lines), never the lines at the bottom."""
    from textual.widgets._toast import Toast

    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=size, notifications=True) as (app, pilot):
            for text in ("first notification", "a second, longer notification that takes more than one line"):
                app.main_screen.notify(text)
            await wait_until(pilot, lambda: len(app.screen.query(Toast)) == 2, 5, "the toasts")
            await pilot.pause(0.3)
            covered = ("#eval", "#status") if size[0] < 110 else ("#eval", "#status", "#log")  # 80x24: one pane
            for toast in app.screen.query(Toast):
                assert toast.region.bottom <= size[1] // 2, toast.region
                for other in covered:
                    region = app.main_screen.query_one(other).region
                    assert not toast.region.overlaps(region), (other, toast.region, region)
            await pilot.press("q")

    run(scenario())


def test_write_your_own_starts_on_the_subject_line_and_refuses_a_copy_of_best(tmp_path):
    from textual.widgets import Input, TextArea

    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(80, 24)) as (app, pilot):
            await pilot.press("w")
            editor = app.screen
            assert isinstance(editor, EditScreen) and isinstance(app.focused, Input)
            assert "shift+tab" in str(editor.query_one("#edit-title").render())
            await pilot.press(*"nothing really", "enter")  # enter goes on to the code
            assert isinstance(app.focused, TextArea)
            await pilot.press("ctrl+s")  # the code is best's: refused, the editor stays open
            await pilot.pause()
            assert app.screen is editor
            assert any("identical to best" in n.message for n in app._notifications)  # said in a notification
            assert not app.controller.proposer.draft_path.exists()  # nothing queued, no round spent
            await pilot.press("escape")
            assert app.screen is app.main_screen
            await pilot.press("q")

    run(scenario())


def test_an_empty_rejection_reason_is_refused(tmp_path):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(80, 24)) as (app, pilot):
            await pilot.press("r")
            modal = app.screen
            assert isinstance(modal, ReasonModal)
            await pilot.press("space", "enter")
            await pilot.pause()
            assert app.screen is modal and "a reason is required" in str(modal.query_one("#reason-error").render())
            assert app.controller.waiting is not None and len(trajectory(ws.root)) == 4  # nothing was decided
            await pilot.press("escape")
            assert app.controller.waiting is not None
            await pilot.press("q")

    run(scenario())


def test_every_command_line_option_says_what_it_does():
    import argparse

    from kernel_tui.cli.parser import build_parser

    parser = build_parser()
    assert "kernel-tui [TASK|WORKSPACE]" in parser.format_usage()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in sub.choices.items():
        for action in command._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"{name} {action.option_strings or action.dest}"
        assert command.prog == f"kernel-tui {name}"
    runs = next(a for a in sub.choices["compare"]._actions if a.dest == "runs")
    assert "(default: 5)" in sub.choices["compare"].format_help() and runs.default == 5


def test_the_final_comparison_key_writes_the_summary_and_a_second_press_waits_its_turn(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    app = app_for(ws.root)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: run_state(app).startswith("idle"), 60, "idle")
            await pilot.press("c")
            await pilot.press("c")  # a second one while the first runs: said, not queued twice
            await wait_until(pilot, lambda: "already queued" in log_text(app), 30, "the second press refused")
            await wait_until(pilot, lambda: run_state(app).startswith("final comparison done"), EVAL_TIMEOUT,
                             "the final comparison")
            assert "summary:" in log_text(app)
            await pilot.press("q")

    run(scenario())
    summary = json.loads((ws.root / "run_summary.json").read_text())
    assert summary["best_commit"] == Workspace.open(ws.root).best.hexsha


def test_a_verdict_leaves_the_trajectory_row_the_person_chose(tmp_path):
    ws = waiting_workspace(tmp_path / "ws")

    async def scenario():
        async with waiting_app(ws.root, round_no=5, size=(160, 50)) as (app, pilot):
            table = app.main_screen.query_one("#trajectory-table")
            await pilot.press("4", "up", "up")  # off the newest row, onto round 2
            await pilot.pause()
            assert table.selected.round == 2
            app.controller.reject("too big")
            await wait_until(pilot, lambda: len(table.rows_shown) == 5, 60, "the verdict's row")
            await pilot.pause()
            assert table.selected.round == 2  # the table was rebuilt; the person's row stays chosen
            detail = str(app.main_screen.query_one("#trajectory-detail").render())
            assert detail.startswith("round 2:")
            await pilot.press("q")

    run(scenario())
