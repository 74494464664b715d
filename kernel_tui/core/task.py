"""The task spec: what is optimized, how it is checked and timed.

Loads the published schemaVersion-2 task.json unchanged and extends it, backwards compatibly, with
extra correctness shapes (ragged and interpreter-sized ones), dimension expressions for scalars and the
cost model, a baseline file and timing/gate settings.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kernel_tui.core import gate
from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate, names_in

Dtype = Literal["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "bool"]
Number = int | float
NumberOrExpr = int | float | str
Device = Literal["cpu", "cuda"]
Precision = Literal["fp32", "fp16", "bf16"]
# Default atol and rtol when a task declares its precision and not its tolerances.
PRECISION_TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
# A CPU-interpreter correctness run should reach well past a kernel's first blocks: a kernel wrong only
# past some element passes wherever every interpreter shape ends before it.
MIN_INTERPRETER_OUTPUT_ELEMENTS = 65_536
# The interpreter runs each program instance in Python: past this many elements in one call's tensors a
# run takes hours, and real benchmark sizes (GBs) would exhaust the machine's memory first.
MAX_INTERPRETER_ELEMENTS = 4_194_304
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


class BaselineSpec(_Model):
    filename: str = "baseline.py"
    # "pytorch": an eager starting point, exempt from the policy; every candidate stays Triton.
    language: Literal["triton", "pytorch"] = "triton"


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
    precision: Precision | None = None
    reference: ReferenceSpec = Field(default_factory=ReferenceSpec)
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    generator: GeneratorSpec | None = None
    correctness: CorrectnessSpec = Field(default_factory=CorrectnessSpec)
    benchmark: BenchmarkSpec = Field(default_factory=BenchmarkSpec)
    optimization: OptimizationSpec = Field(default_factory=OptimizationSpec)
    gate: GateSpec = Field(default_factory=GateSpec)
    cost_model: CostModel = Field(default_factory=CostModel)
    origin: Origin | None = None

    _positive = field_validator("shape")(lambda cls, v: positive_dims(v))

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def problems(self) -> list[str]:
        """Every inconsistency across fields, one phrase each."""
        problems: list[str] = []
        names = [t.name for t in self.tensors]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            problems.append(f"duplicate tensor names: {sorted(dupes)}")
        missing = [a for a in self.launch_arguments if a not in names]
        if missing:
            problems.append(f"launchArguments name unknown tensors: {missing}{_suggest(missing, names)}")
        unpassed = [t.name for t in self.tensors if t.kind != "scalar" and t.name not in self.launch_arguments]
        if unpassed:
            problems.append(f"tensors {unpassed} are not in launchArguments")
        outputs = [t.name for t in self.tensors if t.kind == "output"]
        if not outputs:
            problems.append("at least one tensor must be an output")
        declared = self.reference.outputs
        if declared is not None and sorted(declared) != sorted(outputs):
            problems.append(
                f"reference.outputs {declared} must list each output tensor once (the outputs are {outputs})"
            )
        case_names = [c.name for c in self.correctness.shapes]
        if "main" in case_names or len(set(case_names)) != len(case_names):
            problems.append("correctness shape names must be unique and not 'main'")
        known = ["main", *case_names]
        if self.benchmark.interpreter_shape and self.benchmark.interpreter_shape not in case_names:
            problems.append(
                f"benchmark.interpreterShape {self.benchmark.interpreter_shape!r} is not a correctness shape"
                f"{_suggest([self.benchmark.interpreter_shape], case_names)}"
            )
        timed = [b.shape for b in self.benchmark.shapes]
        unknown = [n for n in timed if n not in known]
        if unknown:
            problems.append(f"benchmark.shapes name unknown shapes {unknown} (known: {known})")
        if len(set(timed)) != len(timed):
            problems.append("benchmark.shapes names a shape twice")
        for case in self.all_shapes():
            problems += self._dims_problems(case)
        return problems

    def _dims_problems(self, case: ShapeCase) -> list[str]:
        problems = []
        where = f"shape {case.name!r}"
        for t in self.tensors:
            unknown = t.names_used() - set(case.dims)
            if unknown:
                problems.append(
                    f"{where} lacks dimension(s) {sorted(unknown)} used by tensor {t.name!r} "
                    f"(its dimensions: {sorted(case.dims)})"
                )
                continue
            try:
                if t.kind == "scalar" and t.value is not None:
                    evaluate(t.value, case.dims)
                elif t.kind != "scalar":
                    self.tensor_shape(t, case.dims)
            except ExpressionError as exc:
                problems.append(f"{where}, tensor {t.name!r}: {exc}")
            if t.input is not None:
                problems += [f"{where}, tensor {t.name!r}: {p}" for p in t.input.problems(case.dims)]
        problems += [f"{where}, input: {p}" for p in self.input.problems(case.dims)]
        for field in ("flops", "bytes"):
            try:
                evaluate(getattr(self.cost_model, field), case.dims)
            except ExpressionError as exc:
                problems.append(f"costModel.{field}: {exc}")
        timed_on_cpu = case.name == self.benchmark.interpreter_shape
        if (case.interpreter or timed_on_cpu) and not problems:
            n = self.call_elements(case.dims)
            if n > MAX_INTERPRETER_ELEMENTS:
                problems.append(
                    f"{where} is {'marked interpreter' if case.interpreter else 'benchmark.interpreterShape'} but its "
                    f"tensors hold {n:,} elements per call "
                    f"(the CPU interpreter's limit is {MAX_INTERPRETER_ELEMENTS:,})"
                )
        return problems

    # --- derived views -------------------------------------------------------------------------

    @property
    def main_shape(self) -> ShapeCase:
        return ShapeCase(name="main", dims=self.shape)

    def all_shapes(self) -> list[ShapeCase]:
        return [self.main_shape, *self.correctness.shapes]

    def shape_named(self, name: str) -> ShapeCase:
        return next(c for c in self.all_shapes() if c.name == name)

    def correctness_shapes(self, device: Device) -> list[ShapeCase]:
        """GPU: the benchmark shape and every extra shape; CPU interpreter: the small ones only, and
        never a shape past MAX_INTERPRETER_ELEMENTS (TaskError when there is none)."""
        if device == "cuda":
            return self.all_shapes()
        small = [c for c in self.correctness.shapes if c.interpreter]
        if small:
            return small
        n = self.call_elements(self.shape)
        if n > MAX_INTERPRETER_ELEMENTS:
            raise TaskError(
                f"task {self.name!r}: no correctness shape is marked \"interpreter\": true and the benchmark "
                f"shape holds {n:,} elements per call, too many for the CPU interpreter (limit "
                f"{MAX_INTERPRETER_ELEMENTS:,}); add a small shape marked interpreter, or evaluate on a GPU"
            )
        return [self.main_shape]

    def timing_shape(self, device: Device) -> ShapeCase:
        if device == "cuda":
            return self.main_shape
        wanted = self.benchmark.interpreter_shape
        for case in self.correctness.shapes:
            if case.name == wanted or (wanted is None and case.interpreter):
                return case
        return self.correctness_shapes("cpu")[0]

    def benchmark_shapes(self, device: Device) -> list[tuple[ShapeCase, float]]:
        """The shapes timed, with their weights: on a GPU those of benchmark.shapes (default main
        alone); on the CPU the one interpreter timing shape."""
        if device == "cpu" or not self.benchmark.shapes:
            return [(self.timing_shape(device), 1.0)]
        return [(self.shape_named(b.shape), b.weight) for b in self.benchmark.shapes]

    def call_elements(self, dims: dict[str, int]) -> int:
        """Elements of every tensor of one call at `dims`."""
        return sum(math.prod(self.tensor_shape(t, dims)) for t in self.tensors if t.kind != "scalar")

    def output_elements(self, dims: dict[str, int]) -> int:
        return sum(math.prod(self.tensor_shape(t, dims)) for t in self.tensors if t.kind == "output")

    def output_order(self) -> list[str]:
        """The output tensors in the order the reference returns them."""
        return list(self.reference.outputs or [t.name for t in self.tensors if t.kind == "output"])

    def tolerance(self, output: str) -> tuple[float, float]:
        """(atol, rtol) for one output: its own, else the task's, else its precision's default."""
        t = self.tensor(output)
        c = self.correctness
        default = PRECISION_TOLERANCE.get(self.precision or "", None)
        atol = c.atol if default is None or "atol" in c.model_fields_set else default
        rtol = c.rtol if default is None or "rtol" in c.model_fields_set else default
        return (t.atol if t.atol is not None else atol, t.rtol if t.rtol is not None else rtol)

    def coverage_warnings(self) -> list[str]:
        """Weak spots of the task's own checks (one line each), for check-task to print."""
        warnings = []
        outputs = [t.name for t in self.tensors if t.kind == "output"]
        if len(outputs) > 1 and self.reference.outputs is None:
            warnings.append(
                f"several outputs {outputs} are matched to the reference's results in the order of the "
                "tensors list; say it with reference.outputs"
            )
        try:
            cpu = self.correctness_shapes("cpu")
        except TaskError as exc:
            return [*warnings, str(exc)]
        largest = max(cpu, key=lambda c: self.output_elements(c.dims))
        n = self.output_elements(largest.dims)
        if n < MIN_INTERPRETER_OUTPUT_ELEMENTS:
            warnings.append(
                f"every CPU-interpreter correctness shape has fewer than {MIN_INTERPRETER_OUTPUT_ELEMENTS:,} output "
                f"elements (largest: {largest.name} {tuple(largest.dims.values())}, {n:,}); on the CPU a kernel wrong "
                "only past that point is accepted. Add a larger shape marked \"interpreter\": true"
            )
        return warnings

    def tensor(self, name: str) -> TensorSpec:
        return next(t for t in self.tensors if t.name == name)

    def tensor_shape(self, tensor: TensorSpec, dims: dict[str, int]) -> tuple[int, ...]:
        """The tensor's sizes at `dims`; raises ExpressionError for a size that is not a whole number ≥ 0."""
        sizes = []
        for entry in tensor.dims_of_shape():
            value = evaluate(entry, dims)
            if not math.isfinite(value) or value != int(value) or value < 0:
                raise ExpressionError(f"size {entry!r} of tensor {tensor.name!r} is {value:g}, not a whole number ≥ 0")
            sizes.append(int(value))
        return tuple(sizes)

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


def _suggest(wrong: list[str], valid: list[str]) -> str:
    """' (did you mean 'x'?)' for the first misspelling that is close to a valid name."""
    for w in wrong:
        close = difflib.get_close_matches(w, valid, n=1)
        if close:
            return f" (did you mean {close[0]!r}?)"
    return ""


@dataclass(frozen=True)
class Task:
    """A task directory: the spec plus the reference, baseline and (optional) input generator sources."""

    root: Path
    spec: TaskSpec
    reference_source: str
    baseline_source: str
    generator_source: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def baseline_is_pytorch(self) -> bool:
        return self.spec.baseline.language == "pytorch"


# pydantic's wording for the errors a person meets most, in the words of a task file (an unknown key
# is described apart, with the valid keys)
_PLAIN = {"missing": "is required and missing"}


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model that holds the key at `loc` (a pydantic error location) in a task file."""
    model: type[BaseModel] | None = TaskSpec
    for part in loc[:-1]:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        model = _inner_model(field.annotation)
    return model


def _inner_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _describe_error(err: Mapping[str, Any]) -> str:
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        keys = [f.alias or n for n, f in model.model_fields.items()] if model else []
        key = str(loc[-1])
        close = difflib.get_close_matches(key, keys, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"field {where}: unknown key ({hint}valid keys: {', '.join(keys)})" if keys else f"field {where}: unknown key"
    text = _PLAIN.get(kind) or err["msg"].removeprefix("Value error, ")
    return f"field {where}: {text}"


def _describe_validation(path: Path, exc: ValidationError) -> str:
    """One line naming the file and every field at fault, so one edit can fix them all."""
    problems = []
    for err in exc.errors():
        line = _describe_error(err)
        if line not in problems:  # a union reports a bad value once per member
            problems.append(line)
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
    generator = spec.generator
    return Task(
        root=directory,
        spec=spec,
        reference_source=_read_source(directory / spec.reference.filename, "reference"),
        baseline_source=_read_source(directory / spec.baseline.filename, "baseline"),
        generator_source=_read_source(directory / generator.filename, "input generator") if generator else None,
    )
