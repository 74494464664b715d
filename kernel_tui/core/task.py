"""The task spec: what is optimized, how it is checked and timed.

Loads the published schemaVersion-2 task.json unchanged and extends it, backwards compatibly, with
extra correctness shapes (ragged and interpreter-sized ones), dimension expressions for scalars and the
cost model, a baseline file and timing/gate settings.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kernel_tui.core import gate
from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate, names_in

Dtype = Literal["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64"]
Number = int | float
NumberOrExpr = int | float | str
Device = Literal["cpu", "cuda"]
# A CPU-interpreter correctness run should reach well past a kernel's first blocks: a kernel wrong only
# past some element passes wherever every interpreter shape ends before it.
MIN_INTERPRETER_OUTPUT_ELEMENTS = 65_536


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class InputDistribution(_Model):
    distribution: Literal["normal", "uniform"] = "normal"
    mean: float = 0.0
    standard_deviation: float = 1.0
    low: float = -1.0
    high: float = 1.0


class TensorSpec(_Model):
    name: str
    kind: Literal["input", "output", "scalar"]
    dtype: Dtype
    # "input" is the published spelling of [rows, cols]; otherwise dimension names or literals.
    shape: Literal["input"] | list[str | int] | None = None
    value: NumberOrExpr | None = None
    input: InputDistribution | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> TensorSpec:
        if self.kind == "scalar" and self.value is None:
            raise ValueError(f"scalar {self.name!r} needs a value")
        if self.kind != "scalar" and self.shape is None:
            raise ValueError(f"tensor {self.name!r} needs a shape")
        return self

    def dims_of_shape(self) -> list[str | int]:
        if self.shape == "input":
            return ["rows", "cols"]
        return list(self.shape or [])


class ReferenceSpec(_Model):
    filename: str = "reference.py"
    entrypoint: str = "reference"
    self_check_passed: bool | None = None


class BaselineSpec(_Model):
    filename: str = "baseline.py"


class ShapeCase(_Model):
    name: str
    dims: dict[str, int]
    # Small enough for Triton's CPU interpreter.
    interpreter: bool = False


class CorrectnessSpec(_Model):
    seeds: list[int] = Field(default_factory=lambda: [17, 29], min_length=1)
    atol: float = Field(1e-3, ge=0)
    rtol: float = Field(1e-3, ge=0)
    shapes: list[ShapeCase] = Field(default_factory=list)


class BenchmarkSpec(_Model):
    warmup: int = Field(10, ge=0)
    samples: int = Field(25, ge=1)
    inner_repeats: int = Field(5, ge=1)
    timeout_seconds: float = Field(180, gt=0)
    # How kernel time is isolated from host launch cost on a GPU; "auto" measures and picks.
    timing: Literal["auto", "graph", "flush"] = "auto"
    interpreter_shape: str | None = None


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


class TaskSpec(_Model):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    schema_version: Literal[2] = 2
    name: str
    description: str = ""
    language: Literal["triton"] = "triton"
    entrypoint: str = "launch"
    shape: dict[str, int]
    input: InputDistribution = Field(default_factory=InputDistribution)
    tensors: list[TensorSpec] = Field(min_length=1)
    launch_arguments: list[str] = Field(min_length=1)
    reference: ReferenceSpec = Field(default_factory=ReferenceSpec)
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    correctness: CorrectnessSpec = Field(default_factory=CorrectnessSpec)
    benchmark: BenchmarkSpec = Field(default_factory=BenchmarkSpec)
    optimization: OptimizationSpec = Field(default_factory=OptimizationSpec)
    gate: GateSpec = Field(default_factory=GateSpec)
    cost_model: CostModel = Field(default_factory=CostModel)

    @field_validator("shape")
    @classmethod
    def _positive_dims(cls, v: dict[str, int]) -> dict[str, int]:
        bad = [k for k, n in v.items() if n <= 0]
        if bad:
            raise ValueError(f"dimensions must be positive: {bad}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        names = [t.name for t in self.tensors]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"duplicate tensor names: {sorted(dupes)}")
        missing = [a for a in self.launch_arguments if a not in names]
        if missing:
            raise ValueError(f"launchArguments name unknown tensors: {missing}")
        if not any(t.kind == "output" for t in self.tensors):
            raise ValueError("at least one tensor must be an output")
        case_names = [c.name for c in self.correctness.shapes]
        if "main" in case_names or len(set(case_names)) != len(case_names):
            raise ValueError("correctness shape names must be unique and not 'main'")
        if self.benchmark.interpreter_shape and self.benchmark.interpreter_shape not in case_names:
            raise ValueError(
                f"benchmark.interpreterShape {self.benchmark.interpreter_shape!r} is not a correctness shape"
            )
        for case in self.all_shapes():
            self._check_dims(case)
        return self

    def _check_dims(self, case: ShapeCase) -> None:
        for t in self.tensors:
            used = names_in(t.value) if t.kind == "scalar" and t.value is not None else {
                d for d in t.dims_of_shape() if isinstance(d, str)
            }
            unknown = used - set(case.dims)
            if unknown:
                raise ValueError(
                    f"shape {case.name!r} lacks dimension(s) {sorted(unknown)} used by tensor {t.name!r}"
                )
            if t.kind == "scalar":
                try:
                    evaluate(t.value, case.dims)  # type: ignore[arg-type]
                except ExpressionError as exc:
                    raise ValueError(f"tensor {t.name!r}: {exc}") from exc
        for field in ("flops", "bytes"):
            try:
                evaluate(getattr(self.cost_model, field), case.dims)
            except ExpressionError as exc:
                raise ValueError(f"costModel.{field}: {exc}") from exc

    # --- derived views -------------------------------------------------------------------------

    @property
    def main_shape(self) -> ShapeCase:
        return ShapeCase(name="main", dims=self.shape)

    def all_shapes(self) -> list[ShapeCase]:
        return [self.main_shape, *self.correctness.shapes]

    def correctness_shapes(self, device: Device) -> list[ShapeCase]:
        """GPU: the benchmark shape and every extra shape; CPU interpreter: the small ones only."""
        if device == "cuda":
            return self.all_shapes()
        small = [c for c in self.correctness.shapes if c.interpreter]
        return small or [self.main_shape]

    def timing_shape(self, device: Device) -> ShapeCase:
        if device == "cuda":
            return self.main_shape
        wanted = self.benchmark.interpreter_shape
        for case in self.correctness.shapes:
            if case.name == wanted or (wanted is None and case.interpreter):
                return case
        return self.main_shape

    def output_elements(self, dims: dict[str, int]) -> int:
        return sum(math.prod(self.tensor_shape(t, dims)) for t in self.tensors if t.kind == "output")

    def coverage_warnings(self) -> list[str]:
        """Weak spots of the task's own checks (one line each), for check-task to print."""
        cpu = self.correctness_shapes("cpu")
        largest = max(cpu, key=lambda c: self.output_elements(c.dims))
        n = self.output_elements(largest.dims)
        if n >= MIN_INTERPRETER_OUTPUT_ELEMENTS:
            return []
        return [
            f"every CPU-interpreter correctness shape has fewer than {MIN_INTERPRETER_OUTPUT_ELEMENTS:,} output "
            f"elements (largest: {largest.name} {tuple(largest.dims.values())}, {n:,}); on the CPU a kernel wrong "
            "only past that point is accepted. Add a larger shape marked \"interpreter\": true"
        ]

    def tensor(self, name: str) -> TensorSpec:
        return next(t for t in self.tensors if t.name == name)

    def tensor_shape(self, tensor: TensorSpec, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else dims[d] for d in tensor.dims_of_shape())

    def scalar_value(self, tensor: TensorSpec, dims: dict[str, int]) -> Number:
        value = evaluate(tensor.value, dims)  # type: ignore[arg-type]
        return int(value) if tensor.dtype.startswith("int") else float(value)

    def benchmark_bytes(self) -> float:
        """Cost-model bytes of one call at the benchmark shape: the numerator of % of roofline."""
        return self.cost_at(self.shape)[1]

    def cost_at(self, dims: dict[str, int]) -> tuple[float, float]:
        """(flops, bytes) of one call at `dims`."""
        return (
            float(evaluate(self.cost_model.flops, dims)),
            float(evaluate(self.cost_model.bytes, dims)),
        )


@dataclass(frozen=True)
class Task:
    """A task directory: the spec plus the reference and baseline sources."""

    root: Path
    spec: TaskSpec
    reference_source: str
    baseline_source: str

    @property
    def name(self) -> str:
        return self.spec.name


def _describe_validation(path: Path, exc: ValidationError) -> str:
    """One line naming the file and every field at fault, so one edit can fix them all."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        problems.append(f"field {where}: {err['msg'].removeprefix('Value error, ')}")
    return f"{path}: {' | '.join(problems)}"


def load_spec(path: Path) -> TaskSpec:
    """Load and validate a task.json; raises TaskError with one line naming file and field."""
    path = Path(path)
    if path.is_dir():
        path = path / "task.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: no such task file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: a task file holds one JSON object")
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskError(_describe_validation(path, exc)) from None


def _read_source(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: {what} file is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read {what}: {exc}") from None


def load_task(directory: Path) -> Task:
    directory = Path(directory)
    if not directory.exists():
        raise TaskError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise TaskError(f"{directory}: a task is a directory holding task.json")
    spec = load_spec(directory / "task.json")
    return Task(
        root=directory,
        spec=spec,
        reference_source=_read_source(directory / spec.reference.filename, "reference"),
        baseline_source=_read_source(directory / spec.baseline.filename, "baseline"),
    )
