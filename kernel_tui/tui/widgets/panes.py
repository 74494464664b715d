"""The strip of pane names shown when the screen is too small for every pane at once."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def tabs_text(tabs: list[tuple[str, str]], active: str, alerts: frozenset[str] = frozenset()) -> Text:
    """`1 best  2 candidate …`: the pane shown highlighted, a pane that needs you marked with ●."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for key, name in tabs:
        style = "bold reverse" if name == active else ("bold yellow" if name in alerts else "")
        out.append(f" {key} {name}" + (" ●" if name in alerts else "") + " ", style=style)
        out.append(" ")
    return out


class PaneTabs(Static):
    """Which pane is shown, and the key that shows each (as given: the keys can be remapped)."""

    def show(self, tabs: list[tuple[str, str]], active: str, alerts: frozenset[str] = frozenset()) -> None:
        self.update(tabs_text(tabs, active, alerts))
