"""The task spec: what is optimized, how it is checked and timed.

Loads the published schemaVersion-2 task.json unchanged and extends it, backwards compatibly, with
extra correctness shapes (ragged and interpreter-sized ones), dimension expressions for scalars and the
cost model, a baseline file and timing/gate settings.

The package: `parts` (one model per section of a task file), `spec` (TaskSpec: the sections checked
against each other, and the views derived from them) and `load` (a task directory read, with one-line
errors). Callers import from here.
"""

from __future__ import annotations

from kernel_tui.core.task.load import Task, load_spec, load_task
from kernel_tui.core.task.parts import (
    INT_DEFAULT_RANGE,
    BaselineSpec,
    BenchmarkShape,
    BenchmarkSpec,
    CorrectnessSpec,
    CostModel,
    Device,
    Dtype,
    GateSpec,
    GeneratorSpec,
    InputDistribution,
    Number,
    NumberOrExpr,
    OptimizationSpec,
    Origin,
    Precision,
    ReferenceSpec,
    ShapeCase,
    TensorSpec,
    dtype_family,
    positive_dims,
)
from kernel_tui.core.task.parts import _Model as _Model  # the base of every section (a test walks them all)
from kernel_tui.core.task.spec import (
    MAX_INTERPRETER_ELEMENTS,
    MIN_INTERPRETER_OUTPUT_ELEMENTS,
    PRECISION_TOLERANCE,
    TaskSpec,
)

__all__ = [
    "INT_DEFAULT_RANGE",
    "MAX_INTERPRETER_ELEMENTS",
    "MIN_INTERPRETER_OUTPUT_ELEMENTS",
    "PRECISION_TOLERANCE",
    "BaselineSpec",
    "BenchmarkShape",
    "BenchmarkSpec",
    "CorrectnessSpec",
    "CostModel",
    "Device",
    "Dtype",
    "GateSpec",
    "GeneratorSpec",
    "InputDistribution",
    "Number",
    "NumberOrExpr",
    "OptimizationSpec",
    "Origin",
    "Precision",
    "ReferenceSpec",
    "ShapeCase",
    "Task",
    "TaskSpec",
    "TensorSpec",
    "dtype_family",
    "load_spec",
    "load_task",
    "positive_dims",
]
