"""The gate's models: its policy (thresholds, error rates, the looks of the sequential design), the
timing blocks it reads and the verdict it gives. The design behind them is in the package's docstring."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
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

SPENDING_RHO = 3.0
"""Exponent of the alpha-spending function alpha * t**rho used across the looks of stage 1."""


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


DEFAULT_POLICY = GatePolicy()
