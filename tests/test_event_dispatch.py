"""Every front end handles every kind of event the Session sends: the screen, headless mode and the suite each
name a method for each event class in core/events.py, so a new kind fails here until each says what it shows."""

from __future__ import annotations

import inspect

import pytest

from kernel_tui.cli.headless import HeadlessPrinter
from kernel_tui.cli.suite import SuitePrinter
from kernel_tui.core import events
from kernel_tui.core.event_handler import EventHandler, UnhandledEvent
from kernel_tui.tui.session_events import ScreenEvents

FRONT_ENDS = [ScreenEvents, HeadlessPrinter, SuitePrinter]


def event_classes() -> list[type[events.Event]]:
    return [c for _, c in inspect.getmembers(events, inspect.isclass)
            if issubclass(c, events.Event) and c is not events.Event and c.__module__ == events.__name__]


def kind_of(cls: type[events.Event]) -> str:
    return cls.model_fields["kind"].default


def test_every_event_class_has_a_kind_of_its_own():
    kinds = [kind_of(c) for c in event_classes()]
    assert kinds and all(isinstance(k, str) and k for k in kinds)
    assert len(set(kinds)) == len(kinds), kinds


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda c: c.__name__)
def test_every_front_end_handles_every_kind_of_event(front_end):
    unhandled = [c.__name__ for c in event_classes() if not front_end.handles(kind_of(c))]
    assert not unhandled, f"{front_end.__name__} has no on_<kind> for {unhandled}"
    known = {f"on_{kind_of(c)}" for c in event_classes()}
    stray = [name for name in dir(front_end) if name.startswith("on_") and name not in known]
    assert not stray, f"{front_end.__name__}: {stray} match no kind of event"


def test_the_front_ends_are_every_event_handler():
    """A new front end joins FRONT_ENDS, and so the test above."""
    def subclasses(cls):
        return {s for c in cls.__subclasses__() for s in (c, *subclasses(c))}

    assert {c for c in subclasses(EventHandler) if c.__module__.startswith("kernel_tui.")} == set(FRONT_ENDS)


def test_an_unhandled_kind_is_an_error_not_silence():
    class Partial(EventHandler):
        def on_log(self, e):
            self.seen = e.text

    partial = Partial()
    partial.handle(events.LogEvent(text="a line"))
    assert partial.seen == "a line"
    with pytest.raises(UnhandledEvent, match="on_budget"):
        partial.handle(events.BudgetEvent(used=1, total=2))


def test_headless_prints_what_it_printed_before(capsys):
    printer = HeadlessPrinter()
    printer.tty = False
    for e in (events.LogEvent(text="a line"), events.RoundStartEvent(round=2, text="round 2"),
              events.RoundStartEvent(round=3, text="round 3: resuming", resuming=True),
              events.BudgetEvent(used=1, total=2, text="1 of 2 rounds")):
        printer.handle(e)
    assert capsys.readouterr().out.splitlines() == ["a line", "round 3: resuming", "  1 of 2 rounds"]


def test_the_suite_prefixes_each_line_with_its_task(capsys):
    printer = SuitePrinter()
    printer.tty = False
    printer("relu", events.RoundStartEvent(round=1, text="round 1"))
    printer("gelu", events.BudgetEvent(used=1, total=2, text="1 of 2 rounds"))
    assert capsys.readouterr().out.splitlines() == ["[relu] round 1", "[gelu] 1 of 2 rounds"]
