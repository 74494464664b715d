"""When the screen closes on a workspace, one line says how to come back to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_tui.cli import entry as cli
from kernel_tui.tui.app import Closed, create_app
from tests.support.tui import run, wait_until
from tests.support.workspaces import ADA, fixed_workspace


@pytest.fixture
def screen_closed_on(monkeypatch, tmp_path):
    """`kernel-tui` runs, and its screen (not opened here) closes having had `workspace` open."""
    monkeypatch.chdir(tmp_path)

    def closing(workspace):
        monkeypatch.setattr("kernel_tui.tui.app.run_tui", lambda *a, **k: Closed(0, workspace))

    return closing


@pytest.mark.parametrize("workspace, line", [
    ("{tmp}/workspaces/vector_add-20261202-0930", "resume with: kernel-tui workspaces/vector_add-20261202-0930"),
    ("workspaces/vector_add-20261202-0930", "resume with: kernel-tui workspaces/vector_add-20261202-0930"),
    ("{tmp}/my runs/a", "resume with: kernel-tui 'my runs/a'"),
    ("/elsewhere/ws", "resume with: kernel-tui /elsewhere/ws"),
])
def test_the_resume_line_after_the_screen_closes(screen_closed_on, tmp_path, capsys, workspace, line):
    screen_closed_on(Path(workspace.format(tmp=tmp_path)))
    assert cli.main(["run"]) == 0
    assert capsys.readouterr().out.splitlines() == [line]


def test_no_resume_line_when_no_workspace_was_opened(screen_closed_on, capsys):
    screen_closed_on(None)  # quit from the picker
    assert cli.main(["run"]) == 0
    assert capsys.readouterr().out == ""


def test_the_app_says_which_workspace_it_had_open(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    app = create_app(ws.root, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.controller is not None and app.controller.ready.is_set(), 60, "open")
            await pilot.press("q")

    run(scenario())
    assert app.workspace == ws.root
