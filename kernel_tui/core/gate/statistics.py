"""The gate's elementary statistics on the log scale: per-pair log ratios and improvements, the published
floor rule, distribution-free bounds of a median, and the across-block t-test with its confidence bounds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special, stats

from kernel_tui.core.gate.models import Block


@dataclass(frozen=True)
class BlockStats:
    """Across-block statistics on the log scale (see :func:`across_blocks`)."""

    blocks: int
    mean: float
    """Mean of the block summaries (median ln(t_incumbent / t_candidate) of each block)."""
    sd: float
    """Sample standard deviation of the block summaries (NaN with one block)."""
    p_value: float | None
    """One-sided t-test p for mean > 0; None when undefined (one block or zero spread)."""
    degenerate: bool
    """True when all block summaries are identical (no estimate of process variance)."""

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.blocks)

    def upper(self, alpha: float) -> float:
        """One-sided (1 - alpha) t upper confidence bound of the mean log ratio."""
        if self.degenerate:
            return self.mean
        if self.blocks < 2:
            return math.inf
        return self.mean + _t_crit(alpha, self.blocks - 1) * self.se

    def lower(self, alpha: float) -> float:
        """One-sided (1 - alpha) t lower confidence bound of the mean log ratio."""
        if self.degenerate:
            return self.mean
        if self.blocks < 2:
            return -math.inf
        return self.mean - _t_crit(alpha, self.blocks - 1) * self.se


@lru_cache(maxsize=512)
def _t_crit(alpha: float, df: int) -> float:
    """Upper-alpha critical value of Student's t with df degrees of freedom."""
    return float(stats.t.isf(alpha, df))


@lru_cache(maxsize=512)
def _order_index(n: int, alpha: float) -> int | None:
    """Smallest u with P(Binomial(n, 1/2) >= u) <= alpha (1-based), or None if none exists."""
    u = np.arange(1, n + 1)
    ok = np.flatnonzero(stats.binom.sf(u - 1, n, 0.5) <= alpha)
    return int(u[ok[0]]) if ok.size else None


def to_fraction(log_ratio: float) -> float:
    """Log ratio ln(t_inc / t_cand) -> improvement fraction 1 - t_cand / t_inc."""
    if log_ratio == math.inf:
        return 1.0
    if log_ratio == -math.inf:
        return -math.inf
    return -math.expm1(-log_ratio)


def log_ratios(block: Block) -> np.ndarray:
    """Per-pair ln(t_incumbent / t_candidate): positive when the candidate is faster."""
    return block.log_ratios


def paired_improvements(block: Block) -> np.ndarray:
    """Per-pair (t_incumbent - t_candidate) / t_incumbent: positive when the candidate is faster."""
    inc, cand = block.arrays
    return (inc - cand) / inc


def block_summary(block: Block) -> float:
    """Robust per-block effect: the median paired log ratio."""
    return block.summary


def published_rule(
    incumbent: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    min_improvement: float = 0.01,
    min_pairs: int = 5,
    min_positive_fraction: float = 0.6,
) -> bool:
    """The published rule, kept as our floor: at least min_pairs pairs, median paired improvement
    >= min_improvement, and at least min_positive_fraction of the pairs positive (> 0)."""
    inc = np.asarray(incumbent, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    if inc.ndim != 1 or inc.shape != cand.shape:
        raise ValueError("incumbent and candidate must be paired 1-D sequences of equal length")
    return floor_rule((inc - cand) / inc, min_improvement, min_pairs, min_positive_fraction)[0]


def floor_rule(
    imp: np.ndarray, min_improvement: float, min_pairs: int, min_positive_fraction: float
) -> tuple[bool, float, float]:
    """(published rule passes, median improvement, positive fraction) of paired improvements."""
    if imp.size == 0:
        return False, math.nan, math.nan
    median = float(np.median(imp))
    positive = float(np.count_nonzero(imp > 0.0)) / imp.size
    ok = imp.size >= min_pairs and median >= min_improvement and positive >= min_positive_fraction
    return bool(ok), median, positive


def median_upper_bound(values: np.ndarray | Sequence[float], alpha: float) -> float:
    """Distribution-free one-sided (1 - alpha) upper confidence bound of a median.

    The bound is the order statistic x_(u) with the smallest u such that
    P(Binomial(n, 1/2) >= u) <= alpha: the median lies above x_(u) only if at least u of the n
    observations fall below it. Returns +inf when n is too small for any bound at this level.
    """
    x = np.sort(np.asarray(values, dtype=float))
    u = _order_index(int(x.size), float(alpha)) if x.size else None
    return math.inf if u is None else float(x[u - 1])


def median_lower_bound(values: np.ndarray | Sequence[float], alpha: float) -> float:
    """Distribution-free one-sided (1 - alpha) lower confidence bound of a median."""
    return -median_upper_bound(-np.asarray(values, dtype=float), alpha)


def across_blocks(summaries: Sequence[float] | np.ndarray) -> BlockStats:
    """One-sample one-sided t-test (H1: mean > 0) of the block summaries.

    Equal to ``scipy.stats.ttest_1samp(summaries, 0, alternative="greater")`` (a test checks
    this): the statistic is formed here and its tail probability taken from Student's t in
    ``scipy.special.stdtr`` (the function behind ``scipy.stats.t.sf``), because ttest_1samp's
    generic wrapper costs ~1 ms a call and the simulation tests make tens of thousands of calls.

    Degenerate inputs are explicit: one block has no across-block test, and identical summaries
    (zero spread) leave the process-to-process variance unknown, so p is None: never NaN, and
    never the p = 0 that scipy reports for t = inf.
    """
    s = np.asarray(summaries, dtype=float)
    k = int(s.size)
    if k == 0:
        raise ValueError("no blocks")
    if not np.all(np.isfinite(s)):
        raise ValueError("block summaries must be finite")
    mean = math.fsum(s.tolist()) / k
    if k == 1:
        return BlockStats(blocks=1, mean=mean, sd=math.nan, p_value=None, degenerate=False)
    if s.max() == s.min():
        return BlockStats(blocks=k, mean=float(s[0]), sd=0.0, p_value=None, degenerate=True)
    sd = math.sqrt(math.fsum(((s - mean) ** 2).tolist()) / (k - 1))
    if sd == 0.0:  # spread lost below rounding: as degenerate as identical summaries
        return BlockStats(blocks=k, mean=mean, sd=0.0, p_value=None, degenerate=True)
    t_stat = mean / (sd / math.sqrt(k))
    p = float(special.stdtr(k - 1, -t_stat))  # = stats.t.sf(t_stat, k - 1)
    if not math.isfinite(p):  # defensive: never let a NaN reach a decision
        return BlockStats(blocks=k, mean=mean, sd=sd, p_value=None, degenerate=True)
    return BlockStats(blocks=k, mean=mean, sd=sd, p_value=p, degenerate=False)
