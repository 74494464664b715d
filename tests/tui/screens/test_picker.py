"""`kernel-tui` with no argument: the picker lists workspaces and tasks (fixtures/* and task folders here),
and a choice that cannot be opened (a workspace in use) brings the picker back with the reason, never a
main screen with nothing behind it. Snapshots at 80×24 and 120×40. Update with:
pytest tests/tui/screens/test_picker.py --snapshot-update
"""

from __future__ import annotations

import json
import shutil

import pytest

from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.main import MainScreen
from kernel_tui.tui.screens.picker import PickerScreen
from tests.conftest import FIXTURES
from tests.support.tui import run, wait_for_workers, wait_until
from tests.support.workspaces import ADA, fixed_workspace

SIZE = (80, 24)


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder as a new user has it: fixtures/, a workspace, and an imported task beside them."""
    shutil.copytree(FIXTURES / "vector_add", tmp_path / "fixtures" / "vector_add")
    shutil.copytree(FIXTURES / "softmax", tmp_path / "kb_softmax")  # as `kernel-tui import kernelbench` leaves one
    data = json.loads((tmp_path / "kb_softmax" / "task.json").read_text())
    (tmp_path / "kb_softmax" / "task.json").write_text(json.dumps({**data, "description": "KernelBench level 1: softmax"}))
    (tmp_path / "notes").mkdir()  # neither: not offered
    ws = fixed_workspace(tmp_path / "workspaces" / "vector_add-old")
    monkeypatch.chdir(tmp_path)
    return ws


def options(app) -> list[str]:
    choices = app.screen.query_one("#choices")
    return [str(choices.get_option_at_index(i).prompt) for i in range(choices.option_count)]


async def listed(pilot) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PickerScreen) and pilot.app.screen.query_one("#choices")
                     .option_count == 3, 30, "the choices")
    await wait_for_workers(pilot)


def test_the_picker_lists_task_folders_here_beside_fixtures_and_workspaces(here):
    app = create_app(None, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await listed(pilot)
            assert options(app) == ["resume  workspaces/vector_add-old  (4 verdicts)",
                                    "new     fixtures/vector_add: Element-wise add of two fp16 tensors: output = x + y.",
                                    "new     kb_softmax: KernelBench level 1: softmax"]
            await pilot.press("q")

    run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_picker_snapshot(here, snap_compare, size):
    """The header whole at 80 columns; a long description cut with … on its one row."""
    assert snap_compare(create_app(None, device="cpu", person=ADA), terminal_size=size, run_before=listed)


def test_a_workspace_in_use_goes_back_to_the_picker_with_the_reason(here):
    here.lock()  # as another kernel-tui holding it would
    app = create_app(None, device="cpu", person=ADA)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await listed(pilot)
            picker = app.screen
            await pilot.press("enter")  # the workspace, first in the list
            await wait_until(pilot, lambda: picker.reason is not None, 30, "the refusal")
            await wait_for_workers(pilot)
            assert app.screen is picker and app.main_screen is None and app.controller is None
            assert not any(isinstance(s, MainScreen) for s in app.screen_stack)
            help_line = str(picker.query_one("#picker-help").render())
            assert "cannot open: workspaces/vector_add-old: in use by another kernel-tui process" in help_line
            here.unlock()  # the other process is gone: the same choice opens now
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.main_screen is not None and app.controller.ready.is_set(), 60, "open")
            assert app.workspace is not None and app.workspace.resolve() == here.root.resolve()
            await pilot.press("q")
        assert app.return_code == 0

    try:
        run(scenario())
    finally:
        here.unlock()


def test_a_choice_that_fails_to_open_after_its_checks_goes_back_to_the_picker(here):
    """A failure only opening finds (here a bad --gpus) brings the picker back too, not a dead dashboard."""
    app = create_app(None, device="cpu", person=ADA, gpus="zz")

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await listed(pilot)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.reason, 60, "the picker again")
            assert "--gpus zz" in app.screen.reason and app.main_screen is None
            assert not any(isinstance(s, MainScreen) for s in app.screen_stack)
            await listed(pilot)  # listed afresh
            await pilot.press("q")
        assert app.return_code == 0

    run(scenario())
    here.lock()  # nothing was left holding it
    here.unlock()
