"""A profile as numbers: one KernelProfile per profiled kernel launch, in seconds, bytes and percent of
peak, and the figures a person reads off a whole profile.

A metric ncu did not report is None, never 0: "no tensor activity" and "not measured" differ. Averages
over kernels weight each launch by its duration, since a 2 µs kernel says little about a 2 ms call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel_tui.core.profile.ncu import NOT_A_STALL

# bottleneck_hint's thresholds, in percent of peak (or a share of stall cycles)
DRAM_BOUND_PCT = 60.0
TENSOR_BUSY_PCT = 50.0
COMPUTE_BOUND_PCT = 60.0
DOMINANT_STALL_SHARE = 0.25

# What a warp stalled in each state is waiting for (ncu's Profiling Guide, Warp Stall Reasons)
STALL_MEANING = {
    "long_scoreboard": "memory latency",
    "short_scoreboard": "shared memory or special-function latency",
    "barrier": "block-wide barriers",
    "membar": "memory fences",
    "mio_throttle": "a full shared-memory/MIO queue",
    "lg_throttle": "a full global/local memory queue",
    "math_pipe_throttle": "a busy math pipe",
    "wait": "fixed-latency dependencies",
    "not_selected": "other eligible warps (latency is hidden)",
    "dispatch_stall": "dispatch conflicts",
    "drain": "stores draining at exit",
    "no_instruction": "instruction fetch",
    "branch_resolving": "branch targets",
    "imc_miss": "constant-cache misses",
    "tex_throttle": "a full texture queue",
    "sleeping": "sleeping threads",
    "gmma": "wgmma completion",
    "misc": "miscellaneous hardware reasons",
}


_LABELS = {"gmma": "wgmma", "mio_throttle": "MIO throttle", "lg_throttle": "LG throttle", "imc_miss": "IMC miss"}


def stall_label(reason: str) -> str:
    """long_scoreboard -> "long scoreboard", gmma -> "wgmma"."""
    return _LABELS.get(reason, reason.replace("_", " "))


class KernelProfile(BaseModel):
    """One profiled kernel launch."""

    model_config = ConfigDict(frozen=True)
    id: int | None = None  # ncu's launch ID within the profiled range
    name: str
    duration_s: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    dram_pct: float | None = None  # DRAM throughput, % of peak
    sm_pct: float | None = None  # SM (compute) throughput, % of peak
    tensor_pct: float | None = None  # busiest tensor pipe, % of peak over active cycles
    occupancy_pct: float | None = None  # achieved occupancy, % of the SM's warp slots
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    registers: int | None = None  # per thread
    # warp state -> average cycles a warp spent in it per issued instruction (ncu's Warp State Statistics)
    stalls: dict[str, float] = Field(default_factory=dict)

    @property
    def dram_bytes(self) -> float | None:
        if self.dram_read_bytes is None or self.dram_write_bytes is None:
            return None
        return self.dram_read_bytes + self.dram_write_bytes


def _weighted(pairs: list[tuple[float, float | None]]) -> float | None:
    """Mean of values weighted by duration; unweighted where some duration is missing."""
    if not pairs:
        return None
    if all(w is not None for _, w in pairs):
        total = sum(w for _, w in pairs if w is not None)
        if total > 0:
            return sum(v * w for v, w in pairs if w is not None) / total
    return sum(v for v, _ in pairs) / len(pairs)


class Profile(BaseModel):
    """Every kernel launch of one profiled call."""

    model_config = ConfigDict(frozen=True)
    kernels: list[KernelProfile] = Field(default_factory=list)
    ncu_version: str = ""
    metrics_missing: list[str] = Field(default_factory=list)  # asked of ncu, absent from its results

    def by_name(self) -> dict[str, list[KernelProfile]]:
        """Launches grouped by kernel name, in order of first launch."""
        groups: dict[str, list[KernelProfile]] = {}
        for k in self.kernels:
            groups.setdefault(k.name, []).append(k)
        return groups

    def _total(self, value: Callable[[KernelProfile], float | None]) -> float | None:
        values = [value(k) for k in self.kernels]
        if not values or any(v is None for v in values):
            return None  # a sum over some launches would pass for the whole call's
        return sum(v for v in values if v is not None)

    @property
    def total_duration_s(self) -> float | None:
        return self._total(lambda k: k.duration_s)

    @property
    def total_dram_bytes(self) -> float | None:
        return self._total(lambda k: k.dram_bytes)

    def average(self, field: str) -> float | None:
        """Duration-weighted mean of a per-kernel percentage over the kernels that report it."""
        return _weighted([(v, k.duration_s) for k in self.kernels if (v := getattr(k, field)) is not None])

    @property
    def dram_pct(self) -> float | None:
        return self.average("dram_pct")

    @property
    def sm_pct(self) -> float | None:
        return self.average("sm_pct")

    @property
    def tensor_pct(self) -> float | None:
        return self.average("tensor_pct")

    @property
    def occupancy_pct(self) -> float | None:
        return self.average("occupancy_pct")

    @property
    def l1_hit_pct(self) -> float | None:
        return self.average("l1_hit_pct")

    @property
    def l2_hit_pct(self) -> float | None:
        return self.average("l2_hit_pct")

    @property
    def registers(self) -> int | None:
        """The most registers per thread of any kernel."""
        return max((k.registers for k in self.kernels if k.registers is not None), default=None)

    def stall_cycles(self) -> dict[str, float]:
        """Per warp state, cycles per issued instruction averaged over the kernels that report stalls, by
        duration (a state one kernel does not report counts as 0 there)."""
        kernels = [k for k in self.kernels if k.stalls]
        durations = [k.duration_s for k in kernels]
        weights = [1.0] * len(kernels)
        if all(d is not None for d in durations) and sum(d for d in durations if d is not None) > 0:
            weights = [d or 0.0 for d in durations]
        total = sum(weights)
        reasons = dict.fromkeys(r for k in kernels for r in k.stalls)
        return {r: sum(w * k.stalls.get(r, 0.0) for k, w in zip(kernels, weights)) / total for r in reasons}

    def top_stalls(self, n: int = 3) -> list[tuple[str, float]]:
        """The n largest stall reasons with their share of all stall cycles ("selected" is issuing, not a
        stall, and is left out)."""
        cycles = {r: v for r, v in self.stall_cycles().items() if r != NOT_A_STALL and v > 0}
        total = sum(cycles.values())
        if total <= 0:
            return []
        ranked = sorted(cycles.items(), key=lambda item: item[1], reverse=True)
        return [(r, v / total) for r, v in ranked[:n]]

    def bottleneck(self) -> Literal["memory", "compute", "latency"] | None:
        """What holds the kernels back, as a class the built-in search weights its knobs by: the DRAM when it
        is the busiest and busy, compute when the SMs or the tensor pipes are, else latency; None without
        utilisation figures."""
        dram, sm, tensor = self.dram_pct, self.sm_pct, self.tensor_pct
        if dram is None and sm is None and tensor is None:
            return None
        if dram is not None and dram >= DRAM_BOUND_PCT and dram >= (sm or 0.0):
            return "memory"
        if (tensor is not None and tensor >= TENSOR_BUSY_PCT) or (sm is not None and sm >= COMPUTE_BOUND_PCT):
            return "compute"
        return "latency"

    def bottleneck_hint(self) -> str:
        """A short phrase naming what holds the kernels back, from the highest utilisation or the dominant
        stall."""
        if not self.kernels:
            return "no kernels profiled"
        dram, sm, tensor = self.dram_pct, self.sm_pct, self.tensor_pct
        kind = self.bottleneck()
        if kind == "memory":
            return f"DRAM-bound ({dram:.0f}% of peak)"
        if kind == "compute":
            if tensor is not None and tensor >= TENSOR_BUSY_PCT:
                return f"tensor pipe busy ({tensor:.0f}%)"
            return f"compute-bound (SM {sm:.0f}% of peak)"
        top = self.top_stalls(1)
        if top and top[0][1] >= DOMINANT_STALL_SHARE:
            reason = top[0][0]
            return f"stalled on {stall_label(reason)} ({STALL_MEANING.get(reason, 'see ncu')})"
        if dram is not None or sm is not None:
            parts = [f"{label} {v:.0f}%" for label, v in (("DRAM", dram), ("SM", sm)) if v is not None]
            return f"latency-bound ({', '.join(parts)} of peak)"
        return "no utilisation metrics"
