"""The task format's features beyond the published schema: each with a check that could fail."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
import torch

from kernel_tui.core.errors import TaskError
from kernel_tui.core.evaluator.harness import ArgumentSet, CandidateFault, TaskFault, use_generator
from kernel_tui.core.expressions import ExpressionError, evaluate
from kernel_tui.core.task import MAX_INTERPRETER_ELEMENTS, TaskSpec, load_spec


def spec_of(**over) -> TaskSpec:
    data = {
        "name": "t", "shape": {"n": 64, "m": 32},
        "tensors": [
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n", "m"]},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n", "m"]},
        ],
        "launchArguments": ["x", "out"],
    }
    data.update(over)
    return TaskSpec.model_validate(data)


def linear_spec() -> TaskSpec:
    return spec_of(
        shape={"batch": 16, "inf": 64, "outf": 48},
        tensors=[
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["batch", "inf"]},
            {"name": "w", "kind": "parameter", "dtype": "float32", "shape": ["outf", "inf"],
             "input": {"distribution": "uniform", "low": "-1 / sqrt(inf)", "high": "1 / sqrt(inf)"}},
            {"name": "b", "kind": "parameter", "dtype": "float32", "shape": ["outf"],
             "input": {"distribution": "constant", "value": 0.5}},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["batch", "outf"]},
        ],
        launchArguments=["x", "w", "b", "out"],
    )


# --- expressions -----------------------------------------------------------------------------------

def test_expressions_take_math_functions_and_reject_anything_else():
    assert evaluate("1 / sqrt(in_f)", {"in_f": 64}) == pytest.approx(0.125)
    assert evaluate("floor(n / 3) + ceil(n / 3)", {"n": 10}) == 7
    assert evaluate("(H + 2 * 1 - 3) // 2 + 1", {"H": 31}) == 16
    with pytest.raises(ExpressionError, match="allowed"):
        evaluate("open('x')", {})
    with pytest.raises(ExpressionError, match="by zero"):
        evaluate("n // 0", {"n": 3})


def test_shape_entries_may_be_expressions_and_must_be_whole_numbers():
    spec = spec_of(
        shape={"H": 31, "k": 3},
        tensors=[
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["H", "H"]},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["(H + 2 - k) // 2 + 1", 4]},
        ],
    )
    assert spec.tensor_shape(spec.tensor("out"), spec.shape) == (16, 4)
    with pytest.raises(ValueError, match="not a whole number"):
        spec_of(shape={"n": 5, "m": 2}, tensors=[
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n"]},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n / 2"]},
        ])


def test_an_unknown_dimension_in_an_expression_is_named_with_the_known_ones():
    with pytest.raises(ValueError) as info:
        spec_of(tensors=[
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n", "m"]},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["(n + 2 * pad - 3) // 1 + 1"]},
        ])
    text = str(info.value)
    assert "lacks dimension(s) ['pad']" in text and "['m', 'n']" in text
    assert "(M + 2" not in text


# --- parameters and distributions -------------------------------------------------------------------

def test_parameters_follow_their_distribution_once_per_shape_and_seed():
    spec = linear_spec()
    a = ArgumentSet.build(spec, spec.shape, "cpu", seed=3)
    b = ArgumentSet.build(spec, spec.shape, "cpu", seed=3)
    c = ArgumentSet.build(spec, spec.shape, "cpu", seed=4)
    w = a.inputs["w"]
    assert torch.equal(w, b.inputs["w"]) and not torch.equal(w, c.inputs["w"])
    bound = 1 / math.sqrt(64)
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound
    assert torch.all(a.inputs["b"] == 0.5)
    # passed to the launch and the reference in launchArguments order, and checked for changes
    a.compute_expected(lambda x, w, b, out: x @ w.T + b)
    a.prepare_call()
    x, w_arg, b_arg, out = a.args()
    assert w_arg is not a.inputs["w"] and torch.equal(w_arg, a.inputs["w"])  # the side's copy of the truth
    out.copy_(x @ w_arg.T + b_arg)
    w_arg.add_(1.0)
    with pytest.raises(CandidateFault, match="input 'w' was modified"):
        a.check("call")


def test_integer_and_bool_inputs_honour_their_distribution():
    spec = spec_of(
        shape={"n": 4000, "classes": 7},
        tensors=[
            {"name": "idx", "kind": "input", "dtype": "int64", "shape": ["n"],
             "input": {"distribution": "randint", "low": 0, "high": "classes"}},
            {"name": "mask", "kind": "input", "dtype": "bool", "shape": ["n"],
             "input": {"distribution": "bernoulli", "p": 0.25}},
            {"name": "steps", "kind": "input", "dtype": "int32", "shape": ["n"],
             "input": {"distribution": "uniform", "low": -2, "high": 2}},
            {"name": "out", "kind": "output", "dtype": "bool", "shape": ["n"]},
        ],
        launchArguments=["idx", "mask", "steps", "out"],
    )
    s = ArgumentSet.build(spec, spec.shape, "cpu", seed=1)
    idx, mask, steps = s.inputs["idx"], s.inputs["mask"], s.inputs["steps"]
    assert int(idx.min()) == 0 and int(idx.max()) == 6
    assert mask.dtype == torch.bool and 0.2 < float(mask.float().mean()) < 0.3
    assert set(steps.unique().tolist()) == {-2, -1, 0, 1}
    # a bool output is poisoned, checked, and a wrong one fails
    s.compute_expected(lambda idx, mask, steps, out: mask & (idx > 2))
    s.prepare_call()
    s.outputs["out"].view.copy_(mask & (idx > 2))
    s.check("right")
    s.prepare_call()
    s.outputs["out"].view.copy_(mask)
    with pytest.raises(CandidateFault):
        s.check("wrong")


def test_a_distribution_that_does_not_suit_the_dtype_is_refused():
    with pytest.raises(ValueError, match="cannot take distribution 'randint'"):
        spec_of(tensors=[
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n"], "input": {"distribution": "randint", "high": 3}},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n"]},
        ])
    with pytest.raises(ValueError, match="low .* must be below high"):
        spec_of(tensors=[
            {"name": "x", "kind": "input", "dtype": "int64", "shape": ["n"],
             "input": {"distribution": "randint", "low": "n", "high": 3}},
            {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n"]},
        ])


def test_a_scalar_may_be_drawn_per_seed():
    spec = spec_of(tensors=[
        {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n"]},
        {"name": "s", "kind": "scalar", "dtype": "float32", "input": {"distribution": "uniform", "low": 2, "high": 3}},
        {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n"]},
    ], launchArguments=["x", "s", "out"])
    values = {ArgumentSet.build(spec, spec.shape, "cpu", seed).scalars["s"] for seed in range(5)}
    assert len(values) == 5 and all(2 <= v < 3 for v in values)


# --- tolerances and outputs ------------------------------------------------------------------------

def test_each_output_has_its_own_tolerance_and_precision_gives_the_default():
    spec = spec_of(precision="fp32", tensors=[
        {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n"]},
        {"name": "loose", "kind": "output", "dtype": "float32", "shape": ["n"], "atol": 0.5},
        {"name": "tight", "kind": "output", "dtype": "float32", "shape": ["n"]},
    ], launchArguments=["x", "loose", "tight"], reference={"outputs": ["loose", "tight"]})
    assert spec.tolerance("tight") == (1e-4, 1e-4)
    assert spec.tolerance("loose") == (0.5, 1e-4)
    assert spec_of(precision="fp16").tolerance("out") == (1e-2, 1e-2)
    assert spec_of(precision="fp16", correctness={"atol": 0.3}).tolerance("out") == (0.3, 1e-2)
    s = ArgumentSet.build(spec, spec.shape, "cpu", seed=1)
    s.compute_expected(lambda x, a, b: (x, x))
    s.prepare_call()
    x, loose, tight = s.args()
    loose.copy_(x + 0.1)
    tight.copy_(x)
    s.check("loose is off by 0.1, within its 0.5")
    s.prepare_call()
    loose.copy_(x)
    tight.copy_(x + 0.1)
    with pytest.raises(CandidateFault, match="output 'tight'"):
        s.check("tight is off by 0.1")


def two_outputs(order: list[str] | None) -> TaskSpec:
    return spec_of(tensors=[
        {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n", "m"]},
        {"name": "rows", "kind": "output", "dtype": "float32", "shape": ["n"]},
        {"name": "cols", "kind": "output", "dtype": "float32", "shape": ["m"]},
    ], launchArguments=["x", "rows", "cols"], **({"reference": {"outputs": order}} if order else {}))


def test_outputs_are_matched_in_the_declared_order_with_a_clear_error_otherwise():
    ref = lambda x, rows, cols: (x.sum(0), x.sum(1))  # noqa: E731 - returns cols first
    spec = two_outputs(["cols", "rows"])
    s = ArgumentSet.build(spec, spec.shape, "cpu", 1)
    s.compute_expected(ref)
    assert torch.allclose(s.expected[0], s.inputs["x"].sum(1))  # stored by output: rows first
    implicit = two_outputs(None)
    assert any("reference.outputs" in w for w in implicit.coverage_warnings())
    s = ArgumentSet.build(implicit, implicit.shape, "cpu", 1)
    with pytest.raises(TaskFault, match=r"result #1 has shape \(32,\), but output 'rows' is declared \(64,\)"):
        s.compute_expected(ref)
    with pytest.raises(ValueError, match="must list each output tensor once"):
        two_outputs(["cols", "cols"])


def test_a_tolerance_that_lets_zeros_pass_is_reported():
    spec = spec_of(correctness={"atol": 1e-3})
    s = ArgumentSet.build(spec, spec.shape, "cpu", 1)
    s.compute_expected(lambda x, out: torch.softmax(x, dim=None or 0) * 1e-3)
    assert "lets an all-zeros result pass" in s.loose_tolerances()[0]
    s.compute_expected(lambda x, out: torch.softmax(x, dim=0))
    assert s.loose_tolerances() == []


# --- generator -------------------------------------------------------------------------------------

def test_the_input_generator_makes_structured_inputs_and_is_checked():
    spec = spec_of(shape={"n": 16, "m": 16}, generator={"filename": "inputs.py"})

    def symmetric(dims, seed, device):
        g = torch.Generator().manual_seed(seed)
        a = torch.rand(dims["n"], dims["m"], generator=g)
        return {"x": (a + a.T) / 2}

    try:
        use_generator(symmetric)
        x = ArgumentSet.build(spec, spec.shape, "cpu", 5).inputs["x"]
        assert torch.equal(x, x.T) and torch.equal(x, ArgumentSet.build(spec, spec.shape, "cpu", 5).inputs["x"])
        use_generator(lambda dims, seed, device: {"x": torch.zeros(3)})
        with pytest.raises(TaskFault, match=r"gave 'x' \(3,\); the task declares shape \(16, 16\)"):
            ArgumentSet.build(spec, spec.shape, "cpu", 5)
        use_generator(lambda dims, seed, device: {"y": torch.zeros(3)})
        with pytest.raises(TaskFault, match="unknown names"):
            ArgumentSet.build(spec, spec.shape, "cpu", 5)
    finally:
        use_generator(None)


# --- the CPU interpreter and errors ----------------------------------------------------------------

def test_the_cpu_never_runs_a_shape_too_big_for_the_interpreter():
    big = spec_of(shape={"n": 4096, "m": 4096})
    with pytest.raises(TaskError, match="too many for the CPU interpreter"):
        big.correctness_shapes("cpu")
    assert big.correctness_shapes("cuda")[0].name == "main"
    assert any("too many for the CPU interpreter" in w for w in big.coverage_warnings())
    with pytest.raises(ValueError, match="marked interpreter but its tensors hold"):
        spec_of(correctness={"shapes": [{"name": "s", "dims": {"n": 4096, "m": 1024}, "interpreter": True}]})
    assert 2 * 4096 * 512 <= MAX_INTERPRETER_ELEMENTS
    small = spec_of(shape={"n": 4096, "m": 4096},
                    correctness={"shapes": [{"name": "s", "dims": {"n": 300, "m": 301}, "interpreter": True}]})
    assert [c.name for c in small.correctness_shapes("cpu")] == ["s"]


def test_errors_list_every_problem_and_suggest_the_valid_key(tmp_path: Path):
    data = json.loads(spec_of().model_dump_json(by_alias=True, exclude_none=True))
    data["correctness"]["atoll"] = 1e-3
    data["tensors"][0]["dtpye"] = "float32"
    data["benchmark"]["samples"] = 0
    (tmp_path / "task.json").write_text(json.dumps(data))
    with pytest.raises(TaskError) as info:
        load_spec(tmp_path)
    text = str(info.value)
    assert "\n" not in text
    assert "field correctness.atoll: unknown key (did you mean 'atol'?" in text
    assert "did you mean 'dtype'?" in text
    assert "field benchmark.samples" in text
    assert "Extra inputs" not in text

    data = json.loads(spec_of().model_dump_json(by_alias=True, exclude_none=True))
    data["launchArguments"] = ["x", "outt"]
    data["benchmark"]["shapes"] = [{"shape": "huge"}]
    (tmp_path / "task.json").write_text(json.dumps(data))
    with pytest.raises(TaskError) as info:
        load_spec(tmp_path)
    text = str(info.value)
    assert "did you mean 'out'?" in text and "benchmark.shapes name unknown shapes ['huge']" in text
    assert "are not in launchArguments" in text


def test_the_task_format_reference_names_every_field():
    """docs/task-format.md documents every key a task file may hold."""
    from kernel_tui.core import task as task_module

    doc = (Path(__file__).parents[2] / "docs" / "task-format.md").read_text(encoding="utf-8")
    missing = []
    for name in dir(task_module):
        model = getattr(task_module, name)
        if isinstance(model, type) and issubclass(model, task_module._Model) and model is not task_module._Model:
            for field_name, field in model.model_fields.items():
                key = field.alias or field_name
                if f"`{key}`" not in doc:
                    missing.append(f"{name}.{key}")
    assert not missing, missing


def test_a_generator_file_is_loaded_with_the_task(tmp_path: Path):
    from kernel_tui.core.task import load_task
    from tests.conftest import FIXTURES

    for f in ("reference.py", "baseline.py"):
        (tmp_path / f).write_text((FIXTURES / "vector_add" / f).read_text())
    data = json.loads((FIXTURES / "vector_add" / "task.json").read_text())
    data["generator"] = {"filename": "inputs.py"}
    (tmp_path / "task.json").write_text(json.dumps(data))
    with pytest.raises(TaskError, match="input generator file is missing"):
        load_task(tmp_path)
    (tmp_path / "inputs.py").write_text(textwrap.dedent("""
        def make_inputs(dims, seed, device):
            return {}
    """))
    assert "make_inputs" in (load_task(tmp_path).generator_source or "")


SYMMETRIC_TASK = {
    "name": "symmetric-matvec", "shape": {"n": 2048}, "precision": "fp32",
    "tensors": [
        {"name": "a", "kind": "input", "dtype": "float32", "shape": ["n", "n"]},
        {"name": "v", "kind": "input", "dtype": "float32", "shape": ["n"]},
        {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n"]},
    ],
    "launchArguments": ["a", "v", "out"],
    "generator": {"filename": "inputs.py"},
    "baseline": {"language": "pytorch"},
    "correctness": {"shapes": [{"name": "small", "dims": {"n": 67}, "interpreter": True}], "atol": 1e-4, "rtol": 1e-4},
}


def write_task(root: Path, data: dict, generator: str) -> Path:
    root.mkdir()
    (root / "task.json").write_text(json.dumps(data))
    # the reference uses a's symmetry: it is right only for the generator's inputs
    (root / "reference.py").write_text("def reference(a, v, out):\n    return a.T @ v\n")
    (root / "baseline.py").write_text("import torch\n\ndef launch(a, v, out):\n    torch.matmul(a, v, out=out)\n")
    (root / "inputs.py").write_text(generator)
    return root


def check_task(root: Path) -> tuple[int, str]:
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = subprocess.run([sys.executable, "-m", "kernel_tui", "check-task", str(root), "--device", "cpu"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    return out.returncode, out.stdout + out.stderr


def test_the_generator_runs_in_the_worker_and_its_faults_are_the_tasks(tmp_path: Path):
    symmetric = textwrap.dedent("""
        import torch

        def make_inputs(dims, seed, device):
            g = torch.Generator(device=device).manual_seed(seed)
            a = torch.rand(dims["n"], dims["n"], generator=g, device=device)
            return {"a": (a + a.T) / 2}
    """)
    code, text = check_task(write_task(tmp_path / "good", SYMMETRIC_TASK, symmetric))
    assert code == 0, text
    assert "baseline  ok" in text
    # without the generator the inputs are not symmetric, and the baseline (a @ v) disagrees with a.T @ v
    plain = {k: v for k, v in SYMMETRIC_TASK.items() if k != "generator"}
    code, text = check_task(write_task(tmp_path / "plain", plain, ""))
    assert code != 0 and "baseline  FAILED" in text
    code, text = check_task(write_task(tmp_path / "bad", SYMMETRIC_TASK, "def make_inputs(dims, seed, device):\n    return {'a': 1}\n"))
    assert code != 0 and "reference FAILED" in text and "the input generator gave 'a' int" in text
    big = {**SYMMETRIC_TASK, "correctness": {"shapes": []}}
    code, text = check_task(write_task(tmp_path / "big", big, symmetric))
    assert code != 0 and "too many for the CPU interpreter" in text and "Traceback" not in text


def test_atol_scale_keeps_zeros_from_passing_at_every_size():
    """A softmax over many columns: its values shrink with the width, so a fixed atol that is fine at a
    small width lets zeros pass at a large one; atolScale caps atol by the answer's own size each time."""
    def softmax_task(**out) -> TaskSpec:
        return spec_of(shape={"n": 4, "m": 200_000}, correctness={"atol": 1e-3, "rtol": 1e-4},
                       tensors=[{"name": "x", "kind": "input", "dtype": "float32", "shape": ["n", "m"]},
                                {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n", "m"], **out}])

    ref = lambda x, out: torch.softmax(x, dim=1)  # noqa: E731
    fixed = ArgumentSet.build(softmax_task(), {"n": 4, "m": 200_000}, "cpu", 1)
    fixed.compute_expected(ref)
    assert "lets an all-zeros result pass" in fixed.loose_tolerances()[0]
    scaled = ArgumentSet.build(softmax_task(atolScale=0.01), {"n": 4, "m": 200_000}, "cpu", 1)
    scaled.compute_expected(ref)
    assert scaled.loose_tolerances() == []
    atol, _ = scaled.tolerances["out"]
    assert atol < 1e-6  # 0.01 × the 90th percentile of values near 1/200,000
    scaled.prepare_call()
    x, out = scaled.args()
    out.copy_(torch.softmax(x, dim=1) * 1.00001)  # within rtol
    scaled.check("right")
    scaled.prepare_call()
    out.zero_()
    with pytest.raises(CandidateFault):
        scaled.check("zeros")
    # at a small width the fixed atol stands: the cap only ever lowers it
    small = ArgumentSet.build(softmax_task(atolScale=0.5), {"n": 4, "m": 8}, "cpu", 1)
    small.compute_expected(ref)
    assert small.tolerances["out"][0] == 1e-3
    with pytest.raises(ValueError, match="atolScale belong to outputs"):
        spec_of(tensors=[{"name": "x", "kind": "input", "dtype": "float32", "shape": ["n"], "atolScale": 0.1},
                         {"name": "out", "kind": "output", "dtype": "float32", "shape": ["n"]}])
