"""Figures derived from a run's records, each computed in one place for the report, the history and
the screen: the baseline's latency and the share of the roofline a latency reaches.

The roofline has two roofs, both measured on this machine (hardware.json): the copy bandwidth and the
peak of torch.matmul in the task's dtype. A call's floor is the longer of its cost-model bytes at that
bandwidth and its cost-model FLOPs at that peak; the share of the roofline is floor / latency, and the
longer of the two names what bounds it. Where no peak was measured (or the cost model counts no FLOPs),
the bytes alone make the floor, as before.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kernel_tui.core.task import TaskSpec

NO_BANDWIDTH = "no measured bandwidth in hardware.json"
# What evaluating a validated cost model can still raise: ExpressionError (a ValueError), division by
# zero or overflow at the shape, a complex power that float() refuses (TypeError), a deep expression.
COST_MODEL_ERRORS = (ArithmeticError, TypeError, ValueError, RecursionError)


def baseline_latency(evaluation: Mapping[str, Any] | None) -> float | None:
    """The baseline's median seconds per call from its own evaluation (baseline-evaluation.json: a worker
    result whose timing block runs the baseline against itself); None where there is no usable sample."""
    data = evaluation if isinstance(evaluation, Mapping) else {}
    raw_timing = data.get("timing")
    timing = raw_timing if isinstance(raw_timing, Mapping) else {}
    samples = [v for v in timing.get("candidate") or [] if isinstance(v, (int, float)) and v > 0]
    if samples:
        return float(statistics.median(samples))
    seconds = data.get("candidate_seconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None


def copy_bandwidth(hardware: Mapping[str, Any] | None) -> float | None:
    """The measured copy bandwidth in bytes/s (hardware.json), or None where none was measured."""
    bw = (hardware or {}).get("copy_bandwidth_bytes_per_s")
    return float(bw) if isinstance(bw, (int, float)) and bw > 0 else None


def benchmark_bytes(spec: TaskSpec | None) -> tuple[float | None, str]:
    """The cost model's bytes per call at the benchmark shape, or (None, why there are none)."""
    if spec is None:
        return None, "no task spec, so no cost-model bytes"
    try:
        nbytes = spec.benchmark_bytes()
    except COST_MODEL_ERRORS as exc:  # a cost model that cannot be evaluated is reported, not raised
        return None, f"cost model bytes cannot be evaluated ({exc})"
    if nbytes <= 0:
        return None, "the cost model gives no bytes"
    return nbytes, ""


def roofline(nbytes: float | None, latency: float | None, bandwidth: float | None) -> tuple[float | None, str]:
    """The fraction of the roofline a latency reaches, bytes / latency / bandwidth, or (None, why not)."""
    if bandwidth is None or bandwidth <= 0:
        return None, NO_BANDWIDTH
    if latency is None or latency <= 0:
        return None, "no latency yet"
    if nbytes is None or nbytes <= 0:
        return None, "the cost model gives no bytes"
    return nbytes / latency / bandwidth, ""


def matmul_peak(hardware: Mapping[str, Any] | None, dtype: str) -> float | None:
    """The measured torch.matmul FLOP/s in `dtype` (hardware.json), or None where none was measured."""
    peaks = (hardware or {}).get("matmul_flops_per_s")
    peak = peaks.get(dtype) if isinstance(peaks, Mapping) else None
    return float(peak) if isinstance(peak, (int, float)) and peak > 0 else None


def compute_dtype(spec: TaskSpec) -> str:
    """The dtype the compute roof is taken in: the first floating-point output's (else the first tensor's)."""
    floats = [t.dtype for t in spec.tensors if t.kind == "output" and t.dtype.startswith(("float", "bfloat"))]
    return floats[0] if floats else next((t.dtype for t in spec.tensors if t.kind != "scalar"), "float32")


# Below this share of its roofline a kernel is held by neither roof but by latency (too little work in
# flight: occupancy, dependent loads, launch), whichever roof is the longer.
LATENCY_BOUND_BELOW = 0.25


@dataclass(frozen=True)
class Place:
    """Where one latency sits under the roofline."""

    fraction: float  # floor / latency: 1.0 is on the roof
    bound: Literal["memory", "compute"]  # the longer of the two floors
    bytes_per_s: float
    flops_per_s: float | None

    @property
    def words(self) -> str:
        return f"{self.bound}-bound"

    @property
    def bottleneck(self) -> Literal["memory", "compute", "latency"]:
        """What holds the kernel back: the longer roof, or latency when it is far below both."""
        return "latency" if self.fraction < LATENCY_BOUND_BELOW else self.bound


@dataclass(frozen=True)
class Roof:
    """A task's roofline on this machine: cost-model bytes and FLOPs per call against measured roofs.
    `why` says what is missing when there is no roofline at all."""

    nbytes: float | None = None
    flops: float | None = None
    bandwidth: float | None = None
    peak: float | None = None  # FLOP/s; None: the bytes alone make the floor
    dtype: str = ""
    why: str = ""

    @property
    def usable(self) -> bool:
        return bool(self.nbytes and self.bandwidth)

    @property
    def intensity(self) -> float | None:
        return self.flops / self.nbytes if self.flops and self.nbytes else None

    def floors(self) -> tuple[float, float] | None:
        """(memory floor, compute floor) in seconds per call; the compute floor is 0 without a peak."""
        if not self.nbytes or not self.bandwidth:
            return None
        return self.nbytes / self.bandwidth, (self.flops / self.peak if self.flops and self.peak else 0.0)

    @property
    def floor(self) -> float | None:
        """The least time a call can take under both roofs."""
        both = self.floors()
        return max(both) if both else None

    def place(self, latency: float | None) -> Place | None:
        both = self.floors()
        if both is None or latency is None or latency <= 0:
            return None
        memory_floor, compute_floor = both
        bound: Literal["memory", "compute"] = "compute" if compute_floor > memory_floor else "memory"
        return Place(fraction=max(both) / latency, bound=bound, bytes_per_s=(self.nbytes or 0.0) / latency,
                     flops_per_s=self.flops / latency if self.flops else None)


def roof(spec: TaskSpec | None, hardware: Mapping[str, Any] | None) -> Roof:
    """The task's roofline from its cost model at the benchmark shape and hardware.json."""
    bandwidth = copy_bandwidth(hardware)
    if bandwidth is None:
        return Roof(why=NO_BANDWIDTH)
    nbytes, why = benchmark_bytes(spec)
    if nbytes is None or spec is None:
        return Roof(bandwidth=bandwidth, why=why)
    try:
        flops = spec.cost_at(spec.shape)[0]
    except COST_MODEL_ERRORS:
        flops = 0.0
    dtype = compute_dtype(spec)
    return Roof(nbytes=nbytes, flops=flops if flops > 0 else None, bandwidth=bandwidth,
                peak=matmul_peak(hardware, dtype), dtype=dtype)


def occupancy_facts(spec: TaskSpec, hardware: dict | None) -> dict[str, int | None]:
    """The GPU's SM count and one call's output elements at the most heavily weighted timed shape: what the
    search needs to tell an output tiling too coarse to give every SM a program (search_rank.fills_sms). None
    of it off a GPU: the interpreter runs one program at a time."""
    hw = hardware or {}
    if hw.get("device") != "cuda":
        return {}
    shape = max(spec.benchmark_shapes("cuda"), key=lambda s: s[1])[0]
    return {"sm_count": hw.get("sm_count"), "output_elements": spec.output_elements(shape.dims)}
