"""The footer, less the keys it is told to leave out: on a narrow screen only the keys that matter most fit.

Keys left out still work; `?` lists every key.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeyFooter(Footer):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.left_out: frozenset[str] = frozenset()

    def leave_out(self, actions: frozenset[str]) -> None:
        """Actions (as their bindings name them) whose keys are not shown."""
        if actions != self.left_out:
            self.left_out = actions
            self.refresh(recompose=True)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if not (isinstance(widget, FooterKey) and widget.action in self.left_out):
                yield widget
