"""A front end's handling of a Session's events, dispatched by kind: one method `on_<kind>` per kind of event
(core/events.py), as mitmproxy's add-ons have one per hook.

Every front end (the screen, headless mode, the suite) subclasses EventHandler and names every kind, even
the ones it shows only as their line, so that no kind is dropped by a silent `else`: a kind with no method
raises, and tests/test_event_dispatch.py checks every front end against every event class, so a new kind of
event fails the tests until each front end says what it does with it.

Apart from events.py, which imports the models its events carry: the screen defines its handler before the
core loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_tui.core.events import Event


class UnhandledEvent(TypeError):
    """A front end was given a kind of event it has no method for (a programming error, not bad input)."""


def method_name(kind: str) -> str:
    return f"on_{kind}"


class EventHandler:
    def handle(self, event: Event) -> None:
        method = getattr(self, method_name(event.kind), None)
        if method is None:
            raise UnhandledEvent(f"{type(self).__name__} has no {method_name(event.kind)}: every kind of event "
                                 "needs a handler in every front end")
        method(event)

    @classmethod
    def handles(cls, kind: str) -> bool:
        return callable(getattr(cls, method_name(kind), None))
