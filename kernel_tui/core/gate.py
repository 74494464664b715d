"""The accept gate: is a candidate kernel really faster than the incumbent?

Timing arrives in *blocks*. A block is one worker process that times the incumbent (A) and the
candidate (B) interleaved (ABBA), giving n paired samples. Pairs inside one process share that
process's level (clocks, placement, cache state), so they are not independent evidence about what
the next process will see: the unit of evidence is the block.

The statistics:

* Each pair gives a log ratio ``r = ln(t_incumbent / t_candidate)`` (positive = candidate faster);
  logs make the effect symmetric and multiplicative ("3% faster" is a shift of ~0.03).
* Each block is summarised by the median of its log ratios: robust to the occasional +10-30%
  outlier sample that GPU timing produces.
* Across blocks, a one-sample one-sided t-test of the block medians against 0 (the p-value is
  exactly ``scipy.stats.ttest_1samp(..., alternative="greater")``'s), with the matching t
  confidence interval: process-to-process variance is part of the error term, not ignored.
* The design looks at the data repeatedly (after min_blocks, min_blocks+1, ... max_blocks
  blocks), and each look is another chance to accept by luck. ``alpha`` is split over the looks
  with a power alpha-spending function alpha * t**3 (t = the look's share of the final degrees of
  freedom); the shares sum to alpha, so by Bonferroni the family-wise error is <= alpha. Early
  looks, where a t-test on 2-3 degrees of freedom has little power anyway, get little of it.
  The reported CI is two-sided at ``1 - 2 * alpha_look``, so its lower bound is above zero
  exactly when the look is significant.
* Accepting also needs the published floor rule on all pairs (>= min_pairs pairs, median paired
  improvement >= min_improvement, >= min_positive_fraction positive) and a point estimate of at
  least min_improvement.
* Early reject, at early_reject_alpha (one-sided): before min_blocks, the distribution-free upper
  confidence bound of the median log ratio of the pairs so far (an order statistic, from the
  binomial distribution) below 0 (clearly slower); from two blocks on, the across-block t upper
  bound below min_improvement (cannot reach it).
* Confirmation: a stage-1 winner is re-timed on fresh blocks. It is accepted only if the fresh
  blocks alone estimate at least min_improvement, and all blocks together still pass the floor,
  the threshold and the t-test (at alpha: the stage-1 look already spent its share, so this extra
  hurdle cannot raise the error rate).
* Degenerate input (identical block summaries, identical timings, a single pair) never yields a
  NaN or a spurious ``p = 0``: zero spread across blocks means the process-to-process variance is
  unknown, so significance is undefined (``p_value=None``) and nothing is accepted.
* Several benchmark shapes: the gate decides on each process's weighted mean of the shapes' log
  ratios (:func:`combine_shapes`), then :func:`veto_regressions` checks every shape on its own
  blocks with the same t bounds (:func:`check_shape`): a winner is rejected when a shape is shown
  to be slower than the tolerance allows, and held open (more blocks) while a shape is neither
  shown slower nor shown within it, up to REGRESSION_MAX_BLOCKS blocks, then rejected. A winner
  held open past max_blocks is re-tested by :func:`decide` at the last look's level: an extra
  hurdle, since it passed a look of its own to be held open. Simulated with the test suite's
  noise model (20,000 gates each, tolerance 2%), a candidate 3% slower at one shape was accepted
  in 0.045% of gates (the point estimate against -2% that this replaced: 2.0%), one 1% slower was
  rejected in 0.07% (before: 7.6%), for about two more blocks per gate (6.2 and 8.2 against 3.1
  and 4.9). On a shape twice as noisy, 12 blocks leave a third of the 1%-slower shapes unresolved,
  so rejected (before: 18%); the 3%-slower ones are still accepted in under 1% (before: 7%).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from scipy import special, stats

from kernel_tui.core.format import percent

__all__ = [
    "Block",
    "BlockStats",
    "DEFAULT_POLICY",
    "GatePolicy",
    "Verdict",
    "across_blocks",
    "block_summary",
    "combine_shapes",
    "decide",
    "check_shape",
    "regression_look_alpha",
    "shape_improvement",
    "ShapeCheck",
    "veto_regressions",
    "log_ratios",
    "median_upper_bound",
    "paired_improvements",
    "policy_problems",
    "published_rule",
    "summarize",
]


SPENDING_RHO = 3.0
"""Exponent of the alpha-spending function alpha * t**rho used across the looks of stage 1."""

# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


class GatePolicy(BaseModel):
    """Thresholds and error rates of the gate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_improvement: float = Field(0.01, ge=0.0, lt=1.0)
    min_pairs: int = Field(5, ge=1)
    min_positive_fraction: float = Field(0.6, ge=0.0, le=1.0)
    alpha: float = Field(0.01, gt=0.0, lt=0.5)
    """One-sided family-wise significance level across blocks (split over the looks)."""
    min_blocks: int = Field(3, ge=2)
    """Blocks before a first accept/reject on significance (a t-test needs at least 2)."""
    max_blocks: int = Field(6, ge=2)
    confirm_blocks: int = Field(2, ge=0)
    """Fresh blocks to confirm a winner (0 = accept directly at stage 1)."""
    early_reject_alpha: float = Field(0.001, gt=0.0, lt=0.5)
    regression_tolerance: float = Field(0.02, ge=0.0, lt=1.0)
    """With several benchmark shapes: reject a candidate slower than this at any one of them."""

    @model_validator(mode="after")
    def _blocks_ordered(self) -> GatePolicy:
        if self.max_blocks < self.min_blocks:
            raise ValueError(
                f"max_blocks ({self.max_blocks}) must be >= min_blocks ({self.min_blocks})"
            )
        return self

    @property
    def looks(self) -> int:
        """How many times stage 1 may test for significance (blocks min_blocks..max_blocks)."""
        return self.max_blocks - self.min_blocks + 1

    def look_alpha(self, blocks: int) -> float:
        """One-sided significance level of the stage-1 look at `blocks` blocks.

        Each look is another chance to accept by luck, so alpha is split over the looks with a
        power-family spending function alpha * t**rho (Kim & DeMets), t = (k - 1) / (max_blocks
        - 1) being the look's share of the final degrees of freedom: the look at k blocks tests
        at the increment alpha * (t_k**rho - t_(k-1)**rho), the first one at alpha * t**rho.
        The increments sum to alpha, so by Bonferroni the chance of any false accept is <= alpha
        (conservatively: the looks are positively correlated). Little goes to the first looks,
        where a t-test on 2-3 degrees of freedom has little power anyway.
        """
        k = min(max(blocks, self.min_blocks), self.max_blocks)
        if self.looks == 1:
            return self.alpha

        def spent(j: int) -> float:
            return ((j - 1) / (self.max_blocks - 1)) ** SPENDING_RHO

        before = spent(k - 1) if k > self.min_blocks else 0.0
        return self.alpha * (spent(k) - before)


def policy_problems(settings: Mapping[str, object], spell: Callable[[str], str] = str) -> list[str]:
    """Every reason `GatePolicy(**settings)` fails, one phrase each (none: it builds), with the settings
    named as `spell` writes them (a task file: camelCase). Whoever takes gate settings from a person checks
    them here, so the gate's bounds are stated once, in GatePolicy."""
    try:
        GatePolicy(**settings)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            text = err["msg"].removeprefix("Value error, ")
            for name in GatePolicy.model_fields:  # a check across settings names them in its text
                text = text.replace(name, spell(name))
            if err["loc"]:
                text = f"{'.'.join(spell(str(p)) for p in err['loc'])}: {text} (got {err['input']!r})"
            problems.append(text)
        return problems
    return []


class Block(BaseModel):
    """One worker process: paired timings (seconds per call) of incumbent and candidate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    incumbent: list[float]
    candidate: list[float]
    process: str = ""

    @field_validator("incumbent", "candidate", mode="before")
    @classmethod
    def _from_array(cls, values: object) -> object:
        return values.tolist() if isinstance(values, np.ndarray) else values

    @field_validator("incumbent", "candidate")
    @classmethod
    def _positive_finite(cls, values: list[float]) -> list[float]:
        if not values:
            raise ValueError("a block needs at least one sample")
        x = np.asarray(values, dtype=float)
        bad = np.flatnonzero(~(np.isfinite(x) & (x > 0.0)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"sample {i} is {values[i]!r}; timings must be finite and > 0 seconds")
        return values

    @model_validator(mode="after")
    def _paired(self) -> Block:
        if len(self.incumbent) != len(self.candidate):
            raise ValueError(
                f"unpaired block: {len(self.incumbent)} incumbent vs "
                f"{len(self.candidate)} candidate samples"
            )
        return self

    @property
    def pairs(self) -> int:
        return len(self.incumbent)

    @cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(incumbent, candidate) as read-only float arrays (built once per block)."""
        inc = np.array(self.incumbent, dtype=float)
        cand = np.array(self.candidate, dtype=float)
        inc.setflags(write=False)
        cand.setflags(write=False)
        return inc, cand

    @cached_property
    def log_ratios(self) -> np.ndarray:
        """Per-pair ln(t_incumbent / t_candidate), read-only (computed once per block)."""
        inc, cand = self.arrays
        r = np.log(inc / cand)
        r.setflags(write=False)
        return r

    @cached_property
    def summary(self) -> float:
        """Robust per-block effect: the median paired log ratio."""
        return float(np.median(self.log_ratios))


Decision = Literal["accept", "reject", "continue", "confirm"]


class Verdict(BaseModel):
    """What the gate says, with the numbers behind it."""

    model_config = ConfigDict(frozen=True)

    decision: Decision
    accepted: bool
    reason: str
    improvement: float
    """Point estimate as a fraction of the incumbent's time (+0.03 = 3% faster)."""
    ci_low: float
    ci_high: float
    confidence: float
    """Two-sided confidence level of [ci_low, ci_high]."""
    p_value: float | None
    """One-sided p-value across blocks (None: one block, or zero spread across blocks)."""
    pairs: int
    blocks: int
    confirmation_blocks: int
    positive_fraction: float
    published_rule: bool
    """What the published floor rule alone says on the same samples (all pairs considered)."""


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


# --------------------------------------------------------------------------------------------
# Elementary statistics
# --------------------------------------------------------------------------------------------


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


def _to_fraction(log_ratio: float) -> float:
    """Log ratio ln(t_inc / t_cand) -> improvement fraction 1 - t_cand / t_inc."""
    if log_ratio == math.inf:
        return 1.0
    if log_ratio == -math.inf:
        return -math.inf
    return -math.expm1(-log_ratio)


def _pct(fraction: float) -> str:
    return percent(fraction, digits=1)  # one decimal in reasons; an infinite bound reads "-inf%"


def _p(p: float | None) -> str:
    if p is None:
        return "p=n/a"
    return f"p={p:.2g}" if p >= 0.001 else f"p={p:.1e}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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
    return _floor((inc - cand) / inc, min_improvement, min_pairs, min_positive_fraction)[0]


def _floor(
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


# --------------------------------------------------------------------------------------------
# Decision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Evidence:
    """Everything measured on one set of blocks, independent of any significance level."""

    blocks: tuple[Block, ...]
    st: BlockStats
    pairs: int
    positive_fraction: float
    median_improvement: float
    floor: bool

    @classmethod
    def of(cls, blocks: Sequence[Block], policy: GatePolicy) -> _Evidence:
        inc = np.concatenate([b.arrays[0] for b in blocks])
        cand = np.concatenate([b.arrays[1] for b in blocks])
        floor, median, positive = _floor(
            (inc - cand) / inc,
            policy.min_improvement,
            policy.min_pairs,
            policy.min_positive_fraction,
        )
        return cls(
            blocks=tuple(blocks),
            st=across_blocks([b.summary for b in blocks]),
            pairs=int(inc.size),
            positive_fraction=positive,
            median_improvement=median,
            floor=floor,
        )

    @property
    def improvement(self) -> float:
        return _to_fraction(self.st.mean)

    @property
    def all_log_ratios(self) -> np.ndarray:
        return np.concatenate([b.log_ratios for b in self.blocks])

    def interval(self, alpha: float, pairs: bool = False) -> tuple[float, float]:
        """Two-sided (1 - 2 alpha) interval of the improvement fraction: the across-block t
        interval; or, with one block or `pairs`, the distribution-free interval of the median
        of all pairs."""
        if self.st.blocks == 1 or pairs:
            r = self.all_log_ratios
            lo, hi = median_lower_bound(r, alpha), median_upper_bound(r, alpha)
        else:
            lo, hi = self.st.lower(alpha), self.st.upper(alpha)
        return _to_fraction(lo), _to_fraction(hi)

    def significant(self, alpha: float) -> bool:
        p = self.st.p_value
        return p is not None and p < alpha

    def floor_failures(self, policy: GatePolicy) -> list[str]:
        why = []
        if self.pairs < policy.min_pairs:
            why.append(f"{self.pairs} pairs < {policy.min_pairs}")
        if self.median_improvement < policy.min_improvement:
            why.append(
                f"median pair {_pct(self.median_improvement)} < {policy.min_improvement:.1%}"
            )
        if self.positive_fraction < policy.min_positive_fraction:
            why.append(
                f"{self.positive_fraction:.0%} of pairs positive < "
                f"{policy.min_positive_fraction:.0%}"
            )
        return why

    def failures(self, policy: GatePolicy, alpha: float) -> list[str]:
        """Why these blocks do not pass at level alpha (empty list: they pass)."""
        why = []
        if self.st.blocks < policy.min_blocks:
            why.append(f"only {_plural(self.st.blocks, 'block')} < {policy.min_blocks}")
        if not self.significant(alpha):
            if self.st.degenerate:
                why.append("no spread across blocks, so significance is undefined")
            elif self.st.p_value is None:
                why.append("no across-block test with one block")
            else:
                why.append(f"not significant ({_p(self.st.p_value)} ≥ {alpha:.2g})")
        if self.improvement < policy.min_improvement:
            why.append(
                f"estimate {_pct(self.improvement)} below the "
                f"{policy.min_improvement:.1%} threshold"
            )
        if not self.floor:
            why.append("published floor failed (" + ", ".join(self.floor_failures(policy)) + ")")
        return why

    def headline(self, alpha: float, pairs: bool = False) -> str:
        lo, hi = self.interval(alpha, pairs)
        kind = " of pairs" if pairs and self.st.blocks > 1 else ""
        return (
            f"{_pct(self.improvement)} ({1 - 2 * alpha:.1%} CI{kind} {_pct(lo)}…{_pct(hi)}), "
            f"{_p(self.st.p_value)} over {_plural(self.st.blocks, 'block')}"
        )

    def verdict(
        self,
        decision: Decision,
        reason: str,
        alpha: float,
        n_blocks: int,
        n_conf: int,
        pairs: bool = False,
    ) -> Verdict:
        lo, hi = self.interval(alpha, pairs)
        return Verdict(
            decision=decision,
            accepted=decision == "accept",
            reason=reason,
            improvement=self.improvement,
            ci_low=lo,
            ci_high=hi,
            confidence=1.0 - 2.0 * alpha,
            p_value=self.st.p_value,
            pairs=self.pairs,
            blocks=n_blocks,
            confirmation_blocks=n_conf,
            positive_fraction=self.positive_fraction,
            published_rule=self.floor,
        )


def _early_reject(ev: _Evidence, policy: GatePolicy) -> tuple[str, bool] | None:
    """(why, whether the deciding interval is over pooled pairs) if the candidate is already
    clearly out; None otherwise. Both rules use early_reject_alpha, one-sided:

    * Before min_blocks: the distribution-free upper bound of the median log ratio over all
      pairs so far is below 0: the candidate is slower. With one block that is the block's own
      bound; with two, it catches the odd clearly-slower candidate whose first block was not
      conclusive, where a t interval on 1 degree of freedom cannot. Pairs are pooled across
      processes here, but only to reject and only at 0 (not at min_improvement), so a candidate
      that is truly >= 1% faster would need an implausible process shift to be caught.
    * From two blocks on: the across-block t upper bound is below min_improvement: the candidate
      cannot reach it.
    """
    a = policy.early_reject_alpha
    k = ev.st.blocks
    if k < policy.min_blocks or k == 1:
        upper = median_upper_bound(ev.all_log_ratios, a)
        if upper < 0.0:
            where = "in block 1" if k == 1 else f"over the {ev.pairs} pairs of {k} blocks"
            return f"candidate slower: upper bound {_pct(_to_fraction(upper))} < 0 {where}", True
    if k >= 2:
        upper = _to_fraction(ev.st.upper(a))
        if upper < policy.min_improvement:
            return (
                f"cannot reach {policy.min_improvement:.1%}: upper bound {_pct(upper)} < "
                f"{policy.min_improvement:.1%}",
                False,
            )
    return None


def _stage_one(ev: _Evidence, policy: GatePolicy) -> tuple[Decision, str, float, bool]:
    """Stage-1 decision on the blocks so far: (decision, reason, alpha of the reported CI,
    whether that CI is over pooled pairs)."""
    k = ev.st.blocks
    early = _early_reject(ev, policy)
    if early is not None:
        why, pairs = early
        a = policy.early_reject_alpha
        return "reject", f"rejected early: {ev.headline(a, pairs)}; {why}", a, pairs

    a = policy.look_alpha(k)
    failures = ev.failures(policy, a)
    if not failures:
        if policy.confirm_blocks == 0:
            return "accept", f"accepted: {ev.headline(a)}", a, False
        return (
            "confirm",
            f"provisional winner: {ev.headline(a)}; "
            f"confirm on {_plural(policy.confirm_blocks, 'fresh block')}",
            a,
            False,
        )
    if k >= policy.max_blocks:
        return "reject", f"rejected: {ev.headline(a)}; " + "; ".join(failures), a, False
    if k < policy.min_blocks:
        why = f"need at least {_plural(policy.min_blocks - k, 'more block')}"
    else:
        why = "; ".join(failures) + f"; block {k} of at most {policy.max_blocks}"
    return "continue", f"undecided: {ev.headline(a)}; {why}", a, False


DEFAULT_POLICY = GatePolicy()


def decide(
    blocks: Sequence[Block],
    policy: GatePolicy = DEFAULT_POLICY,
    confirmation: Sequence[Block] = (),
) -> Verdict:
    """Decide on the blocks so far (stage 1), or on a provisional winner's confirmation blocks.

    Stage 1 (``confirmation`` empty) returns "continue" (never once len(blocks) >= max_blocks),
    "reject", or, for a winner, "confirm" ("accept" directly when ``policy.confirm_blocks`` is 0).
    Stage 2 (``confirmation`` = the fresh blocks timed after stage 1 said "confirm") returns only
    "accept" or "reject": the fresh blocks alone must estimate at least min_improvement, and all
    blocks together must still pass the floor, the threshold and the t-test (at ``alpha``).
    """
    blocks = list(blocks)
    confirmation = list(confirmation)
    if not blocks:
        raise ValueError("decide() needs at least one block")
    ev = _Evidence.of(blocks, policy)
    decision, reason, a, pairs = _stage_one(ev, policy)
    if not confirmation:
        return ev.verdict(decision, reason, a, len(blocks), 0, pairs)

    n_conf = len(confirmation)
    if n_conf < policy.confirm_blocks:
        raise ValueError(
            f"confirmation needs {_plural(policy.confirm_blocks, 'fresh block')}, got {n_conf}"
        )
    # The winner's stage-1 look already spent its share of alpha, and a false accept needs that
    # look to pass, so the combined test over all blocks is an extra hurdle that can use the
    # family level without raising the error rate above alpha.
    a = policy.alpha
    combined = _Evidence.of(blocks + confirmation, policy)
    if decision not in ("confirm", "accept"):
        reason = f"rejected: stage 1 had no winner to confirm ({reason})"
        return combined.verdict("reject", reason, a, len(blocks), n_conf)

    fresh = across_blocks([b.summary for b in confirmation])
    fresh_improvement = _to_fraction(fresh.mean)
    why = []
    if fresh_improvement < policy.min_improvement:
        why.append(
            f"the {_plural(n_conf, 'fresh block')} gave {_pct(fresh_improvement)}, "
            f"below {policy.min_improvement:.1%}"
        )
    why += [f"all blocks: {w}" for w in combined.failures(policy, a)]
    if why:
        reason = f"rejected: confirmation failed: {'; '.join(why)} ({combined.headline(a)})"
        return combined.verdict("reject", reason, a, len(blocks), n_conf)
    reason = (
        f"accepted: {combined.headline(a)} ({len(blocks)} + {n_conf} fresh), "
        f"confirmed with {_pct(fresh_improvement)} on the {_plural(n_conf, 'fresh block')}"
    )
    return combined.verdict("accept", reason, a, len(blocks), n_conf)


# --------------------------------------------------------------------------------------------
# Several benchmark shapes
# --------------------------------------------------------------------------------------------

REGRESSION_ALPHA = 0.01
"""Error rate of the shape veto in each direction (see :func:`check_shape`), split evenly over its looks."""

REGRESSION_ZONE = 0.5
"""Half-width of the band around -tolerance where the veto promises nothing, as a share of the tolerance."""

REGRESSION_FIRST_LOOK = 3
"""The fewest blocks a shape is tested on: a t bound on two (one degree of freedom) is too wide to use."""

REGRESSION_MAX_BLOCKS = 12
"""The most blocks a stage-1 winner is held open for while a shape is unresolved; then it is rejected."""

ShapeOutcome = Literal["within", "slower", "unresolved"]


@dataclass(frozen=True)
class ShapeCheck:
    """One shape's regression test; improvements are fractions of the incumbent's time (negative: slower)."""

    shape: str
    blocks: int
    improvement: float
    """Estimate: the mean of the shape's block summaries (median paired log ratios), as a fraction."""
    low: float
    """One-sided lower confidence bound of the improvement (-inf: no bound yet)."""
    high: float
    """One-sided upper confidence bound of the improvement (+100%: no bound yet)."""
    confidence: float
    """One-sided confidence level of each bound."""
    tolerance: float
    outcome: ShapeOutcome

    def describe(self) -> str:
        """"3.4% slower at ragged (99.9% bounds -5.1%…-1.8%)", and for an unresolved shape the bound that
        falls short: ", lower below -3.0%" (a pass needs it), or ", upper not below -1.0%" (so does a veto)."""
        size = f"{abs(self.improvement):.1%} {'slower' if self.improvement < 0 else 'faster'} at {self.shape}"
        if self.blocks < REGRESSION_FIRST_LOOK:
            return f"{size} (no bound before {_plural(REGRESSION_FIRST_LOOK, 'block')})"
        if math.isinf(self.low):
            return f"{size} (no bound: no spread across blocks)"
        short = ""
        if self.outcome == "unresolved":
            band = REGRESSION_ZONE * self.tolerance
            short = (f", lower below {_pct(-(self.tolerance + band))}" if self.improvement >= -self.tolerance
                     else f", upper not below {_pct(-(self.tolerance - band))}")
        return f"{size} ({self.confidence:.1%} bounds {_pct(self.low)}…{_pct(self.high)}{short})"


def combine_shapes(blocks: Sequence[Block], weights: Sequence[float]) -> Block:
    """One process's blocks at several shapes as one block whose pair i has the weighted mean of the
    shapes' log ratios at pair i: the gate then tests the weighted geometric mean of paired improvements
    with the same statistics as for one shape. Its "times" are relative (incumbent exp(r), candidate 1)."""
    if not blocks or len(blocks) != len(weights):
        raise ValueError("combine_shapes needs one weight per block")
    n = min(len(b.incumbent) for b in blocks)
    total = float(sum(weights))
    combined = sum(w * b.log_ratios[:n] for b, w in zip(blocks, weights)) / total
    return Block(incumbent=np.exp(combined), candidate=np.ones(n), process=blocks[0].process)


def shape_improvement(blocks: Sequence[Block]) -> float:
    """One shape's improvement over all its pairs: 1 - geometric mean of t_candidate / t_incumbent."""
    ratios = np.concatenate([b.log_ratios for b in blocks])
    return _to_fraction(float(np.mean(ratios)))


def regression_look_alpha(alpha: float = REGRESSION_ALPHA, max_blocks: int = REGRESSION_MAX_BLOCKS) -> float:
    """One-sided level of each bound at each look at a shape: `alpha` split evenly (Bonferroni) over the
    at most max_blocks - 1 looks, in stage 1 at blocks REGRESSION_FIRST_LOOK..max_blocks and one at confirmation."""
    if max_blocks < REGRESSION_FIRST_LOOK:
        raise ValueError(f"max_blocks ({max_blocks}) must be >= {REGRESSION_FIRST_LOOK}, the first look at a shape")
    return alpha / (max_blocks - REGRESSION_FIRST_LOOK + 2)


def check_shape(
    name: str,
    blocks: Sequence[Block],
    tolerance: float,
    alpha: float = REGRESSION_ALPHA,
    max_blocks: int = REGRESSION_MAX_BLOCKS,
) -> ShapeCheck:
    """Is the candidate more than `tolerance` slower at this shape? Within, slower, or not known yet.

    The shape's block summaries give the one-sided (1 - regression_look_alpha) Student-t bounds of its
    improvement, as across blocks for the whole gate. No data tells a shape 1.9% slower from one 2.1%
    slower, so the veto promises its error rates outside a band of +-REGRESSION_ZONE * tolerance:

    * within: lower bound >= -(1 + zone) * tolerance and estimate >= -tolerance. A shape truly
      1.5 x tolerance slower or worse passes with probability <= alpha (it has to pass a look).
    * slower: upper bound < -(1 - zone) * tolerance and estimate < -tolerance (so every shape whose
      upper bound is below -tolerance, proven too slow). A shape truly 0.5 x tolerance slower or better
      is found slower with probability <= alpha.
    * unresolved: neither (fewer than REGRESSION_FIRST_LOOK blocks, no spread, or an interval too wide).
    """
    a = regression_look_alpha(alpha, max_blocks)
    st = across_blocks([b.summary for b in blocks])
    improvement = _to_fraction(st.mean)
    low, high = -math.inf, 1.0
    if st.blocks >= REGRESSION_FIRST_LOOK and not st.degenerate:
        low, high = _to_fraction(st.lower(a)), _to_fraction(st.upper(a))
    band = REGRESSION_ZONE * tolerance
    outcome: ShapeOutcome = "unresolved"
    if high < -(tolerance - band) and improvement < -tolerance:
        outcome = "slower"
    elif low >= -(tolerance + band) and improvement >= -tolerance:
        outcome = "within"
    return ShapeCheck(name, st.blocks, improvement, low, high, 1.0 - a, tolerance, outcome)


def veto_regressions(
    verdict: Verdict,
    per_shape: Mapping[str, Sequence[Block]],
    tolerance: float,
    *,
    alpha: float = REGRESSION_ALPHA,
    max_blocks: int = REGRESSION_MAX_BLOCKS,
) -> Verdict:
    """A winner (accept or confirm) as its shapes allow, each checked by :func:`check_shape`.

    The caller applies it after every decision, stage 1's and the confirmation's, with every block so far
    at each shape. Any shape slower: reject. In stage 1 (no confirmation blocks yet) a shape unresolved holds
    the winner open ("continue": one more block, whatever the stage-1 design's max_blocks) until it resolves
    or has `max_blocks` blocks, and is then rejected: a candidate must show it is within tolerance, and few
    data are not a pass. A candidate 1.5 x tolerance slower at a shape is accepted with probability <= alpha.
    After confirmation every shape was already shown within in stage 1, so only a shape now found slower
    rejects: the fresh blocks can take a winner away, never make one.
    """
    if verdict.decision not in ("accept", "confirm"):
        return verdict
    checks = [check_shape(name, blocks, tolerance, alpha, max_blocks) for name, blocks in per_shape.items()]
    slower = [c for c in checks if c.outcome == "slower"]
    unresolved = [c for c in checks if c.outcome == "unresolved"]
    if not slower and (not unresolved or verdict.confirmation_blocks > 0):
        return verdict
    where = ", ".join(c.describe() for c in slower or unresolved)
    overall = (
        f"over all shapes {_pct(verdict.improvement)} ({verdict.confidence:.1%} CI {_pct(verdict.ci_low)}…"
        f"{_pct(verdict.ci_high)}), {_p(verdict.p_value)} over "
        f"{_plural(verdict.blocks + verdict.confirmation_blocks, 'block')}"
    )
    if slower:
        reason = f"rejected: {where}, beyond the {tolerance:.1%} tolerance; {overall}"
    elif verdict.blocks < max_blocks:  # the gate's own count, which grows with every call: holding open ends
        reason = (f"undecided: {where}, not yet shown within the {tolerance:.1%} tolerance; "
                  f"block {verdict.blocks} of at most {max_blocks}; {overall}")
        return verdict.model_copy(update={"decision": "continue", "accepted": False, "reason": reason})
    else:
        reason = (f"rejected: {where}, not shown within the {tolerance:.1%} tolerance in "
                  f"{_plural(verdict.blocks, 'block')}; {overall}")
    return verdict.model_copy(update={"decision": "reject", "accepted": False, "reason": reason})


def summarize(verdict: Verdict) -> str:
    """One line for a person: the decision and its reason."""
    mark = {"accept": "ACCEPT", "reject": "REJECT", "continue": "CONTINUE", "confirm": "CONFIRM"}
    return f"{mark[verdict.decision]}: {verdict.reason}"
