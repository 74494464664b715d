"""How a model's parameters and buffers are drawn: torch.nn's defaults, else what a real instance shows.

torch.nn initializes Linear, ConvNd and ConvTransposeNd weights (kaiming_uniform with a = sqrt(5)) and
biases uniform in ±1/sqrt(fan_in), fan_in = shape[1] * prod(shape[2:]) of the weight; norm layers
start at weight 1, bias 0, running mean 0, running variance 1. A default is used only where the values
of a real instance agree with it (a problem may re-initialize); anything else is classified from the
instance's values: constant, uniform (flat: kurtosis near 1.8) or normal.
"""

from __future__ import annotations

import math
from typing import Any

from kernel_tui.core.expressions import evaluate
from kernel_tui.core.kernelbench.fit import Expr, product

FAN_IN_LAYERS = {"Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                 "LazyLinear"}
NORM_LAYERS = {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "InstanceNorm1d",
               "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "LocalResponseNorm", "SyncBatchNorm"}
NORM_VALUES = {"weight": 1, "bias": 0, "running_mean": 0, "running_var": 1, "num_batches_tracked": 0}


def _round(x: float) -> float:
    return float(f"{x:.4g}")


def _within(stats: dict[str, Any], low: float, high: float) -> bool:
    return stats.get("n", 0) > 0 and stats["min"] >= low - 1e-6 and stats["max"] <= high + 1e-6 and not stats["constant"]


# A floating-point buffer with at most this many distinct values is a mask or a table, not a random draw.
FEW_VALUES = 16


def unrepresentable(name: str, buffer: bool, stats: dict[str, Any] | None, dtype: str) -> str | None:
    """Why a buffer's values cannot be drawn from a distribution: a structure built in __init__ (a causal
    mask, an index table) that a random draw of the same statistics would silently change. Parameters are
    weights, drawn as their layer draws them; a constant buffer (running statistics) is written as one."""
    if not buffer or not stats or not stats.get("n") or stats["constant"]:
        return None
    floating = dtype.startswith(("float", "bfloat"))
    if floating and stats.get("distinct", FEW_VALUES + 1) > FEW_VALUES:
        return None
    what = f"{stats.get('distinct')} distinct values" if floating else f"{dtype} values that vary"
    return (f"buffer {name} holds {what} (a mask or a table built in __init__): a random draw would change "
            "the problem, and the task format cannot carry its values")


def distribution(name: str, owner: str, shapes: dict[str, list[Expr]], dims: dict[str, int],
                 stats: dict[str, Any] | None, dtype: str) -> tuple[dict[str, Any], str | None]:
    """(the distribution of state entry `name`, a note when it is not torch.nn's default); `stats` are
    the values of a real instance at `dims`."""
    leaf = name.rsplit(".", 1)[-1]
    prefix = name[: -len(leaf)]
    if not dtype.startswith(("float", "bfloat")):
        value = int(stats["min"]) if stats and stats.get("n") and stats["constant"] else 0
        return {"distribution": "constant", "value": value}, None
    if owner in FAN_IN_LAYERS and leaf in ("weight", "bias") and prefix + "weight" in shapes:
        fan_in = product(shapes[prefix + "weight"][1:])
        fan_in_size = evaluate(fan_in, dims)
        bound = 1 / math.sqrt(fan_in_size) if fan_in_size else 0.0
        if stats is None or _within(stats, -bound, bound):
            high = f"1 / sqrt({fan_in})"
            return {"distribution": "uniform", "low": f"-{high}", "high": high}, None
    if owner in NORM_LAYERS and leaf in NORM_VALUES:
        value = NORM_VALUES[leaf]
        if stats is None or (stats.get("n", 0) and stats["constant"] and stats["min"] == value):
            return {"distribution": "constant", "value": value}, None
    return _observed(name, stats)


def _observed(name: str, stats: dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    if not stats or not stats.get("n"):
        return {"distribution": "normal", "mean": 0, "standardDeviation": 1}, f"{name}: drawn normal(0, 1) (not observed)"
    if stats["constant"]:
        value = _round(stats["min"])
        return {"distribution": "constant", "value": value}, f"{name}: constant {value:g}, as a real instance holds"
    n, mean, std = stats["n"], stats["mean"], stats["std"]
    if n >= 16 and stats["kurtosis"] < 2.4:
        half = math.sqrt(3) * std
        low, high = _round(mean - half), _round(mean + half)
        return ({"distribution": "uniform", "low": low, "high": high},
                f"{name}: uniform [{low:g}, {high:g}), from a real instance's values (n={n})")
    if n < 16 and stats["min"] >= 0 and stats["max"] < 1:
        return {"distribution": "uniform", "low": 0, "high": 1}, f"{name}: uniform [0, 1) guessed from {n} value(s)"
    if n < 16:
        return ({"distribution": "normal", "mean": 0, "standardDeviation": 1},
                f"{name}: normal(0, 1) guessed from {n} value(s)")
    m, s = _round(mean), _round(std)
    if abs(m) < 0.1 * s:
        m = 0
    return ({"distribution": "normal", "mean": m, "standardDeviation": s},
            f"{name}: normal({m:g}, {s:g}), from a real instance's values (n={n})")
