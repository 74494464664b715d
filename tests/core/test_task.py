from __future__ import annotations

import json
import shutil

import pytest

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate
from kernel_tui.core.task import load_spec, load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES, PUBLISHED_TASKS

# What each published-format file must load as: nothing of it dropped, defaulted or reinterpreted.
EXPECTED = {
    "vector_mul": dict(name="vector-mul", dims=(2048, 512), dtype="float32", n=1048576, seeds=[5, 43], atol=1e-5,
                       mean=0.5, std=2.0, warmup=8, samples=20, inner=4, timeout=150, rounds=6, patience=2,
                       min_improvement=0.02, max_chars=40000, cost=(1048576.0, 12582912.0)),
    "hello-gpu-vector_add": dict(name="vector-add", dims=(4096, 2048), dtype="float16", n=8388608, seeds=[17, 29],
                                 atol=1e-3, mean=0.0, std=1.0, warmup=10, samples=25, inner=5, timeout=180,
                                 rounds=4, patience=3, min_improvement=0.01, max_chars=50000,
                                 cost=(8388608.0, 50331648.0)),
}


@pytest.mark.parametrize("which", sorted(PUBLISHED_TASKS))
def test_published_schema_v2_task_loads_unchanged(which):
    spec = load_spec(PUBLISHED_TASKS[which][0])
    want = EXPECTED[which]
    assert spec.schema_version == 2
    assert spec.name == want["name"] and spec.language == "triton" and spec.entrypoint == "launch"
    assert spec.launch_arguments == ["x", "y", "output", "n_elements"]
    assert spec.input.distribution == "normal"
    assert (spec.input.mean, spec.input.standard_deviation) == (want["mean"], want["std"])
    assert spec.tensor("n_elements").value == want["n"]
    assert spec.scalar_value(spec.tensor("n_elements"), spec.shape) == want["n"]
    assert spec.tensor_shape(spec.tensor("x"), spec.shape) == want["dims"]
    assert {t.dtype for t in spec.tensors if t.kind != "scalar"} == {want["dtype"]}
    assert spec.correctness.seeds == want["seeds"]
    assert spec.correctness.atol == spec.correctness.rtol == want["atol"]
    b = spec.benchmark
    assert (b.warmup, b.samples, b.inner_repeats, b.timeout_seconds) == (
        want["warmup"], want["samples"], want["inner"], want["timeout"])
    o = spec.optimization
    assert (o.max_rounds, o.patience, o.min_improvement_fraction, o.max_source_chars) == (
        want["rounds"], want["patience"], want["min_improvement"], want["max_chars"])
    assert spec.cost_at(spec.shape) == want["cost"]
    assert spec.cost_model.label
    assert spec.reference.self_check_passed is True
    # no extra shapes: the benchmark shape is the only correctness shape everywhere
    assert [c.name for c in spec.correctness_shapes("cuda")] == ["main"]


@pytest.mark.parametrize("which", sorted(PUBLISHED_TASKS))
def test_published_task_runs_with_our_sources(tmp_path, which):
    task_json, sources = PUBLISHED_TASKS[which]
    shutil.copy(task_json, tmp_path / "task.json")
    for f in ("reference.py", "baseline.py"):  # the published format names no baseline: baseline.py by default
        shutil.copy(sources / f, tmp_path / f)
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


@pytest.mark.parametrize(
    "gate, problems",
    [
        # below the gate's own bound (a t-test needs two blocks), though the task schema once took 1
        ({"minBlocks": 1}, ["field gate: minBlocks: Input should be greater than or equal to 2 (got 1)"]),
        # every problem in the one line, not the first and a count
        ({"minBlocks": 1, "maxBlocks": 1, "alpha": 0.7}, ["alpha: Input should be less than 0.5 (got 0.7)",
                                                          "minBlocks: Input should be greater than or equal to 2",
                                                          "maxBlocks: Input should be greater than or equal to 2"]),
        # against the gate's default for what is not set: a GPU run would fail on it before any round
        ({"minBlocks": 8}, ["field gate: maxBlocks (6) must be >= minBlocks (8)"]),
    ],
)
def test_gate_section_is_checked_at_load_by_the_gates_own_bounds(tmp_path, gate, problems):
    data = _base()
    data["gate"] = gate
    data["correctness"]["atol"] = "tight"  # and a problem elsewhere: listed too
    _write(tmp_path, data)
    with pytest.raises(TaskError) as info:
        load_spec(tmp_path / "task.json")
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "task.json"))
    assert "field correctness.atol" in message
    for problem in problems:
        assert problem in message


def test_a_gate_section_the_gate_accepts_loads():
    data = _base()
    data["gate"] = {"minBlocks": 4, "alpha": 0.05}
    from kernel_tui.core.task import TaskSpec

    spec = TaskSpec.model_validate(data)
    assert spec.gate.overrides() == {"min_blocks": 4, "alpha": 0.05}


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
