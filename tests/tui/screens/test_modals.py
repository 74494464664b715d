"""The help (a key's text wraps under itself at any width; no advice a command-line user cannot follow) and
the editor (escape asks before it throws changed code away). Snapshots of the help, the editor, its discard
question and the reason a rejection asks for, each at 80×24 and 120×40.
Update with: pytest tests/tui/screens/test_modals.py --snapshot-update
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Input, TextArea

from kernel_tui.tui import app as app_module
from kernel_tui.tui.app import create_app
from kernel_tui.tui.screens.modals import (
    DISCARD_QUESTION,
    HELP,
    KEY_COLUMN,
    ConfirmModal,
    EditScreen,
    HelpScreen,
    ReasonModal,
    help_body,
)
from tests.support.tui import fixed_app, run, wait_settled, wait_until
from tests.support.workspaces import ADA, fixed_git_dates, waiting_workspace

SIZE = (80, 24)


def rendered(text: str, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(help_body(text))
    return [row.rstrip() for row in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [60, 72, 100])
def test_a_keys_text_wraps_under_itself(width):
    lines = rendered("[b]Keys[/b]\n  A        approve it and the rest of its batch (with --gpus, the search proposes one "
                     "candidate per GPU;\n           they are evaluated in parallel, and after an accept the others are "
                     "gated again)\n  r        reject\n\nA paragraph.", width)
    assert lines[0] == "Keys" and lines[1].startswith("  A        approve it")
    body = lines[1:lines.index("  r        reject")]
    assert len(body) >= 2 and all(row.startswith(" " * KEY_COLUMN) and row[KEY_COLUMN] != " " for row in body[1:]), body
    assert " ".join(row.strip() for row in body).endswith("the others are gated again)")
    assert lines[-1] == "A paragraph."


def test_the_run_help_wraps_every_key_under_itself_at_80_columns():
    """At 80×24 the help box leaves 70 columns: each row of a key's text starts at the text's column."""
    in_keys = False
    for row in rendered(HELP, 70):
        is_key = row.startswith("  ") and row[2] != " "
        if is_key:
            assert row[KEY_COLUMN - 2:KEY_COLUMN] == "  " and row[KEY_COLUMN] != " ", row
        elif in_keys and row:
            assert row.startswith(" " * KEY_COLUMN) and row[KEY_COLUMN] != " ", row
        in_keys = (is_key or in_keys) and bool(row)


def test_the_help_offers_no_remapping_a_command_line_user_cannot_do():
    assert "set_keymap" not in HELP and "run_tui" not in HELP


class HelpOnly(App[None]):
    """The run's help with the app's styles over an empty screen: the snapshot shows the help alone, not
    whatever the main screen behind it shows this week."""

    CSS_PATH = str(Path(app_module.__file__).parent / "app.tcss")

    def on_mount(self) -> None:
        self.push_screen(HelpScreen())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_help_snapshot(snap_compare, size):
    assert snap_compare(HelpOnly(), terminal_size=size)


async def editing(pilot) -> EditScreen:
    await wait_settled(pilot)
    await pilot.press("w")  # write your own: the editor on a copy of best
    editor = pilot.app.screen
    assert isinstance(editor, EditScreen)
    await pilot.press("tab")  # from the subject line to the code
    return editor


def test_escape_asks_before_it_discards_changed_code(tmp_path):
    app = fixed_app(tmp_path)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            editor = await editing(pilot)
            await pilot.press("end", "x")
            changed = editor.query_one(TextArea).text
            assert changed != editor.source
            await pilot.press("escape")
            question = app.screen
            assert isinstance(question, ConfirmModal) and question.question == DISCARD_QUESTION
            assert (question.yes, question.no) == ("discard", "keep editing")
            await pilot.press("escape")  # keep editing
            await wait_until(pilot, lambda: app.screen is editor, 5, "the editor again")
            assert editor.query_one(TextArea).text == changed
            await pilot.press("escape", "y")  # discard
            await wait_until(pilot, lambda: app.screen is app.main_screen, 5, "the main screen")
            assert not app.controller.proposer.draft_path.exists()  # nothing queued
            await pilot.press("q")

    run(scenario())


def test_escape_closes_an_unchanged_editor_at_once(tmp_path):
    app = fixed_app(tmp_path)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await editing(pilot)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main_screen, 5, "the main screen")
            await pilot.press("q")

    run(scenario())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_discard_question_snapshot(tmp_path, snap_compare, size):
    async def asked(pilot):
        await editing(pilot)
        await pilot.press("end", "x", "escape")
        await pilot.pause()

    assert snap_compare(fixed_app(tmp_path), terminal_size=size, run_before=asked)


def steady_cursors(pilot) -> None:
    """An Input's cursor blinks on a timer: held still, it shows the same in every snapshot."""
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_editor_snapshot(tmp_path, snap_compare, size):
    """w: your own candidate, on a copy of best, starting on its subject line."""
    async def opened(pilot):
        await wait_settled(pilot)
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, EditScreen), 10, "the editor")
        steady_cursors(pilot)
        await pilot.pause()

    assert snap_compare(fixed_app(tmp_path), terminal_size=size, run_before=opened)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_reason_snapshot(tmp_path, snap_compare, size):
    """r on round 5's proposal: the reason asked for, over the run (its commit made with a fixed date)."""
    ws = waiting_workspace(tmp_path / "ws")

    async def asked(pilot):
        await wait_settled(pilot)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ReasonModal), 10, "the question")
        steady_cursors(pilot)
        await pilot.pause()

    with fixed_git_dates():
        assert snap_compare(create_app(ws.root, device="cpu", person=ADA), terminal_size=size, run_before=asked)
