"""Several benchmark shapes: one block per process from the shapes' weighted log ratios, and the per-shape
veto that keeps a winner from being slower than the tolerance at any one shape (its error rates and the
simulation behind them are in the package's docstring)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kernel_tui.core.gate.models import Block, Verdict
from kernel_tui.core.gate.statistics import across_blocks, to_fraction
from kernel_tui.core.gate.wording import p_text, pct, plural, span

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
            return f"{size} (no bound before {plural(REGRESSION_FIRST_LOOK, 'block')})"
        if math.isinf(self.low):
            return f"{size} (no bound: no spread across blocks)"
        short = ""
        if self.outcome == "unresolved":
            band = REGRESSION_ZONE * self.tolerance
            short = (f", lower below {pct(-(self.tolerance + band))}" if self.improvement >= -self.tolerance
                     else f", upper not below {pct(-(self.tolerance - band))}")
        return f"{size} ({self.confidence:.1%} bounds {span(self.low, self.high)}{short})"


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
    return to_fraction(float(np.mean(ratios)))


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
    improvement = to_fraction(st.mean)
    low, high = -math.inf, 1.0
    if st.blocks >= REGRESSION_FIRST_LOOK and not st.degenerate:
        low, high = to_fraction(st.lower(a)), to_fraction(st.upper(a))
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
        f"over all shapes {pct(verdict.improvement)} ({verdict.confidence:.1%} CI {span(verdict.ci_low, verdict.ci_high)}), "
        f"{p_text(verdict.p_value)} over "
        f"{plural(verdict.blocks + verdict.confirmation_blocks, 'block')}"
    )
    if slower:
        reason = f"rejected: {where}, beyond the {tolerance:.1%} tolerance; {overall}"
    elif verdict.blocks < max_blocks:  # the gate's own count, which grows with every call: holding open ends
        reason = (f"undecided: {where}, not yet shown within the {tolerance:.1%} tolerance; "
                  f"block {verdict.blocks} of at most {max_blocks}; {overall}")
        return verdict.model_copy(update={"decision": "continue", "accepted": False, "reason": reason})
    else:
        reason = (f"rejected: {where}, not shown within the {tolerance:.1%} tolerance in "
                  f"{plural(verdict.blocks, 'block')}; {overall}")
    return verdict.model_copy(update={"decision": "reject", "accepted": False, "reason": reason})
