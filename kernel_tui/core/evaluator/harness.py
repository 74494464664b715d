"""Argument sets: the judge's private truth about one call, and each side's shared buffers for it.

A set holds, privately to the judge: the drawn inputs (the truth the sides are compared with), what the
reference expects, the answer for the inputs before (stale poison) and each output's poison. Each side (the
candidate, the incumbent) gets buffers of its own, in memory the judge shares with that side's worker alone:
a copy of the inputs and the outputs between guard bands. Nothing a side's process can see tells it the
answer, and nothing it writes reaches the other side or the truth.

Every output sits between guard bands and is poisoned before each call, so unwritten elements and
out-of-bounds writes both show. The poison is not one recognisable value: a kernel that skips work where its
output already looks written (not NaN, finite, a plausible answer) would pass against NaN alone, yet return
stale contents from a real buffer. So each call's poison is drawn from (seed, side, call index): a few
contiguous segments, each NaN (a sentinel for integers), random finite values around the expected answer's
range, or the expected answer for other inputs. The guard bands hold random values too (a NaN guard would tell
a kernel it is being evaluated); they are remembered and compared bit for bit. A side's inputs are compared
with the truth after each call, so a candidate that mutates its inputs fails.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

import torch

from kernel_tui.core.evaluator.checks import (
    CHECK_CHUNK,
    CandidateFault,
    _abs_max,
    _chunks,
    _close,
    _close_flag,
    _count_not_close,
    _equal,
    _equal_flag,
    _zeros_close_flag,
    compare,
)
from kernel_tui.core.evaluator.draw import DTYPES, TaskFault, draw, use_generator
from kernel_tui.core.task import TaskSpec

__all__ = [
    "CHECK_CHUNK", "DTYPES", "GUARD", "INT_SENTINEL", "LOCAL", "ArgumentSet", "CandidateFault", "DeviceAllocator",
    "GuardedOutput", "TaskFault", "compare", "load_module", "tensor_bytes", "use_generator",
]

GUARD = 256  # elements on each side of an output
INT_SENTINEL = -(2**31) + 7
LOCAL = "local"  # the one side of a set used in a single process (the profiler's worker, tests)


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


class Allocator(Protocol):
    """Where a side's buffers live: device memory of this process, or an arena shared with a worker."""

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor: ...


class DeviceAllocator:
    def __init__(self, device: str) -> None:
        self.device = device

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device=self.device)


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
    """One output: the judge's private poison (`before`, guards included) and each side's guarded storage."""

    before: torch.Tensor
    shape: tuple[int, ...]
    storages: dict[str, torch.Tensor] = field(default_factory=dict)
    low: float = -1.0  # garbage is drawn from [low, high]: around the expected answer's range
    high: float = 1.0
    stale: torch.Tensor | None = None  # flat expected answer for other inputs, when it differs enough
    gen: torch.Generator | None = None  # for the random values; reseeded every call
    taken: torch.Tensor | None = None  # a side's storage as it was when its timed window closed (GPU)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def view_of(self, side: str) -> torch.Tensor:
        return self.storages[side][GUARD : GUARD + self.numel].view(self.shape)

    @property
    def storage(self) -> torch.Tensor:
        """The storage of a set with one side."""
        (only,) = self.storages.values()
        return only

    @property
    def view(self) -> torch.Tensor:
        (side,) = self.storages
        return self.view_of(side)

    def blank(self) -> torch.Tensor:
        """A private tensor of the output's shape and dtype (for the reference to write)."""
        return torch.empty(self.shape, dtype=self.before.dtype, device=self.before.device)

    def learn(self, expected: torch.Tensor, other: torch.Tensor | None, atol: float, rtol: float) -> None:
        """Adapt the poison to this expected answer: garbage at its scale, `other` as stale answer."""
        flat = expected.detach().flatten()
        dtype = self.before.dtype
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

    def poison(self, side: str, rng: random.Random, *, plain: bool, first: bool) -> None:
        """Fill `side`'s storage for its next call. `plain`: NaN (or the sentinel) everywhere. Otherwise
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
            for kind, (lo, hi) in zip(kinds, _segments(self.numel, count, rng)):
                if kind == "nan":
                    b[GUARD + lo : GUARD + hi].fill_(_poison_value(b.dtype))
                elif kind == "stale" and self.stale is not None:
                    b[GUARD + lo : GUARD + hi].copy_(self.stale[lo:hi])
        self.storages[side].copy_(b)

    def snapshot_pair(self, side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(the judge's snapshot buffer, the side's storage): copied one to the other the moment a timed
        window closes, compared after, so that nothing written later goes unseen."""
        if self.taken is None:
            self.taken = torch.empty_like(self.before)
        return self.taken, self.storages[side]

    def changed_flag(self, side: str) -> torch.Tensor:
        """A device bool: the storage differs, bit for bit, from its snapshot."""
        assert self.taken is not None
        return ~_equal_flag(_bits(self.taken), _bits(self.storages[side]))

    def guard_flag(self, side: str) -> torch.Tensor:
        """A device bool: both guard bands still hold exactly what poison() wrote there."""
        s, b = _bits(self.storages[side]), _bits(self.before)
        return torch.stack([(s[:GUARD] == b[:GUARD]).all(), (s[-GUARD:] == b[-GUARD:]).all()]).all()

    def guards_intact(self, side: str) -> bool:
        return bool(self.guard_flag(side))

    def unwritten(self, side: str) -> torch.Tensor:
        """Elements of the output that still hold, bit for bit, the poison of this call."""
        n = self.numel
        return (_bits(self.storages[side])[GUARD : GUARD + n] == _bits(self.before)[GUARD : GUARD + n]).view(self.shape)

    def kept_poison(self, side: str, expected: torch.Tensor, atol: float, rtol: float) -> tuple[int, int]:
        """(wrong elements that still hold this call's poison bit for bit and are finite, wrong
        elements): `unwritten()` counted in chunks."""
        n, shape = self.numel, self.shape
        kept, bad = self._zero(), self._zero()
        written = _bits(self.storages[side])[GUARD : GUARD + n].view(shape)
        poison = _bits(self.before)[GUARD : GUARD + n].view(shape)
        for o, e, s, b in _chunks(self.view_of(side), expected, written, poison):
            wrong = ~_close(o, e, atol, rtol)
            held = (s == b) & wrong
            if o.is_floating_point():
                held &= torch.isfinite(o)
            kept += held.sum()
            bad += wrong.sum()
        return int(kept), int(bad)

    def _zero(self) -> torch.Tensor:
        return torch.zeros((), dtype=torch.int64, device=self.before.device)


@dataclass
class ArgumentSet:
    """One complete set of launch arguments at one shape: the truth, and each side's buffers."""

    spec: TaskSpec
    dims: dict[str, int]
    device: str
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)  # the truth: never a side's buffers
    side_inputs: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    outputs: dict[str, GuardedOutput] = field(default_factory=dict)
    scalars: dict[str, int | float] = field(default_factory=dict)
    expected: list[torch.Tensor] = field(default_factory=list)
    seed: int = 0  # of the current inputs; with the side's call count, it picks each call's poison
    calls: dict[str, int] = field(default_factory=dict)  # per side, calls prepared since the inputs were filled
    fresh: dict[str, bool] = field(default_factory=dict)  # per side: its inputs hold the current draw
    previous: list[torch.Tensor] = field(default_factory=list)  # expected answer for the inputs before
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)  # per output, for `expected`
    # compute_expected may run the reference on other inputs for a first stale poison: off, the set holds
    # one answer fewer until a refresh makes `previous` the stale poison
    stale: bool = True
    edge: bool = False  # inputs with edge values planted (draw.py)

    @classmethod
    def build(cls, spec: TaskSpec, dims: dict[str, int], device: str, seed: int, *, stale: bool = True,
              sides: dict[str, Allocator] | None = None, edge: bool = False) -> ArgumentSet:
        sides = sides or {LOCAL: DeviceAllocator(device)}
        self = cls(spec=spec, dims=dims, device=device, stale=stale, edge=edge)
        self.side_inputs = {side: {} for side in sides}
        for t in spec.tensors:
            if t.kind == "scalar":
                continue
            shape, dtype = spec.tensor_shape(t, dims), DTYPES[t.dtype]
            if t.is_argument_tensor:
                self.inputs[t.name] = torch.empty(shape, dtype=dtype, device=device)
                for side, alloc in sides.items():
                    self.side_inputs[side][t.name] = alloc.empty(shape, dtype)
            else:
                guarded = (math.prod(shape) + 2 * GUARD,)
                out = GuardedOutput(torch.empty(guarded, dtype=dtype, device=device), shape)
                out.storages = {side: alloc.empty(guarded, dtype) for side, alloc in sides.items()}
                self.outputs[t.name] = out
        self.fill(seed)
        return self

    @property
    def sides(self) -> list[str]:
        return list(self.side_inputs)

    def _side(self, side: str | None) -> str:
        if side is None:
            (side,) = self.side_inputs  # a set with one side may leave it unnamed
        return side

    def fill(self, seed: int) -> None:
        """Fresh input, parameter and scalar values in place (same pointers), for `seed`."""
        self.scalars = draw(self.spec, self.dims, self.device, seed, self.inputs, edge=self.edge)
        self.seed = seed
        self.calls = dict.fromkeys(self.side_inputs, 0)
        self.fresh = dict.fromkeys(self.side_inputs, False)
        # the answer for the old inputs is what a reused buffer would hold: the next stale poison
        # (a set without stale poison keeps no old answer: the smallest memory plan's saving)
        self.previous = (self.expected or self.previous) if self.stale else []
        self.expected = []

    def args(self, side: str | None = None) -> list:
        side = self._side(side)
        out: list = []
        for name in self.spec.launch_arguments:
            if name in self.inputs:
                out.append(self.side_inputs[side][name])
            elif name in self.outputs:
                out.append(self.outputs[name].view_of(side))
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
                given.append(self.outputs[name].blank())
                args.append(given[-1])
            else:
                args.append(scalars[name])
        result = reference(*args)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        order = self.spec.output_order()
        declared = ", ".join(f"{n} {tuple(self.outputs[n].shape)}" for n in order)
        got = ", ".join(
            str(tuple(r.shape)) if isinstance(r, torch.Tensor) else type(r).__name__ for r in results
        )
        if len(results) != len(order) or not all(isinstance(r, torch.Tensor) for r in results):
            raise TaskFault(f"the reference returned [{got}]; the task declares {len(order)} output tensor(s) in this order: {declared}")
        for i, (name, r) in enumerate(zip(order, results)):
            if tuple(r.shape) != tuple(self.outputs[name].shape):
                raise TaskFault(
                    f"the reference's result #{i + 1} has shape {tuple(r.shape)}, but output {name!r} is declared "
                    f"{tuple(self.outputs[name].shape)}; outputs are matched in reference.outputs order "
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
            scalars = draw(self.spec, self.dims, self.device, self.seed + STALE_SEED_OFFSET, others, edge=self.edge)
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
            if bool(_zeros_close_flag(out.before, exp, atol, rtol)):
                problems.append(
                    f"output {name!r}: atol {atol:g} lets an all-zeros result pass (largest |expected| "
                    f"{largest:.3g}); lower its atol (tensors[].atol) or give it an atolScale"
                )
        return problems

    def prepare_call(self, side: str | None = None, *, inputs: bool = True) -> None:
        """Poison `side`'s outputs as (seed, side, call index) says, and (with `inputs`) give it the current
        inputs if it has not had them yet. Before the reference has run there is nothing to check a call
        against: plain NaN then, which a probe reads as unwritten."""
        side = self._side(side)
        count = self.calls.get(side, 0)
        rng = random.Random(f"poison:{self.seed}:{side}:{count}")
        for out in self.outputs.values():
            out.poison(side, rng, plain=not self.expected, first=count == 0)
        self.calls[side] = count + 1
        if inputs and not self.fresh.get(side):
            self.give_inputs(side)

    def give_inputs(self, side: str) -> None:
        """Copy the current inputs into `side`'s buffers (on the device's current stream)."""
        for name, truth in self.inputs.items():
            self.side_inputs[side][name].copy_(truth)
        self.fresh[side] = True

    def check(self, what: str, side: str | None = None, *, error: bool = True) -> float:
        """Raise CandidateFault if `side`'s last call was wrong; return the max abs error (0.0 when
        `error` is False: the timing loop checks every call and needs only the verdict)."""
        side = self._side(side)
        if not error and bool(self.good_flag(side)):
            return 0.0
        for name, truth in self.inputs.items():
            if not _equal(truth, self.side_inputs[side][name]):
                raise CandidateFault("incorrect", f"{what}: input {name!r} was modified by the candidate")
        worst = 0.0
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            atol, rtol = self._tolerance(name)
            if not out.guards_intact(side):
                raise CandidateFault("incorrect", f"{what}: wrote outside output {name!r} (out of bounds)")
            try:
                worst = max(worst, compare(out.view_of(side), exp, atol, rtol, f"{what}: output {name!r}"))
            except CandidateFault as fault:
                # Wrong elements that still hold this call's random or stale poison were never written.
                # NaN ones may have been (NaN in, NaN out: the message says so already); a few fp16
                # matches happen by chance, so only say it when most wrong elements match.
                n_kept, n_bad = out.kept_poison(side, exp, atol, rtol)
                if not n_kept or 2 * n_kept < n_bad:
                    raise
                raise CandidateFault(fault.status, f"{fault.reason}; {n_kept} of the {n_bad} wrong elements still "
                                     "hold this call's poison bit for bit (never written)") from None
        return worst

    def good_flag(self, side: str | None = None) -> torch.Tensor:
        """A device bool, no host sync: inputs untouched, guards intact and outputs close. Enqueued right
        after a timed window, it reads the outputs as they were when the window closed."""
        side = self._side(side)
        # any False (a NaN input too) falls back to the exact, explaining comparison
        flags = [_equal_flag(truth, self.side_inputs[side][name]) for name, truth in self.inputs.items()]
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            flags.append(out.guard_flag(side))
            flags.append(_close_flag(out.view_of(side), exp, *self._tolerance(name)))
        return torch.stack(flags).all() if flags else torch.ones((), dtype=torch.bool, device=self.device)
