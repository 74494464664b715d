"""How the gate's reasons write their numbers: one decimal for a percentage, p to two significant digits."""

from __future__ import annotations

from kernel_tui.core.format import percent, percents, speed_ratio


def pct(fraction: float) -> str:
    return percent(fraction, digits=1)  # one decimal in reasons; an infinite bound reads "-inf%"


def span(low: float, high: float) -> str:
    """An interval in one unit: "-5.1%…-1.8%", or as speed ratios when either end is a slowdown past -100%
    ("0.27×…0.70×", not "0.27×…-43.7%")."""
    return "…".join(percents(low, high, digits=1))


def below(bound: float, threshold: float) -> str:
    """A bound under a threshold, both in one unit: "-3.1% < 0", "+0.8% < 1.0%", or as speed ratios when the
    bound is a slowdown past -100% ("0.43× < 1×", not "0.43× < 0")."""
    text = pct(bound)
    if text.endswith("×"):
        return f"{text} < {speed_ratio(threshold):.3g}×"
    return f"{text} < {threshold:.1%}" if threshold else f"{text} < 0"


def p_text(p: float | None) -> str:
    if p is None:
        return "p=n/a"
    return f"p={p:.2g}" if p >= 0.001 else f"p={p:.1e}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
