"""How numbers are shown to a person: one home for the front ends and the report.

Each function takes `missing`, the text shown where there is no value: "n/a" on the screen and the
command line, "—" in the report's tables.
"""

from __future__ import annotations

import math

NA = "n/a"
DASH = "—"  # the report's tables' mark for no value


def duration(seconds: float | None, missing: str = NA) -> str:
    """Fixed two decimals in s, ms or µs: the command line's aligned columns."""
    if seconds is None:
        return missing
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def latency(seconds: float | None, missing: str = NA) -> str:
    """A kernel's time per call: µs, or ms from 1 ms on, to about three significant digits."""
    if seconds is None or not math.isfinite(seconds):
        return missing
    value, unit = (seconds * 1e3, "ms") if seconds >= 1e-3 else (seconds * 1e6, "µs")
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {unit}"


def percent(fraction: float | None, missing: str = NA, digits: int = 2, signed: bool = True) -> str:
    """A fraction as a percentage, "+3.20%" (signed: an improvement) or "21.0%" (a share).

    An improvement below -100% (a candidate more than twice as slow as what it was measured against) is
    shown as its speed ratio instead: "-6251%" says little, "0.016×" says it ran at 1/63 of the speed.
    NaN has no value either; an infinite fraction is shown ("-inf%"), since a bound can be unbounded.
    """
    if fraction is None or math.isnan(fraction):
        return missing
    if signed and math.isfinite(fraction) and fraction < -1.0:
        return speed_ratio_text(fraction)
    return f"{fraction:{'+' if signed else ''}.{digits}%}"


def percents(low: float, high: float, digits: int = 2) -> tuple[str, str]:
    """An interval's ends in one unit: percentages, or speed ratios at both ends when either is a slowdown
    past -100% ("0.27×", "0.70×": not "0.27×" beside "-43.7%")."""
    # (an end at or above +100% has no finite ratio: a wide interval's upper bound can be; then percentages)
    if all(math.isfinite(x) and x < 1.0 for x in (low, high)) and min(low, high) < -1.0:
        return speed_ratio_text(low), speed_ratio_text(high)
    return percent(low, digits=digits), percent(high, digits=digits)


def speed_ratio(improvement: float) -> float:
    """The other side's time over this one's (improvement = 1 - time / other's time): -6251% is 0.016."""
    return 1 / (1 - improvement)


def speed_ratio_text(improvement: float) -> str:
    """An improvement as a speed ratio, two significant digits: -6251% is "0.016×", -150% is "0.40×", +50% "2×"."""
    ratio = speed_ratio(improvement)
    return f"{ratio:#.2g}×" if ratio < 1 else f"{ratio:.2g}×"  # "#": 0.040, not 0.04, beside 0.038


def shape_figures(figures: list, missing: str = NA) -> str:
    """Per benchmark shape: "main +5.10% (×1), ragged -0.40% (×0.5)" (ShapeFigure-like objects)."""
    if not figures:
        return missing
    return ", ".join(f"{f.shape} {percent(f.improvement)} (×{f.weight:g})" for f in figures)


def memory_bytes(n: int | float | None, missing: str = NA) -> str:
    """Memory: "36.00 GiB", "0.50 GiB"; "5.0 MiB" below GiB / 100; "96.0 KiB" below MiB / 10."""
    if n is None:
        return missing
    if n >= 2**30 / 100:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 / 10 else f"{n / 2**10:.1f} KiB"


def decimal_bytes(n: float) -> str:
    """Traffic in decimal units, as Nsight Compute counts it, three significant digits: "1.6 GB", "12.3 MB"."""
    if n >= 1e7:
        return f"{n / 1e9:.3g} GB"
    return f"{n / 1e6:.3g} MB" if n >= 1e4 else f"{n / 1e3:.3g} KB"
