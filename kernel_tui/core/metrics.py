"""Figures derived from a run's records, each computed in one place for the report, the history and
the screen: the baseline's latency and the share of the roofline a latency reaches."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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
