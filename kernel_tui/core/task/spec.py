"""The whole task spec: its sections checked against each other (names, shapes, dimensions, the CPU
interpreter's limits), and the views every caller derives from it (shapes per device, tolerances, sizes,
cost at a shape)."""

from __future__ import annotations

import difflib
import math
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate
from kernel_tui.core.task.parts import (
    BaselineSpec,
    BenchmarkSpec,
    CorrectnessSpec,
    CostModel,
    Device,
    GateSpec,
    GeneratorSpec,
    InputDistribution,
    Number,
    OptimizationSpec,
    Origin,
    Precision,
    ReferenceSpec,
    ShapeCase,
    TensorSpec,
    _Model,
    positive_dims,
)

# Default atol and rtol when a task declares its precision and not its tolerances.
PRECISION_TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
# A CPU-interpreter correctness run should reach well past a kernel's first blocks: a kernel wrong only
# past some element passes wherever every interpreter shape ends before it.
MIN_INTERPRETER_OUTPUT_ELEMENTS = 65_536
# The interpreter runs each program instance in Python: past this many elements in one call's tensors a
# run takes hours, and real benchmark sizes (GBs) would exhaust the machine's memory first.
MAX_INTERPRETER_ELEMENTS = 4_194_304


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
