"""How numbers are shown to a person, the same in every front end."""

from __future__ import annotations


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def percent(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{fraction:+.2%}"
