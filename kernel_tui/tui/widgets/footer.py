"""The footer, less the keys it is told to leave out: on a narrow screen only the keys that matter most fit.

Keys left out still work; `?` lists every key of the screen shown.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ROOMY_WIDTH = 180  # from this width up the footer is spaced out and shows the command palette's key
# (below this width, these actions' keys are left out), most dispensable first
Tiers = tuple[tuple[int, frozenset[str]], ...]


def left_out(width: int, tiers: Tiers) -> frozenset[str]:
    return frozenset().union(*(actions for below, actions in tiers if width < below))


class KeyFooter(Footer):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.left_out: frozenset[str] = frozenset()

    def fit(self, width: int, tiers: Tiers = ()) -> None:
        """Spaced out, with the command palette's key, on a roomy screen; else compact, less the tiers' keys."""
        self.compact = width < ROOMY_WIDTH
        self.show_command_palette = width >= ROOMY_WIDTH
        self.leave_out(left_out(width, tiers))

    def leave_out(self, actions: frozenset[str]) -> None:
        """Actions (as their bindings name them) whose keys are not shown."""
        if actions != self.left_out:
            self.left_out = actions
            self.refresh(recompose=True)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if not (isinstance(widget, FooterKey) and widget.action in self.left_out):
                yield widget
