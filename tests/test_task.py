from __future__ import annotations

import json
import shutil

import pytest

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate
from kernel_tui.core.task import load_spec, load_task
from tests.conftest import COMPAT_TASK, FIXTURE_NAMES, FIXTURES


def test_published_schema_v2_task_loads_unchanged():
    spec = load_spec(COMPAT_TASK)
    assert spec.schema_version == 2
    assert spec.name == "vector-add"
    assert spec.launch_arguments == ["x", "y", "output", "n_elements"]
    assert spec.tensor("n_elements").value == 8388608
    assert spec.scalar_value(spec.tensor("n_elements"), spec.shape) == 4096 * 2048
    assert spec.tensor_shape(spec.tensor("x"), spec.shape) == (4096, 2048)
    assert spec.benchmark.inner_repeats == 5 and spec.benchmark.samples == 25
    assert spec.optimization.min_improvement_fraction == 0.01
    assert spec.cost_at(spec.shape) == (8388608.0, 50331648.0)
    assert spec.reference.self_check_passed is True
    # no extra shapes: the benchmark shape is the only correctness shape everywhere
    assert [c.name for c in spec.correctness_shapes("cuda")] == ["main"]


def test_published_task_runs_with_our_sources(tmp_path):
    shutil.copy(COMPAT_TASK, tmp_path / "task.json")
    for f in ("reference.py", "baseline.py"):
        shutil.copy(FIXTURES / "vector_add" / f, tmp_path / f)
    task = load_task(tmp_path)
    assert task.spec.entrypoint == "launch"
    from kernel_tui.core.policy import check_source

    report = check_source(task.baseline_source, entrypoint="launch", launch_arguments=task.spec.launch_arguments)
    assert report.ok, report.summary()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixtures_load_with_ragged_and_interpreter_shapes(name):
    task = load_task(FIXTURES / name)
    spec = task.spec
    gpu = spec.correctness_shapes("cuda")
    cpu = spec.correctness_shapes("cpu")
    assert len(gpu) >= 2 and gpu[0].name == "main"
    assert len(cpu) >= 2 and all(c.interpreter for c in cpu)
    # at least one shape whose sizes are not multiples of common block sizes
    assert any(any(d % 16 for d in c.dims.values()) for c in cpu)
    assert any(any(d % 16 for d in c.dims.values()) for c in gpu[1:])
    assert spec.timing_shape("cpu").interpreter
    flops, nbytes = spec.cost_at(spec.shape)
    assert flops > 0 and nbytes > 0
    assert "@triton.jit" in task.baseline_source


def test_fixture_count():
    assert {"vector_add", "softmax", "rmsnorm", "matmul", "silu_mul", "row_sum"} <= set(FIXTURE_NAMES)


def _write(tmp_path, data) -> None:
    (tmp_path / "task.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def _base() -> dict:
    return json.loads((FIXTURES / "vector_add" / "task.json").read_text())


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d["correctness"].update(atol="tight"), "field correctness.atol"),
        (lambda d: d.update(launchArguments=["x", "y", "nope"]), "launchArguments name unknown tensors"),
        (lambda d: d["tensors"][3].update(value="rows * depth"), "lacks dimension(s) ['depth']"),
        (lambda d: d["tensors"][3].update(value="__import__('os')"), "only arithmetic"),
        (lambda d: d.update(schemaVersion=3), "field schemaVersion"),
        (lambda d: d["benchmark"].update(interpreterShape="huge"), "not a correctness shape"),
        (lambda d: d.pop("tensors"), "field tensors"),
        (lambda d: d["correctness"].update(seeds=[]), "field correctness.seeds"),
        (lambda d: d["benchmark"].update(sampels=3), "field benchmark.sampels"),
    ],
)
def test_invalid_spec_gives_one_line_naming_file_and_field(tmp_path, mutate, needle):
    data = _base()
    mutate(data)
    _write(tmp_path, data)
    with pytest.raises(TaskError) as info:
        load_spec(tmp_path / "task.json")
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "task.json") in message
    assert needle in message


def test_invalid_json_and_missing_files(tmp_path):
    _write(tmp_path, "{not json")
    with pytest.raises(TaskError, match=r"invalid JSON at line 1"):
        load_spec(tmp_path)
    _write(tmp_path, _base())
    with pytest.raises(TaskError, match="reference file is missing"):
        load_task(tmp_path)
    with pytest.raises(TaskError, match="no such directory"):
        load_task(tmp_path / "absent")
    with pytest.raises(TaskError, match="no such task file"):
        load_spec(tmp_path / "absent" / "task.json")


def test_expressions_are_arithmetic_only():
    assert evaluate("rows * cols", {"rows": 3, "cols": 5}) == 15
    assert evaluate("2 * M * N * K", {"M": 2, "N": 3, "K": 4}) == 48
    assert evaluate("max(rows, 7) // 2", {"rows": 3}) == 3
    assert evaluate(12, {}) == 12
    for bad in ("rows.bit_length()", "open('x')", "[1][0]", "rows if 1 else 2"):
        with pytest.raises(ExpressionError):
            evaluate(bad, {"rows": 3})
