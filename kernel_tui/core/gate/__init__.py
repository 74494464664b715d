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

The package: `models` (GatePolicy, Block, Verdict), `statistics` (log ratios, the floor rule, median bounds,
the across-block t-test), `decision` (stage 1 and the confirmation: :func:`decide`), `shapes` (several
benchmark shapes and their veto) and `wording` (how reasons write numbers). Callers import from here.
"""

from __future__ import annotations

from kernel_tui.core.gate.decision import decide, summarize
from kernel_tui.core.gate.models import DEFAULT_POLICY, SPENDING_RHO, Block, Decision, GatePolicy, Verdict, policy_problems
from kernel_tui.core.gate.shapes import (
    REGRESSION_ALPHA,
    REGRESSION_FIRST_LOOK,
    REGRESSION_MAX_BLOCKS,
    REGRESSION_ZONE,
    ShapeCheck,
    ShapeOutcome,
    check_shape,
    combine_shapes,
    regression_look_alpha,
    shape_improvement,
    veto_regressions,
)
from kernel_tui.core.gate.statistics import (
    BlockStats,
    across_blocks,
    block_summary,
    log_ratios,
    median_lower_bound,
    median_upper_bound,
    paired_improvements,
    published_rule,
)

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
    "Decision",
    "REGRESSION_ALPHA",
    "REGRESSION_FIRST_LOOK",
    "REGRESSION_MAX_BLOCKS",
    "REGRESSION_ZONE",
    "SPENDING_RHO",
    "ShapeOutcome",
    "median_lower_bound",
]
