"""Drawing a task's inputs, parameters and scalars: from its distributions or its own generator, and the
edge values a cheat cannot count on never meeting.

A kernel can be wrong only where the usual draw never goes: exactly zero, negative zero, a subnormal, a value
far out in the tail. The correctness checks therefore also run each shape once on *edge* inputs: the task's
own draw with one element in eight replaced by such values, kept inside what the distribution allows (a
uniform draw's bounds hold; zeros only where zero is inside them), so the reference's answer and its
tolerance stay meaningful. Integer, boolean, constant and generated values are left as the task made them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import torch

from kernel_tui.core.task import InputDistribution, TaskSpec, TensorSpec

DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
EDGE_SHARE = 8  # one element in this many becomes an edge value
MAX_SCATTERED = 1 << 20  # and at most this many scattered ones: positions are drawn on the host
TAIL_SIGMAS = 6.0  # a normal draw's far tail: rare (about 2e-9 of draws) yet a plausible value


def derive(*parts: object) -> int:
    """A 62-bit seed from `parts` (the block's secret first): knowing one derived seed tells nothing of another
    (62 bits: room for the small offsets some draws add, inside a signed 64-bit seed)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


class TaskFault(Exception):
    """The task itself is wrong at some shape (its reference, generator or tolerances): invalid_task."""


# The task's input generator (task.json "generator"), installed once per process: a judge serves exactly
# one task, so every set it builds draws through it.
_GENERATOR: Callable[[dict[str, int], int, str], dict] | None = None


def use_generator(make_inputs: Callable[[dict[str, int], int, str], dict] | None) -> None:
    global _GENERATOR
    _GENERATOR = make_inputs


def generator_in_use() -> bool:
    return _GENERATOR is not None


def distribution(spec: TaskSpec, t: TensorSpec, dtype: torch.dtype) -> InputDistribution:
    """What `t`'s values are drawn from: its own distribution, else the task's (the published format's rules
    for booleans and integers)."""
    if t.input is None and dtype == torch.bool:
        return InputDistribution(distribution="bernoulli")
    if t.input is None and not dtype.is_floating_point:
        return InputDistribution(distribution="randint")
    return t.input or spec.input


def fill_one(dist: InputDistribution, dims: dict[str, int], tensor: torch.Tensor, gen: torch.Generator) -> None:
    """Draw `tensor`'s values as `dist` says."""
    v = dist.resolve(dims)
    shape, dev = tensor.shape, tensor.device
    kind = dist.distribution
    if kind == "constant":
        tensor.fill_(v["value"])
        return
    if kind == "bernoulli":
        values = torch.rand(shape, generator=gen, dtype=torch.float32, device=dev) < v["p"]
    elif kind == "randint":
        values = torch.randint(math.ceil(v["low"]), math.ceil(v["high"]), shape, generator=gen, dtype=torch.int64, device=dev)
    elif kind == "uniform":
        values = torch.rand(shape, generator=gen, dtype=torch.float32, device=dev) * (v["high"] - v["low"]) + v["low"]
    else:
        values = torch.randn(shape, generator=gen, dtype=torch.float32, device=dev) * v["std"] + v["mean"]
    if not tensor.dtype.is_floating_point and values.is_floating_point():
        values = values.floor()  # uniform or normal integers: rounded toward -inf
    tensor.copy_(values.to(tensor.dtype))


def edge_values(dist: InputDistribution, dims: dict[str, int], dtype: torch.dtype) -> list[float]:
    """The values an edge draw plants for `dist`, each representable in `dtype` and inside the distribution's
    support; none for distributions with no edges worth planting."""
    v = dist.resolve(dims)
    info = torch.finfo(dtype)
    tiny = info.tiny / 4  # a subnormal (flushed to zero by some hardware: a kernel must still be right)
    if dist.distribution == "normal":
        mean, std = v["mean"], v["std"]
        values = [0.0, -0.0, tiny, -tiny, mean + TAIL_SIGMAS * std, mean - TAIL_SIGMAS * std]
    elif dist.distribution == "uniform":
        low, high = v["low"], v["high"]
        values = [low, high, (low + high) / 2]
        if low <= 0.0 <= high:
            values += [0.0, -0.0]
        if low <= tiny and high >= tiny:
            values.append(tiny)
    else:
        return []
    return [float(torch.tensor(x, dtype=dtype)) for x in values if abs(x) <= info.max / 4]


def plant_edges(tensor: torch.Tensor, values: list[float], seed: int) -> None:
    """Replace one element in EDGE_SHARE with `values`: a contiguous run of each (a whole block of zeros,
    say) and scattered ones, at positions drawn from `seed`."""
    if not values or not tensor.numel():
        return
    flat = tensor.view(-1)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    n = flat.numel()
    count = min(MAX_SCATTERED, max(len(values), n // EDGE_SHARE))
    where = torch.randint(n, (count,), generator=gen)
    which = torch.randint(len(values), (where.numel(),), generator=gen)
    planted = torch.tensor(values, dtype=torch.float64)[which].to(tensor.dtype)
    flat[where.to(tensor.device)] = planted.to(tensor.device)
    run = min(64, max(1, n // (4 * len(values))))
    for i, value in enumerate(values):  # runs: a kernel's whole block may meet one value
        start = (i * n) // len(values)
        flat[start : start + run] = value


def generated(spec: TaskSpec, dims: dict[str, int], seed: int, device: str) -> dict:
    """The generator's values for `seed`, checked against the spec (TaskFault otherwise)."""
    assert _GENERATOR is not None
    try:
        made = _GENERATOR(dict(dims), seed, device)
    except Exception as exc:
        raise TaskFault(f"the input generator failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, dict):
        raise TaskFault(f"the input generator returned {type(made).__name__}, not a dict of name -> value")
    known = {t.name: t for t in spec.tensors if t.kind != "output"}
    unknown = sorted(set(made) - set(known))
    if unknown:
        raise TaskFault(f"the input generator returned unknown names {unknown} (inputs, parameters and scalars: {sorted(known)})")
    out: dict[str, torch.Tensor | int | float] = {}
    for name, value in made.items():
        t = known[name]
        if t.kind == "scalar":
            if isinstance(value, torch.Tensor):
                value = value.item()
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TaskFault(f"the input generator gave scalar {name!r} a {type(value).__name__}, not a number")
            out[name] = value
            continue
        want = spec.tensor_shape(t, dims)
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != want:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise TaskFault(f"the input generator gave {name!r} {got}; the task declares shape {want}")
        out[name] = value.to(device, DTYPES[t.dtype])
    return out


def draw(spec: TaskSpec, dims: dict[str, int], device: str, seed: int, tensors: dict[str, torch.Tensor], *,
         edge: bool = False) -> dict[str, int | float]:
    """Fill `tensors` (inputs and parameters) in place for `seed`; return the scalars' values. The task's
    generator, when it has one, gives whatever it returns; distributions give the rest, with edge values
    planted when `edge`."""
    gen = torch.Generator(device=device).manual_seed(seed)
    scalars: dict[str, int | float] = {}
    made = generated(spec, dims, seed, device) if _GENERATOR is not None else {}
    for index, t in enumerate(spec.tensors):
        if t.name in made:
            value = made[t.name]
            if t.kind == "scalar":
                scalars[t.name] = int(value) if t.dtype.startswith("int") else float(value)
            else:
                tensors[t.name].copy_(value)
        elif t.kind == "scalar":
            if t.value is not None:
                scalars[t.name] = spec.scalar_value(t, dims)
            else:  # a random scalar: one draw of its distribution
                one = torch.empty((), dtype=DTYPES[t.dtype], device=device)
                fill_one(distribution(spec, t, one.dtype), dims, one, gen)
                scalars[t.name] = one.item()
        elif t.is_argument_tensor:
            tensor = tensors[t.name]
            dist = distribution(spec, t, tensor.dtype)
            fill_one(dist, dims, tensor, gen)
            if edge and tensor.dtype.is_floating_point:
                plant_edges(tensor, edge_values(dist, dims, tensor.dtype), derive(seed, "edges", index))
    return scalars
