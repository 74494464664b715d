"""Inputs, poisoned and guard-banded outputs, and output checks, inside the worker process.

Every output buffer sits between guard bands and is poisoned before each call, so unwritten elements
and out-of-bounds writes both show. The poison is not one recognisable value: a kernel that skips work
where its output already looks written (not NaN, finite, a plausible answer) would pass against NaN
alone, yet return stale contents from a real buffer. So each call's poison is drawn from (seed, call
index): a few contiguous segments, each NaN (a sentinel for integers), random finite values around the
expected answer's range, or the expected answer for other inputs. The guard bands hold random values
too (a NaN guard would tell a kernel it is being evaluated); they are remembered and compared bit for
bit. Inputs are snapshotted and compared after each call so a candidate that mutates its inputs fails.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import torch

from kernel_tui.core.task import InputDistribution, TaskSpec, TensorSpec

GUARD = 256  # elements on each side of an output
# Checks run over this many elements at a time: their temporaries (float64 copies, masks) stay bounded
# whatever the size of the tensors checked.
CHECK_CHUNK = 1 << 24
INT_SENTINEL = -(2**31) + 7

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


class TaskFault(Exception):
    """The task itself is wrong at some shape (its reference, generator or tolerances): invalid_task."""


# The task's input generator (task.json "generator"), installed once by the worker: a worker process
# serves exactly one task, so every ArgumentSet it builds draws through it.
_GENERATOR: Callable[[dict[str, int], int, str], dict] | None = None


def use_generator(make_inputs: Callable[[dict[str, int], int, str], dict] | None) -> None:
    global _GENERATOR
    _GENERATOR = make_inputs


class CandidateFault(Exception):
    """A candidate did something wrong; `status` says what kind of wrong."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def load_module(source: str, directory: Path, name: str) -> ModuleType:
    """Import `source` from a real file: Triton reads kernel source back through `inspect`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tensor_bytes(spec: TaskSpec, dims: dict[str, int]) -> int:
    """Bytes of every input and output tensor of one call at `dims`."""
    total = 0
    for t in spec.tensors:
        if t.kind != "scalar":
            total += math.prod(spec.tensor_shape(t, dims)) * DTYPES[t.dtype].itemsize
    return total


POISONS = ("nan", "garbage", "stale")
# A stale answer is a useful poison only where it differs from the expected one; below this share of
# differing elements, its segments keep random values instead.
STALE_MIN_SHARE = 0.5
STALE_SEED_OFFSET = 1_000_003  # the "other inputs" whose answer is the first stale poison
_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _poison_value(dtype: torch.dtype) -> float | int | bool:
    if dtype == torch.bool:
        return True  # a bool has no value outside the answer's: the random segments do the work
    return float("nan") if dtype.is_floating_point else INT_SENTINEL


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns as integers: exact comparison, NaN payloads included."""
    return t.view(_SAME_SIZE_INT[t.element_size()]) if t.is_floating_point() else t


def _segments(numel: int, count: int, rng: random.Random) -> list[tuple[int, int]]:
    """`count` contiguous segments covering [0, numel); weights in [1, 2) keep each at least
    1 / (2 * count - 1) of the whole, so every kind covers whole blocks of a kernel."""
    weights = [1.0 + rng.random() for _ in range(count)]
    bounds, acc = [0], 0.0
    for w in weights[:-1]:
        acc += w
        bounds.append(round(numel * acc / sum(weights)))
    bounds.append(numel)
    return list(zip(bounds, bounds[1:]))


@dataclass
class GuardedOutput:
    storage: torch.Tensor
    view: torch.Tensor
    before: torch.Tensor  # what the last poison() wrote over the storage, guards included
    low: float = -1.0  # garbage is drawn from [low, high]: around the expected answer's range
    high: float = 1.0
    stale: torch.Tensor | None = None  # flat expected answer for other inputs, when it differs enough
    gen: torch.Generator | None = None  # for the random values; reseeded every call

    def learn(self, expected: torch.Tensor, other: torch.Tensor | None, atol: float, rtol: float) -> None:
        """Adapt the poison to this expected answer: garbage at its scale, `other` as stale answer."""
        flat = expected.detach().flatten()
        dtype = self.storage.dtype
        if flat.numel():
            if flat.dtype == torch.bool:  # min and max of bools, without a full float copy
                lo, hi = float(flat.all()), float(flat.any())
            else:
                lo, hi = (float(v) for v in flat.aminmax())
            # a constant answer still gets a wide range, or many random values would equal it
            pad = (hi - lo) / 8 if hi > lo else max(abs(lo), 1.0)
            if dtype == torch.bool:
                self.low, self.high = 0, 1
            else:
                info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
                # half the representable range: no overflow to Inf inside uniform_
                self.low, self.high = max(lo - pad, info.min / 2), min(hi + pad, info.max / 2)
            if not dtype.is_floating_point and dtype != torch.bool:
                self.low, self.high = math.floor(self.low) - 1, math.ceil(self.high) + 1
        self.stale = None
        if other is not None and other.shape == expected.shape and flat.numel():
            share = _count_not_close(other, expected, atol, rtol) / flat.numel()
            if share >= STALE_MIN_SHARE:
                self.stale = other.detach().flatten().to(dtype)  # never written to: no copy

    def poison(self, rng: random.Random, *, plain: bool, first: bool) -> None:
        """Fill the storage for the next call. `plain`: NaN (or the sentinel) everywhere. Otherwise
        random values everywhere (guards included), then segments of NaN and the stale answer; the
        first call after new inputs has all three kinds, later ones one to three in any order."""
        b = self.before
        if plain:
            b.fill_(_poison_value(b.dtype))
        else:
            if self.gen is None:
                self.gen = torch.Generator(device=b.device)
            self.gen.manual_seed(rng.getrandbits(63))
            if b.dtype.is_floating_point:
                b.uniform_(self.low, self.high, generator=self.gen)
            else:
                b.random_(int(self.low), int(self.high) + 1, generator=self.gen)
            count = len(POISONS) if first else rng.randint(1, len(POISONS))
            kinds = rng.sample(POISONS, count)
            for kind, (lo, hi) in zip(kinds, _segments(self.view.numel(), count, rng)):
                if kind == "nan":
                    b[GUARD + lo : GUARD + hi].fill_(_poison_value(b.dtype))
                elif kind == "stale" and self.stale is not None:
                    b[GUARD + lo : GUARD + hi].copy_(self.stale[lo:hi])
        self.storage.copy_(b)

    def guard_flag(self) -> torch.Tensor:
        """A device bool: both guard bands still hold exactly what poison() wrote there."""
        s, b = _bits(self.storage), _bits(self.before)
        return torch.stack([(s[:GUARD] == b[:GUARD]).all(), (s[-GUARD:] == b[-GUARD:]).all()]).all()

    def guards_intact(self) -> bool:
        return bool(self.guard_flag())

    def unwritten(self) -> torch.Tensor:
        """Elements of the output that still hold, bit for bit, the poison of this call."""
        n = self.view.numel()
        return (_bits(self.storage)[GUARD : GUARD + n] == _bits(self.before)[GUARD : GUARD + n]).view(self.view.shape)

    def kept_poison(self, expected: torch.Tensor, atol: float, rtol: float) -> tuple[int, int]:
        """(wrong elements that still hold this call's poison bit for bit and are finite, wrong
        elements): `unwritten()` counted in chunks."""
        n, shape = self.view.numel(), self.view.shape
        kept, bad = self._zero(), self._zero()
        written = _bits(self.storage)[GUARD : GUARD + n].view(shape)
        poison = _bits(self.before)[GUARD : GUARD + n].view(shape)
        for o, e, s, b in _chunks(self.view, expected, written, poison):
            wrong = ~_close(o, e, atol, rtol)
            held = (s == b) & wrong
            if o.is_floating_point():
                held &= torch.isfinite(o)
            kept += held.sum()
            bad += wrong.sum()
        return int(kept), int(bad)

    def _zero(self) -> torch.Tensor:
        return torch.zeros((), dtype=torch.int64, device=self.storage.device)


@dataclass
class ArgumentSet:
    """One complete set of launch arguments at one shape, plus what the reference expects."""

    spec: TaskSpec
    dims: dict[str, int]
    device: str
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    outputs: dict[str, GuardedOutput] = field(default_factory=dict)
    scalars: dict[str, int | float] = field(default_factory=dict)
    expected: list[torch.Tensor] = field(default_factory=list)
    snapshots: dict[str, torch.Tensor] = field(default_factory=dict)
    seed: int = 0  # of the current inputs; with `calls`, it picks each call's poison
    calls: int = 0  # calls prepared since the inputs were filled
    previous: list[torch.Tensor] = field(default_factory=list)  # expected answer for the inputs before
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)  # per output, for `expected`
    # compute_expected may run the reference on other inputs for a first stale poison: off, the set holds
    # one answer fewer until a refresh makes `previous` the stale poison
    stale: bool = True

    @classmethod
    def build(cls, spec: TaskSpec, dims: dict[str, int], device: str, seed: int, *, stale: bool = True) -> ArgumentSet:
        self = cls(spec=spec, dims=dims, device=device, stale=stale)
        for t in spec.tensors:
            if t.kind == "scalar":
                continue
            shape = spec.tensor_shape(t, dims)
            if t.is_argument_tensor:
                self.inputs[t.name] = torch.empty(shape, dtype=DTYPES[t.dtype], device=device)
            else:
                numel = math.prod(shape)
                storage = torch.empty(numel + 2 * GUARD, dtype=DTYPES[t.dtype], device=device)
                view = storage[GUARD : GUARD + numel].view(shape)
                self.outputs[t.name] = GuardedOutput(storage, view, torch.empty_like(storage))
        self.fill(seed)
        return self

    def _fill_one(self, t: TensorSpec, tensor: torch.Tensor, gen: torch.Generator) -> None:
        """Draw `t`'s values as its distribution says (the task's default for inputs without one)."""
        dist = t.input or self.spec.input
        if t.input is None and tensor.dtype == torch.bool:
            dist = InputDistribution(distribution="bernoulli")
        elif t.input is None and not tensor.dtype.is_floating_point:  # the published format's integer rule
            dist = InputDistribution(distribution="randint")
        v = dist.resolve(self.dims)
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

    def _draw(self, seed: int, tensors: dict[str, torch.Tensor]) -> dict[str, int | float]:
        """Fill `tensors` (inputs and parameters) in place for `seed`; return the scalars' values. The
        task's generator, when it has one, gives whatever it returns; distributions give the rest."""
        gen = torch.Generator(device=self.device).manual_seed(seed)
        scalars: dict[str, int | float] = {}
        made = self._generated(seed) if _GENERATOR is not None else {}
        for t in self.spec.tensors:
            if t.name in made:
                value = made[t.name]
                if t.kind == "scalar":
                    scalars[t.name] = int(value) if t.dtype.startswith("int") else float(value)
                else:
                    tensors[t.name].copy_(value)
            elif t.kind == "scalar":
                if t.value is not None:
                    scalars[t.name] = self.spec.scalar_value(t, self.dims)
                else:  # a random scalar: one draw of its distribution
                    one = torch.empty((), dtype=DTYPES[t.dtype], device=self.device)
                    self._fill_one(t, one, gen)
                    scalars[t.name] = one.item()
            elif t.is_argument_tensor:
                self._fill_one(t, tensors[t.name], gen)
        return scalars

    def _generated(self, seed: int) -> dict:
        """The generator's values for `seed`, checked against the spec (TaskFault otherwise)."""
        assert _GENERATOR is not None
        try:
            made = _GENERATOR(dict(self.dims), seed, self.device)
        except Exception as exc:
            raise TaskFault(f"the input generator failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(made, dict):
            raise TaskFault(f"the input generator returned {type(made).__name__}, not a dict of name -> value")
        known = {t.name: t for t in self.spec.tensors if t.kind != "output"}
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
            want = self.spec.tensor_shape(t, self.dims)
            if not isinstance(value, torch.Tensor) or tuple(value.shape) != want:
                got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                raise TaskFault(f"the input generator gave {name!r} {got}; the task declares shape {want}")
            out[name] = value.to(self.device, DTYPES[t.dtype])
        return out

    def fill(self, seed: int) -> None:
        """Fresh input, parameter and scalar values in place (same pointers), for `seed`."""
        self.scalars = self._draw(seed, self.inputs)
        self.seed, self.calls = seed, 0
        # the answer for the old inputs is what a reused buffer would hold: the next stale poison
        # (a set without stale poison keeps no old answer: the smallest memory plan's saving)
        self.previous = (self.expected or self.previous) if self.stale else []
        self.expected = []

    def args(self) -> list:
        out: list = []
        for name in self.spec.launch_arguments:
            if name in self.inputs:
                out.append(self.inputs[name])
            elif name in self.outputs:
                out.append(self.outputs[name].view)
            else:
                out.append(self.scalars[name])
        return out

    def _answer(self, reference, inputs: dict[str, torch.Tensor], scalars: dict[str, int | float], *,
                clone_inputs: bool = True) -> list[torch.Tensor]:
        """The reference's outputs for these values, in the order of self.outputs (TaskFault if they do
        not match what the task declares). `clone_inputs` False: `inputs` are throwaway, the reference
        may have them as they are."""
        args: list = []
        given: list[torch.Tensor] = []  # every tensor the reference sees: a result may be one of them
        for name in self.spec.launch_arguments:
            if name in inputs:
                given.append(inputs[name].clone() if clone_inputs else inputs[name])
                args.append(given[-1])
            elif name in self.outputs:
                given.append(torch.empty_like(self.outputs[name].view))
                args.append(given[-1])
            else:
                args.append(scalars[name])
        result = reference(*args)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        order = self.spec.output_order()
        declared = ", ".join(f"{n} {tuple(self.outputs[n].view.shape)}" for n in order)
        got = ", ".join(
            str(tuple(r.shape)) if isinstance(r, torch.Tensor) else type(r).__name__ for r in results
        )
        if len(results) != len(order) or not all(isinstance(r, torch.Tensor) for r in results):
            raise TaskFault(f"the reference returned [{got}]; the task declares {len(order)} output tensor(s) in this order: {declared}")
        for i, (name, r) in enumerate(zip(order, results)):
            if tuple(r.shape) != tuple(self.outputs[name].view.shape):
                raise TaskFault(
                    f"the reference's result #{i + 1} has shape {tuple(r.shape)}, but output {name!r} is declared "
                    f"{tuple(self.outputs[name].view.shape)}; outputs are matched in reference.outputs order "
                    f"({declared}), the reference returned [{got}]"
                )
            if r.is_floating_point() and not bool(torch.isfinite(r).all()):
                raise TaskFault(f"the reference produced NaN/Inf in output {name!r}")
        by_name = dict(zip(order, results))
        # always a copy of our own: a reference may return a buffer it keeps and writes again on its next
        # call (a preallocated output, a memo), which would overwrite the answer kept here
        return [by_name[name].detach().clone() for name in self.outputs]

    def _other_answer(self, reference) -> list[torch.Tensor] | None:
        """The reference's answer for other inputs of the same shape and distribution."""
        others = {n: torch.empty_like(t) for n, t in self.inputs.items()}
        try:
            scalars = self._draw(self.seed + STALE_SEED_OFFSET, others)
            return self._answer(reference, others, scalars, clone_inputs=False)
        except Exception:  # noqa: BLE001 - only a poison: without it those segments stay random
            return None

    def _tolerance(self, name: str) -> tuple[float, float]:
        return self.tolerances.get(name) or self.spec.tolerance(name)

    def _scaled_tolerances(self) -> dict[str, tuple[float, float]]:
        """Each output's (atol, rtol) for the expected answer: atol capped by atolScale × the 90th
        percentile of |expected| where the task asks for it (sampled: quantile takes at most 16M values)."""
        out = {}
        for (name, _), exp in zip(self.outputs.items(), self.expected):
            atol, rtol = self.spec.tolerance(name)
            scale = self.spec.tensor(name).atol_scale
            if scale is not None and exp.numel() and exp.is_floating_point():
                flat = exp.detach().flatten()
                # sampled before abs and float: no full-size copies
                sample = flat[:: max(1, flat.numel() // 1_000_000)].abs().float()
                q90 = float(torch.quantile(sample, 0.9))
                if q90 > 0:
                    atol = min(atol, scale * q90)
            out[name] = (atol, rtol)
        return out

    def compute_expected(self, reference) -> None:
        self.expected = self._answer(reference, self.inputs, self.scalars)
        self.tolerances = self._scaled_tolerances()
        # the previous inputs' answer when there were any (timing refreshes), else a fresh one
        known: list[torch.Tensor] | None = self.previous or (self._other_answer(reference) if self.stale else None)
        other: list[torch.Tensor | None] = list(known) if known else [None] * len(self.expected)
        for (name, out), exp, old in zip(self.outputs.items(), self.expected, other):
            out.learn(exp, old, *self._tolerance(name))

    def loose_tolerances(self) -> list[str]:
        """Outputs whose tolerance would let an all-zeros result pass for these inputs (the expected
        answer not being all zeros): a check that cannot tell a kernel that did nothing."""
        problems = []
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            atol, rtol = self._tolerance(name)
            if not exp.numel():
                continue
            largest = _abs_max(exp)
            if largest == 0.0:
                continue
            if bool(_zeros_close_flag(out.view, exp, atol, rtol)):
                problems.append(
                    f"output {name!r}: atol {atol:g} lets an all-zeros result pass (largest |expected| "
                    f"{largest:.3g}); lower its atol (tensors[].atol) or give it an atolScale"
                )
        return problems

    def prepare_call(self) -> None:
        """Poison the outputs as (seed, call index) says and snapshot the inputs. Before the reference
        has run there is nothing to check a call against: plain NaN then, which the stream-order probe
        reads as unwritten."""
        rng = random.Random(f"poison:{self.seed}:{self.calls}")
        for out in self.outputs.values():
            out.poison(rng, plain=not self.expected, first=self.calls == 0)
        self.calls += 1
        # the buffers of the last call, overwritten: cloning anew would hold old and new at once
        snapshots = {}
        for n, t in self.inputs.items():
            snap = self.snapshots.get(n)
            if snap is None or snap.shape != t.shape or snap.dtype != t.dtype or snap.device != t.device:
                snapshots[n] = t.clone()
            else:
                snapshots[n] = snap.copy_(t)
        self.snapshots = snapshots

    def check(self, what: str, *, error: bool = True) -> float:
        """Raise CandidateFault if the last call was wrong; return the max abs error (0.0 when
        `error` is False: the timing loop checks every call and needs only the verdict)."""
        if not error and self._all_good():
            return 0.0
        for name, snap in self.snapshots.items():
            if not _equal(snap, self.inputs[name]):
                raise CandidateFault("incorrect", f"{what}: input {name!r} was modified by the candidate")
        worst = 0.0
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            atol, rtol = self._tolerance(name)
            if not out.guards_intact():
                raise CandidateFault("incorrect", f"{what}: wrote outside output {name!r} (out of bounds)")
            try:
                worst = max(worst, compare(out.view, exp, atol, rtol, f"{what}: output {name!r}"))
            except CandidateFault as fault:
                # Wrong elements that still hold this call's random or stale poison were never written.
                # NaN ones may have been (NaN in, NaN out: the message says so already); a few fp16
                # matches happen by chance, so only say it when most wrong elements match.
                n_kept, n_bad = out.kept_poison(exp, atol, rtol)
                if not n_kept or 2 * n_kept < n_bad:
                    raise
                raise CandidateFault(fault.status, f"{fault.reason}; {n_kept} of the {n_bad} wrong elements still "
                                     "hold this call's poison bit for bit (never written)") from None
        return worst

    def _all_good(self) -> bool:
        """Inputs untouched, guards intact and outputs close, reduced on the device: one sync."""
        # any False (a NaN input too) falls back to the exact, explaining comparison
        flags = [_equal_flag(snap, self.inputs[name]) for name, snap in self.snapshots.items()]
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            if out.view.shape != exp.shape:
                return False
            flags.append(out.guard_flag())
            flags.append(_close_flag(out.view, exp, *self._tolerance(name)))
        return bool(torch.stack(flags).all()) if flags else True


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for n in reversed(shape):
        idx.append(flat_index % n)
        flat_index //= n
    return tuple(reversed(idx))


def _chunks(*tensors: torch.Tensor) -> Iterator[tuple[torch.Tensor, ...]]:
    """Matching pieces of at most CHECK_CHUNK elements of the flattened tensors (broadcast first when
    their shapes differ). Contiguous tensors are sliced as they are; others are copied once."""
    if len({tuple(t.shape) for t in tensors}) > 1:
        tensors = tuple(torch.broadcast_tensors(*tensors))
    flats = [t.detach().reshape(-1) for t in tensors]
    step = CHECK_CHUNK
    for start in range(0, flats[0].numel(), step):
        yield tuple(f[start : start + step] for f in flats)


def _all_flag(flags: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """A device bool: every flag True (True for none)."""
    return torch.stack(flags).all() if flags else torch.ones((), dtype=torch.bool, device=device)


def _close(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Per element: |out - expected| <= atol + rtol * |expected|, NaN where NaN is expected, the same
    Inf where Inf is. Floats of 32 bits or fewer are compared in float32 (exact for their values);
    anything else in float64. Full size: the checks use it a chunk at a time."""
    wide = out.dtype.is_floating_point and out.dtype.itemsize <= 4 and expected.dtype.itemsize <= 4
    dtype = torch.float32 if wide else torch.float64
    o = out.detach().to(dtype)
    e = expected.detach().to(o.device, dtype)
    return torch.isclose(o, e, rtol=rtol, atol=atol, equal_nan=True)


def _close_flag(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """A device bool: `_close` everywhere. No host sync."""
    flags = [_close(o, e, atol, rtol).all() for o, e in _chunks(out, expected)]
    return _all_flag(flags, out.device)


def _count_not_close(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> int:
    """Elements where `_close` is False."""
    count = torch.zeros((), dtype=torch.int64, device=out.device)
    for o, e in _chunks(out, expected):
        count += (~_close(o, e, atol, rtol)).sum()
    return int(count)


def _zeros_close_flag(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """A device bool: an all-zeros `out` (its dtype and device) would be `_close` to `expected`."""
    flags = []
    for (e,) in _chunks(expected):
        zeros = torch.zeros(e.shape, dtype=out.dtype, device=out.device)
        flags.append(_close(zeros, e, atol, rtol).all())
    return _all_flag(flags, out.device)


def _equal_flag(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A device bool: `(a == b).all()` (NaN differs from itself). No host sync."""
    return _all_flag([(x == y).all() for x, y in _chunks(a, b)], a.device)


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """`torch.equal`, a chunk at a time."""
    if a.shape != b.shape:
        return torch.equal(a, b)
    return all(torch.equal(x, y) for x, y in _chunks(a, b))


def _abs_max(t: torch.Tensor) -> float:
    """max |t| as a float, without a full-size copy."""
    if t.dtype == torch.bool:
        return float(t.any())
    lo, hi = t.detach().aminmax()
    return float(max(abs(lo.item()), abs(hi.item())))


def compare(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, what: str) -> float:
    """Raise CandidateFault naming the first bad element; return the max abs error. Elements are
    compared in float64, a chunk at a time."""
    n_nonfinite = n_bad = 0
    first_nonfinite: tuple[int, str] | None = None  # flat index, NaN or Inf
    first_bad: tuple[int, float, float] | None = None  # flat index, got, expected
    max_abs = 0.0
    start = 0
    for oc, ec in _chunks(out, expected):
        o = oc.to(torch.float64)
        e = ec.to(o.device, torch.float64)
        finite_expected = torch.isfinite(e)
        nonfinite = ~torch.isfinite(o) & finite_expected
        mismatched_special = ~finite_expected & ~((o == e) | (torch.isnan(o) & torch.isnan(e)))
        diff = (o - e).abs_().masked_fill_(~finite_expected, 0.0)
        bad = (diff > e.abs().nan_to_num_(0.0).mul_(rtol).add_(atol)) | mismatched_special
        # one sync per chunk; counts of at most CHECK_CHUNK are exact in float64
        nonfinite_count, bad_count, chunk_max = torch.stack(
            [nonfinite.sum().double(), bad.sum().double(), diff.max()]).tolist()
        n_nonfinite += int(nonfinite_count)
        n_bad += int(bad_count)
        max_abs = max(max_abs, chunk_max)
        if nonfinite_count and first_nonfinite is None:
            i = int(nonfinite.nonzero()[0])
            first_nonfinite = (start + i, "NaN" if bool(torch.isnan(o[i])) else "Inf")
        if bad_count and first_bad is None:
            i = int(bad.nonzero()[0])
            first_bad = (start + i, float(o[i]), float(e[i]))
        start += o.numel()
    if first_nonfinite is not None:
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_nonfinite} of {out.numel()} elements are NaN/Inf (unwritten or invalid), "
            f"first at {_index(first_nonfinite[0], tuple(out.shape))} ({first_nonfinite[1]})",
        )
    if first_bad is not None:
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_bad} of {out.numel()} elements differ beyond atol={atol:g} rtol={rtol:g}; "
            f"max abs error {max_abs:.3g}, first at {_index(first_bad[0], tuple(out.shape))}: "
            f"got {first_bad[1]:.6g}, expected {first_bad[2]:.6g}",
        )
    return max_abs
