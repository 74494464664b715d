"""Chains: small true gains that add up.

The gate keeps a candidate only when it is faster by the task's minimum (1% by default), so a step that is
truly faster by less is rejected however sure the measurement: on the live H200 matmul, round 17's grouped
launch measured +0.8% (CI +0.7…+0.9%) and was let go. Two such steps from one incumbent, on different knobs,
may clear the minimum together. A single step the gate turned down with its estimate above 0 and the lower
bound of its interval above 0 is kept here as a *small gain* of the state it was measured from; once two of
one state are known, the search proposes them as one candidate, said to be a chain, before anything else.
The chain is judged by the gate like any candidate: if the two do not add up, it is rejected, and the pair
is never proposed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from kernel_tui.core.proposers.transforms import Action, Analysis


@dataclass(frozen=True)
class SmallGain:
    state: str  # the state key the step was measured from (the incumbent then)
    part: str  # the step's action key, knob=value
    improvement: float
    ci_low: float

    def said(self) -> str:
        return f"{self.improvement:+.1%}, CI from {self.ci_low:+.1%}"


def is_small_gain(accepted: bool, passed: bool, improvement: float | None, ci_low: float | None) -> bool:
    """A measured step the gate turned down although it was surely faster (its interval above 0)."""
    return (passed and not accepted and improvement is not None and ci_low is not None
            and improvement > 0 and ci_low > 0)


def chain_pairs(gains: list[SmallGain], state: str, tried: set[str]) -> list[tuple[SmallGain, SmallGain]]:
    """Untried pairs of this state's small gains on different knobs, the largest sum of estimates first."""
    mine = [g for g in gains if g.state == state]
    pairs = [(a, b) if a.improvement >= b.improvement else (b, a) for a, b in combinations(mine, 2)
             if a.part.split("=", 1)[0] != b.part.split("=", 1)[0]]
    pairs = [(a, b) for a, b in pairs if f"{state}|{a.part}+{b.part}" not in tried]
    return sorted(pairs, key=lambda p: -(p[0].improvement + p[1].improvement))


def action_for(analysis: Analysis, part: str) -> Action | None:
    return next((a for a in analysis.actions() if a.key == part), None)


def chain_text(first: Action, second: Action, a: SmallGain, b: SmallGain) -> str:
    return (f"chain of two small gains: {first.change} ({a.said()}), then {second.change} ({b.said()}); "
            "each alone was surely faster but under the gate's minimum")


def gains_state(gains: list[SmallGain]) -> list[dict]:
    return [{"s": g.state, "a": g.part, "improvement": g.improvement, "ci_low": g.ci_low} for g in gains]


def gains_from_state(saved: list[dict] | None) -> list[SmallGain]:
    return [SmallGain(state=d["s"], part=d["a"], improvement=float(d["improvement"]), ci_low=float(d["ci_low"]))
            for d in saved or []]
