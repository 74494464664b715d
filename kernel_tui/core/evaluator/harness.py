"""Inputs, poisoned and guard-banded outputs, and output checks, inside the worker process.

Every output buffer sits between guard bands and is poisoned (NaN, or a sentinel for integers) before
each call, so unwritten elements and out-of-bounds writes both show. Inputs are snapshotted and
compared after each call so a candidate that mutates its inputs fails.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import torch

from kernel_tui.core.task import TaskSpec, TensorSpec

GUARD = 256  # elements on each side of an output
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
}


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


def _poison_value(dtype: torch.dtype) -> float | int:
    return float("nan") if dtype.is_floating_point else INT_SENTINEL


@dataclass
class GuardedOutput:
    storage: torch.Tensor
    view: torch.Tensor

    def poison(self) -> None:
        self.storage.fill_(_poison_value(self.storage.dtype))

    def guards_intact(self) -> bool:
        head, tail = self.storage[:GUARD], self.storage[-GUARD:]
        if self.storage.dtype.is_floating_point:
            return bool(torch.isnan(head).all() and torch.isnan(tail).all())
        return bool((head == INT_SENTINEL).all() and (tail == INT_SENTINEL).all())


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

    @classmethod
    def build(cls, spec: TaskSpec, dims: dict[str, int], device: str, seed: int) -> ArgumentSet:
        self = cls(spec=spec, dims=dims, device=device)
        for t in spec.tensors:
            if t.kind == "scalar":
                self.scalars[t.name] = spec.scalar_value(t, dims)
            elif t.kind == "input":
                shape = spec.tensor_shape(t, dims)
                self.inputs[t.name] = torch.empty(shape, dtype=DTYPES[t.dtype], device=device)
            else:
                shape = spec.tensor_shape(t, dims)
                numel = math.prod(shape)
                storage = torch.empty(numel + 2 * GUARD, dtype=DTYPES[t.dtype], device=device)
                self.outputs[t.name] = GuardedOutput(storage, storage[GUARD : GUARD + numel].view(shape))
        self.fill(seed)
        return self

    def _fill_one(self, t: TensorSpec, tensor: torch.Tensor, gen: torch.Generator) -> None:
        dist = t.input or self.spec.input
        if tensor.dtype.is_floating_point:
            if dist.distribution == "uniform":
                values = torch.rand(tensor.shape, generator=gen, dtype=torch.float32, device=tensor.device)
                values = values * (dist.high - dist.low) + dist.low
            else:
                values = torch.randn(tensor.shape, generator=gen, dtype=torch.float32, device=tensor.device)
                values = values * dist.standard_deviation + dist.mean
        else:
            values = torch.randint(-100, 100, tensor.shape, generator=gen, dtype=torch.int64, device=tensor.device)
        tensor.copy_(values.to(tensor.dtype))

    def fill(self, seed: int) -> None:
        """Fresh input values in place (same pointers), then the reference's answer for them."""
        gen = torch.Generator(device=self.device).manual_seed(seed)
        for t in self.spec.tensors:
            if t.kind == "input":
                self._fill_one(t, self.inputs[t.name], gen)
        self.expected = []

    def args(self) -> list:
        out = []
        for name in self.spec.launch_arguments:
            if name in self.inputs:
                out.append(self.inputs[name])
            elif name in self.outputs:
                out.append(self.outputs[name].view)
            else:
                out.append(self.scalars[name])
        return out

    def compute_expected(self, reference) -> None:
        args = []
        for name in self.spec.launch_arguments:
            if name in self.inputs:
                args.append(self.inputs[name].clone())
            elif name in self.outputs:
                args.append(torch.empty_like(self.outputs[name].view))
            else:
                args.append(self.scalars[name])
        result = reference(*args)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        names = list(self.outputs)
        if len(results) != len(names) or not all(isinstance(r, torch.Tensor) for r in results):
            raise ValueError(f"reference must return {len(names)} tensor(s) for outputs {names}")
        for name, r in zip(names, results):
            if tuple(r.shape) != tuple(self.outputs[name].view.shape):
                raise ValueError(f"reference returned shape {tuple(r.shape)} for output {name!r}")
        for name, r in zip(names, results):
            if r.is_floating_point() and not bool(torch.isfinite(r).all()):
                raise ValueError(f"reference produced NaN/Inf in output {name!r}")
        self.expected = [r.detach().clone() for r in results]

    def prepare_call(self) -> None:
        for out in self.outputs.values():
            out.poison()
        self.snapshots = {n: t.clone() for n, t in self.inputs.items()}

    def check(self, atol: float, rtol: float, what: str, *, error: bool = True) -> float:
        """Raise CandidateFault if the last call was wrong; return the max abs error (0.0 when
        `error` is False: the timing loop checks every call and needs only the verdict)."""
        if not error and self._all_good(atol, rtol):
            return 0.0
        for name, snap in self.snapshots.items():
            if not torch.equal(snap, self.inputs[name]):
                raise CandidateFault("incorrect", f"{what}: input {name!r} was modified by the candidate")
        worst = 0.0
        for (name, out), exp in zip(self.outputs.items(), self.expected):
            if not out.guards_intact():
                raise CandidateFault("incorrect", f"{what}: wrote outside output {name!r} (out of bounds)")
            worst = max(worst, compare(out.view, exp, atol, rtol, f"{what}: output {name!r}"))
        return worst

    def _all_good(self, atol: float, rtol: float) -> bool:
        """Inputs untouched, guards intact and outputs close, reduced on the device: one sync."""
        # any False (a NaN input too) falls back to the exact, explaining comparison
        flags = [(snap == self.inputs[name]).all() for name, snap in self.snapshots.items()]
        for out, exp in zip(self.outputs.values(), self.expected):
            if out.view.shape != exp.shape:
                return False
            head, tail = out.storage[:GUARD], out.storage[-GUARD:]
            if out.storage.dtype.is_floating_point:
                flags += [torch.isnan(head).all(), torch.isnan(tail).all()]
            else:
                flags += [(head == INT_SENTINEL).all(), (tail == INT_SENTINEL).all()]
            flags.append(_close_flag(out.view, exp, atol, rtol))
        return bool(torch.stack(flags).all()) if flags else True


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for n in reversed(shape):
        idx.append(flat_index % n)
        flat_index //= n
    return tuple(reversed(idx))


def _close_flag(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """A device bool: |out - expected| <= atol + rtol * |expected| everywhere, NaN where NaN is
    expected, the same Inf where Inf is. Floats of 32 bits or fewer are compared in float32 (exact
    for their values); anything else in float64."""
    wide = out.dtype.is_floating_point and out.dtype.itemsize <= 4 and expected.dtype.itemsize <= 4
    dtype = torch.float32 if wide else torch.float64
    o = out.detach().to(dtype)
    e = expected.detach().to(o.device, dtype)
    return torch.isclose(o, e, rtol=rtol, atol=atol, equal_nan=True).all()


def compare(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, what: str) -> float:
    """Raise CandidateFault naming the first bad element; return the max abs error."""
    o = out.detach().to(torch.float64)
    e = expected.detach().to(o.device, torch.float64)
    finite_expected = torch.isfinite(e)
    nonfinite = ~torch.isfinite(o) & finite_expected
    n_nonfinite = int(nonfinite.sum())
    if n_nonfinite:
        first = int(nonfinite.flatten().nonzero()[0])
        kind = "NaN" if bool(torch.isnan(o.flatten()[first])) else "Inf"
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_nonfinite} of {o.numel()} elements are NaN/Inf (unwritten or invalid), "
            f"first at {_index(first, tuple(o.shape))} ({kind})",
        )
    mismatched_special = ~finite_expected & ~((o == e) | (torch.isnan(o) & torch.isnan(e)))
    diff = torch.where(finite_expected, (o - e).abs(), torch.zeros_like(o))
    bad = (diff > atol + rtol * e.abs().nan_to_num(0.0)) | mismatched_special
    n_bad = int(bad.sum())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    if n_bad:
        first = int(bad.flatten().nonzero()[0])
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_bad} of {o.numel()} elements differ beyond atol={atol:g} rtol={rtol:g}; "
            f"max abs error {max_abs:.3g}, first at {_index(first, tuple(o.shape))}: "
            f"got {float(o.flatten()[first]):.6g}, expected {float(e.flatten()[first]):.6g}",
        )
    return max_abs
