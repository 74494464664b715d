"""What the agent is told of its machine and its progress: the device, versions, the roofline and where the
incumbent stands on it (the system prompt quotes it; the agent's get_environment tool answers with it)."""

from __future__ import annotations

from typing import Any

from kernel_tui.core import metrics
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.history import baseline_latency as measured_baseline
from kernel_tui.core.history import current_best
from kernel_tui.core.workspace import Workspace


def _read(ws: Workspace, name: str) -> dict:
    try:
        return ws.read_json(name) or {}
    except KernelTuiError:
        return {}


def best_latency(ws: Workspace) -> float | None:
    """The gate's median latency of the current best, from its verdict (None for the baseline); a restore
    carries the latency of the version it copies."""
    best = current_best(ws)
    return best.latency if best.round else None


def baseline_latency(ws: Workspace) -> float | None:
    try:
        return measured_baseline(ws)
    except (KernelTuiError, KeyError, TypeError, ValueError):
        return None


def environment_facts(ws: Workspace, evaluator: Evaluator) -> dict[str, Any]:
    """What get_environment answers and the system prompt quotes: device, versions, roofline."""
    spec = ws.task.spec
    device = evaluator.device
    env = _read(ws, "environment.json")
    hw = _read(ws, "hardware.json")
    shape = spec.timing_shape(device)
    flops, nbytes = spec.cost_at(shape.dims)
    bandwidth = hw.get("copy_bandwidth_bytes_per_s")
    roof = metrics.roof(spec, hw) if device == "cuda" else metrics.Roof(why="CPU interpreter")
    floor = roof.floor
    best = best_latency(ws) or baseline_latency(ws)
    place = roof.place(best)
    return {
        "device": device,
        "device_name": env.get("device_name") or hw.get("device_name"),
        "versions": {k: env.get(k) for k in ("python", "torch", "triton")},
        "l2_bytes": env.get("l2_bytes") or hw.get("l2_bytes"),
        "sm_count": env.get("sm_count") or hw.get("sm_count"),
        "measured_bandwidth_bytes_per_s": bandwidth,
        "bandwidth_method": hw.get("method"),
        "hardware_note": hw.get("statement") or hw.get("error"),
        "timing_shape": {"name": shape.name, "dims": shape.dims},
        "cost_per_call": {"flops": flops, "bytes": nbytes, "label": spec.cost_model.label},
        "arithmetic_intensity_flops_per_byte": flops / nbytes if nbytes else None,
        "matmul_peak_flops_per_s": roof.peak,
        "compute_roof_dtype": roof.dtype or None,
        "roofline_floor_seconds": floor,
        "baseline_latency_seconds": baseline_latency(ws),
        "best_latency_seconds": best_latency(ws),
        "best_roofline_fraction": place.fraction if place else None,
        # memory, compute, or latency (far below both roofs): what holds the incumbent back
        "best_bottleneck": place.bottleneck if place else None,
        "interpreter": device == "cpu",
    }
