"""The sections of a task file, one model each: tensors and how their values are drawn, the reference,
baseline and input generator, correctness and benchmark shapes, optimization and gate settings, the cost
model and an imported task's origin. `spec.TaskSpec` holds them and checks them against each other."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kernel_tui.core import gate
from kernel_tui.core.expressions import ExpressionError, evaluate, names_in

Dtype = Literal["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "bool"]
Number = int | float
NumberOrExpr = int | float | str
Device = Literal["cpu", "cuda"]
Precision = Literal["fp32", "fp16", "bf16"]
INT_DEFAULT_RANGE = (-100, 100)  # integers with no distribution of their own (the published format's rule)


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class InputDistribution(_Model):
    """How a tensor's values are drawn; every number may be an expression over the dimensions."""

    distribution: Literal["normal", "uniform", "randint", "bernoulli", "constant"] = "normal"
    mean: NumberOrExpr = 0.0
    standard_deviation: NumberOrExpr = 1.0
    # uniform: [low, high), default [-1, 1); randint: integers in [low, high), default [-100, 100)
    low: NumberOrExpr | None = None
    high: NumberOrExpr | None = None
    p: NumberOrExpr = 0.5  # bernoulli: probability of True
    value: NumberOrExpr = 0  # constant

    def expressions(self) -> list[NumberOrExpr]:
        return [v for v in (self.mean, self.standard_deviation, self.low, self.high, self.p, self.value) if v is not None]

    def resolve(self, dims: dict[str, int]) -> dict[str, float]:
        """The distribution's numbers at `dims`; raises ExpressionError."""
        ints = self.distribution == "randint"
        low = self.low if self.low is not None else (INT_DEFAULT_RANGE[0] if ints else -1.0)
        high = self.high if self.high is not None else (INT_DEFAULT_RANGE[1] if ints else 1.0)
        return {
            "mean": float(evaluate(self.mean, dims)),
            "std": float(evaluate(self.standard_deviation, dims)),
            "low": float(evaluate(low, dims)),
            "high": float(evaluate(high, dims)),
            "p": float(evaluate(self.p, dims)),
            "value": float(evaluate(self.value, dims)),
        }

    def problems(self, dims: dict[str, int]) -> list[str]:
        """What is wrong with these numbers at `dims` (empty: they can be drawn)."""
        try:
            v = self.resolve(dims)
        except ExpressionError as exc:
            return [str(exc)]
        if self.distribution == "normal" and v["std"] < 0:
            return [f"standardDeviation is negative ({v['std']:g})"]
        if self.distribution in ("uniform", "randint") and not v["low"] < v["high"]:
            return [f"low ({v['low']:g}) must be below high ({v['high']:g})"]
        if self.distribution == "randint" and math.ceil(v["low"]) >= math.ceil(v["high"]):
            return [f"no integer in [{v['low']:g}, {v['high']:g})"]
        if self.distribution == "bernoulli" and not 0 <= v["p"] <= 1:
            return [f"p ({v['p']:g}) is not a probability"]
        return []


_FLOAT_DISTRIBUTIONS = {"normal", "uniform", "constant"}
_ALLOWED_DISTRIBUTIONS = {
    "float": _FLOAT_DISTRIBUTIONS,
    "int": {"randint", "uniform", "normal", "constant"},  # uniform/normal: rounded toward -inf
    "bool": {"bernoulli", "constant"},
}


def dtype_family(dtype: str) -> str:
    return "bool" if dtype == "bool" else "int" if dtype.startswith("int") else "float"


class TensorSpec(_Model):
    name: str
    kind: Literal["input", "output", "scalar", "parameter"]
    dtype: Dtype
    # "input" is the published spelling of [rows, cols]; otherwise dimension names, literals or
    # arithmetic expressions over the dimensions ("(H + 2 * 1 - 3) // 1 + 1").
    shape: Literal["input"] | list[str | int] | None = None
    value: NumberOrExpr | None = None
    input: InputDistribution | None = None
    # outputs only: this output's tolerance instead of the task's
    atol: float | None = Field(None, ge=0)
    rtol: float | None = Field(None, ge=0)
    # outputs only: at each shape and seed, atol is at most this share of the 90th percentile of
    # |expected|, so that a tolerance fit for one size cannot let an all-zeros output pass at another
    atol_scale: float | None = Field(None, gt=0, lt=1)

    @model_validator(mode="after")
    def _kind_fields(self) -> TensorSpec:
        problems = []
        if self.kind == "scalar":
            if self.value is None and self.input is None:
                problems.append(f"scalar {self.name!r} needs a value or an input distribution")
            if self.value is not None and self.input is not None:
                problems.append(f"scalar {self.name!r} has both a value and an input distribution")
            if self.dtype == "bool":
                problems.append(f"scalar {self.name!r} cannot be bool")
        elif self.shape is None:
            problems.append(f"tensor {self.name!r} needs a shape")
        if self.kind != "scalar" and self.value is not None:
            problems.append(f"{self.kind} {self.name!r}: only scalars take a value (tensors take an input distribution)")
        if self.kind == "output" and self.input is not None:
            problems.append(f"output {self.name!r} takes no input distribution")
        if self.kind != "output" and (self.atol is not None or self.rtol is not None or self.atol_scale is not None):
            problems.append(f"{self.kind} {self.name!r}: atol, rtol and atolScale belong to outputs")
        if self.input is not None:
            allowed = _ALLOWED_DISTRIBUTIONS[dtype_family(self.dtype)]
            if self.input.distribution not in allowed:
                problems.append(
                    f"{self.name!r} ({self.dtype}) cannot take distribution {self.input.distribution!r} "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def is_argument_tensor(self) -> bool:
        """An input or a parameter: filled before a call, read only during it."""
        return self.kind in ("input", "parameter")

    def dims_of_shape(self) -> list[str | int]:
        if self.shape == "input":
            return ["rows", "cols"]
        return list(self.shape or [])

    def names_used(self) -> set[str]:
        """Dimension names this tensor's shape, value or distribution refers to."""
        used: set[str] = set()
        for entry in [*self.dims_of_shape(), *([self.value] if self.value is not None else [])]:
            used |= names_in(entry)
        for expr in self.input.expressions() if self.input else []:
            used |= names_in(expr)
        return used


class ReferenceSpec(_Model):
    filename: str = "reference.py"
    entrypoint: str = "reference"
    self_check_passed: bool | None = None
    # The output tensors in the order the reference returns them (default: their order in `tensors`).
    outputs: list[str] | None = None


# How a start written from torch.compile's kernels is labelled (the screen, the reports and the suite read it)
INDUCTOR_START = "torch.compile's kernels"
INDUCTOR_LABEL = INDUCTOR_START + " (Inductor, torch {version})"


class BaselineSpec(_Model):
    filename: str = "baseline.py"
    # "pytorch": an eager starting point, exempt from the policy; every candidate stays Triton.
    language: Literal["triton", "pytorch"] = "triton"
    # what the start is, for people: the screen and the report name it ("torch.compile's kernels (Inductor,
    # torch 2.11)" for a start made by `kernel-tui start-from-inductor`)
    label: str = ""


class GeneratorSpec(_Model):
    """A Python file that makes structured inputs (symmetric, triangular, ...), run in the worker:
    `make_inputs(dims, seed, device) -> {name: tensor or number}` for any inputs, parameters or scalars."""

    filename: str = "inputs.py"
    entrypoint: str = "make_inputs"


def positive_dims(v: dict[str, int]) -> dict[str, int]:
    bad = [k for k, n in v.items() if n <= 0]
    if bad:
        raise ValueError(f"dimensions must be positive: {bad}")
    return v


class ShapeCase(_Model):
    name: str
    dims: dict[str, int]
    # Small enough for Triton's CPU interpreter.
    interpreter: bool = False

    _positive = field_validator("dims")(lambda cls, v: positive_dims(v))


class CorrectnessSpec(_Model):
    seeds: list[int] = Field(default_factory=lambda: [17, 29], min_length=1)
    atol: float = Field(1e-3, ge=0)
    rtol: float = Field(1e-3, ge=0)
    shapes: list[ShapeCase] = Field(default_factory=list)


class BenchmarkShape(_Model):
    shape: str  # "main" or a correctness shape's name
    weight: float = Field(1.0, gt=0)


class BenchmarkSpec(_Model):
    warmup: int = Field(10, ge=0)
    samples: int = Field(25, ge=1)
    inner_repeats: int = Field(5, ge=1)
    timeout_seconds: float = Field(180, gt=0)
    # How kernel time is isolated from host launch cost on a GPU; "auto" measures and picks.
    timing: Literal["auto", "graph", "flush"] = "auto"
    interpreter_shape: str | None = None
    # The shapes timed on a GPU, with their weights in the gate's geometric mean (default: main alone).
    shapes: list[BenchmarkShape] = Field(default_factory=list)


class OptimizationSpec(_Model):
    max_rounds: int = Field(25, ge=1)
    patience: int = Field(6, ge=1)
    min_improvement_fraction: float = Field(0.01, ge=0, lt=1)
    max_source_chars: int = Field(50_000, ge=100)


class GateSpec(_Model):
    """Optional overrides of the accept gate's sequential design.

    Checked here, at load, by the gate itself (GatePolicy's bounds, its defaults for what is not set):
    what loads builds a gate, and a mistake is reported once, every problem in one line.
    """

    alpha: float | None = None
    min_blocks: int | None = None
    max_blocks: int | None = None
    confirm_blocks: int | None = None
    regression_tolerance: float | None = None

    def overrides(self) -> dict[str, float | int]:
        return {k: v for k, v in self.model_dump().items() if v is not None}

    @model_validator(mode="after")
    def _gate_accepts(self) -> GateSpec:
        problems = gate.policy_problems(self.overrides(), spell=to_camel)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class CostModel(_Model):
    flops: NumberOrExpr = 0
    bytes: NumberOrExpr = 0
    label: str = ""


class Origin(_Model):
    """Where an imported task came from; recorded for people, not read by the engine."""

    kind: str
    path: str = ""
    sha256: str = ""
    problem: str = ""
    level: int | None = None
    precision: Precision | None = None
    notes: list[str] = Field(default_factory=list)
