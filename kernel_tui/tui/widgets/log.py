"""The run's log: lines wrap at the pane's width whenever they arrive, and re-flow when that width changes.

RichLog wraps a line once, at the width the pane has when the line is written. A pane that is not shown
has no width (at 80×24 the log is hidden while another pane is shown, or behind the history, the help or
an $EDITOR session), so a line written then was wrapped at `min_width` (~20 columns) and stayed so. This
log wraps such a line at the width the pane was last shown at, keeps every line as written, and writes
them all again at the new width when the pane is shown at another one.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog


class LogPane(RichLog):
    def __init__(self, *, max_lines: int = 2000, **kw) -> None:
        super().__init__(wrap=True, markup=False, max_lines=max_lines, **kw)
        self.entries: deque[Text] = deque(maxlen=max_lines)  # as written; re-flowed from these
        self.flowed_at = 0  # the width every line is wrapped at: the pane's when last shown (0: never shown)

    def add(self, text: Text) -> None:
        """Append a line, wrapped at the pane's width (the last one it was shown at, while it is hidden)."""
        self.entries.append(text)
        width = self.scrollable_content_region.width
        if width and width != self.flowed_at:  # shown at a new width, and its Resize not handled yet
            self.reflow(width)
        else:
            self.write(text, width=self.flowed_at or None)  # None before it was ever shown: RichLog defers it

    def on_resize(self, event: Resize) -> None:
        super().on_resize(event)  # the first size: RichLog writes what it deferred (re-flowed below)
        width = self.scrollable_content_region.width
        if width and width != self.flowed_at:
            self.reflow(width)

    def reflow(self, width: int) -> None:
        """Every line kept, wrapped again at `width`; a log followed to its end stays at its end."""
        at_end = self.scroll_y >= self.max_scroll_y
        self.flowed_at = width
        super().clear()
        for text in self.entries:
            self.write(text, width=width, scroll_end=False)
        if at_end:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def clear(self) -> LogPane:
        self.entries.clear()
        super().clear()
        return self
