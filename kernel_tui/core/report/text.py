"""How the report writes numbers and table cells; report.md and the figures share it."""

from __future__ import annotations

from typing import Any

from kernel_tui.core.format import DASH, latency, percent
from kernel_tui.core.metrics import Roof

MISSING = DASH  # the report's mark for no value


def format_latency(seconds: float | None) -> str:
    """µs, or ms from 1 ms on."""
    return latency(seconds, missing=MISSING)


def pct(fraction: float | None) -> str:
    return percent(fraction, missing=MISSING)


def roof_pct(seconds: float | None, roof: Roof) -> str:
    """The % of roofline a latency reaches, "21.0%" (what bounds it is the task's: the report says it once)."""
    place = roof.place(seconds)
    return percent(place.fraction if place else None, missing=MISSING, digits=1, signed=False)


def cell(text: Any, limit: int = 0) -> str:
    """A markdown table cell: one line, pipes escaped, cut to `limit` characters."""
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if not limit or len(s) <= limit else s[: limit - 1] + "…"
