"""The decision rule: stage 1 on the blocks so far (early reject, the looks of the sequential design),
then stage 2 on a winner's fresh confirmation blocks. Each rule is in the package's docstring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kernel_tui.core.gate.models import DEFAULT_POLICY, Block, Decision, GatePolicy, Verdict
from kernel_tui.core.gate.statistics import (
    BlockStats,
    across_blocks,
    floor_rule,
    median_lower_bound,
    median_upper_bound,
    to_fraction,
)
from kernel_tui.core.gate.wording import below, p_text, pct, plural, span


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
        floor, median, positive = floor_rule(
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
        return to_fraction(self.st.mean)

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
        return to_fraction(lo), to_fraction(hi)

    def significant(self, alpha: float) -> bool:
        p = self.st.p_value
        return p is not None and p < alpha

    def floor_failures(self, policy: GatePolicy) -> list[str]:
        why = []
        if self.pairs < policy.min_pairs:
            why.append(f"{self.pairs} pairs < {policy.min_pairs}")
        if self.median_improvement < policy.min_improvement:
            why.append(
                f"median pair {pct(self.median_improvement)} < {policy.min_improvement:.1%}"
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
            why.append(f"only {plural(self.st.blocks, 'block')} < {policy.min_blocks}")
        if not self.significant(alpha):
            if self.st.degenerate:
                why.append("no spread across blocks, so significance is undefined")
            elif self.st.p_value is None:
                why.append("no across-block test with one block")
            else:
                why.append(f"not significant ({p_text(self.st.p_value)} ≥ {alpha:.2g})")
        if self.improvement < policy.min_improvement:
            why.append(
                f"estimate {pct(self.improvement)} below the "
                f"{policy.min_improvement:.1%} threshold"
            )
        if not self.floor:
            why.append("published floor failed (" + ", ".join(self.floor_failures(policy)) + ")")
        return why

    def headline(self, alpha: float, pairs: bool = False) -> str:
        lo, hi = self.interval(alpha, pairs)
        kind = " of pairs" if pairs and self.st.blocks > 1 else ""
        return (
            f"{pct(self.improvement)} ({1 - 2 * alpha:.1%} CI{kind} {span(lo, hi)}), "
            f"{p_text(self.st.p_value)} over {plural(self.st.blocks, 'block')}"
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
            return f"candidate slower: upper bound {below(to_fraction(upper), 0.0)} {where}", True
    if k >= 2:
        upper = to_fraction(ev.st.upper(a))
        if upper < policy.min_improvement:
            return (
                f"cannot reach {policy.min_improvement:.1%}: upper bound {below(upper, policy.min_improvement)}",
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
            f"confirm on {plural(policy.confirm_blocks, 'fresh block')}",
            a,
            False,
        )
    if k >= policy.max_blocks:
        return "reject", f"rejected: {ev.headline(a)}; " + "; ".join(failures), a, False
    if k < policy.min_blocks:
        why = f"need at least {plural(policy.min_blocks - k, 'more block')}"
    else:
        why = "; ".join(failures) + f"; block {k} of at most {policy.max_blocks}"
    return "continue", f"undecided: {ev.headline(a)}; {why}", a, False


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
            f"confirmation needs {plural(policy.confirm_blocks, 'fresh block')}, got {n_conf}"
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
    fresh_improvement = to_fraction(fresh.mean)
    why = []
    if fresh_improvement < policy.min_improvement:
        why.append(
            f"the {plural(n_conf, 'fresh block')} gave {pct(fresh_improvement)}, "
            f"below {policy.min_improvement:.1%}"
        )
    why += [f"all blocks: {w}" for w in combined.failures(policy, a)]
    if why:
        reason = f"rejected: confirmation failed: {'; '.join(why)} ({combined.headline(a)})"
        return combined.verdict("reject", reason, a, len(blocks), n_conf)
    reason = (
        f"accepted: {combined.headline(a)} ({len(blocks)} + {n_conf} fresh), "
        f"confirmed with {pct(fresh_improvement)} on the {plural(n_conf, 'fresh block')}"
    )
    return combined.verdict("accept", reason, a, len(blocks), n_conf)


def summarize(verdict: Verdict) -> str:
    """One line for a person: the decision and its reason."""
    mark = {"accept": "ACCEPT", "reject": "REJECT", "continue": "CONTINUE", "confirm": "CONFIRM"}
    return f"{mark[verdict.decision]}: {verdict.reason}"
