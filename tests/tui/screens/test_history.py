"""The history screen's keys: each is in the footer, whole, or in the help `?` shows on that screen."""

from __future__ import annotations

import re

import pytest
from rich.text import Text

from kernel_tui.tui.screens.history import HistoryScreen
from kernel_tui.tui.screens.modals import HelpScreen
from tests.support.tui import fixed_app, footer_right, run, wait_settled, wait_until


def explained(binding, key: str, help_text: str) -> bool:
    """A line of the help starts with the key and says what its footer label says."""
    return bool(re.search(rf"^\s+{re.escape(key)}\b.*\b{re.escape(binding.description.lower())}", help_text, re.M))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_every_history_key_is_in_the_footer_or_the_history_help(tmp_path, size):
    app = fixed_app(tmp_path)

    async def scenario():
        async with app.run_test(size=size) as pilot:
            await wait_settled(pilot)
            await pilot.press("h")
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            await wait_until(pilot, lambda: screen.data is not None, 30, "history")
            bindings = {}  # each action's first key, as the footer shows it ("escape,h" is bound as two)
            for active in screen.active_bindings.values():
                if any(active.binding.action == b.action for b in HistoryScreen.BINDINGS):
                    bindings.setdefault(active.binding.action, active.binding)
            assert len(bindings) == len(HistoryScreen.BINDINGS)

            def footer() -> set[str]:
                return {k.action.removeprefix("app.") for k in screen.query("FooterKey")}

            await wait_until(pilot, lambda: {"back", "restore", "help", "quit"} <= footer(), 10, "the footer")
            await pilot.pause()
            assert footer_right(screen) <= size[0], footer()  # no key cut off at the edge
            if size[0] >= 100:
                assert set(bindings) <= footer()
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.pause()
            text = Text.from_markup(app.screen.text).plain
            assert "History" in text and "Deciding" not in text  # this screen's help, not the run's
            for action, binding in bindings.items():
                assert explained(binding, app.get_key_display(binding), text), (action, binding.description)
            await pilot.press("escape")
            assert app.screen is screen
            await pilot.press("q")

    run(scenario())
