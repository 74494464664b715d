"""`kernel-tui import kernelbench`: problems in KernelBench's format (tests/data/kernelbench) become task
directories whose reference agrees with the problem run directly."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from kernel_tui.cli import import_kernelbench as command
from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import evaluate
from kernel_tui.core.kernelbench import import_problem, task_name
from kernel_tui.core.kernelbench.fit import Sample, fit
from kernel_tui.core.kernelbench.source import parse, setter_source

DATA = Path(__file__).parents[2] / "data" / "kernelbench"
REFUSED = {"returns_count", "no_inputs", "causal_mask", "attribute_state"}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, str, int]:
    """Every problem of tests/data/kernelbench imported by the command, as a directory."""
    out = tmp_path_factory.mktemp("tasks")
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["import", "kernelbench", str(DATA), "--out", str(out)])
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = args.func(args)
    return out, buf.getvalue(), rc


def _task(imported, stem: str) -> tuple[Path, dict]:
    root = imported[0] / task_name(DATA / f"{stem}.py")
    return root, json.loads((root / "task.json").read_text())


def _tensor(spec: dict, name: str) -> dict:
    return next(t for t in spec["tensors"] if t["name"] == name)


def test_a_directory_imports_each_problem_and_refuses_the_bad_ones_with_one_line(imported):
    out, text, rc = imported
    lines = text.strip().splitlines()
    assert rc == 1  # some refused, the run went on
    assert len(lines) == len(list(DATA.glob("*.py")))
    refused = {line.split()[1].rstrip(":").removesuffix(".py"): line for line in lines if line.startswith("refused")}
    assert set(refused) == REFUSED
    assert "returns int (output 1), not a tensor" in refused["returns_count"]
    assert "no get_inputs" in refused["no_inputs"]
    # what the task format cannot carry is refused, not drawn at random or left out of the kernel's arguments
    assert "buffer mask holds 2 distinct values (a mask or a table built in __init__)" in refused["causal_mask"]
    assert "keeps tensor(s) h0 as plain attributes" in refused["attribute_state"]
    assert not (out / task_name(DATA / "returns_count.py")).exists()  # nothing half-written


def test_parameters_launch_order_and_equal_constants_kept_apart(imported):
    _, spec = _task(imported, "linear_scale")
    # rows == in_features == 96: each axis still names the constant it comes from
    assert _tensor(spec, "x")["shape"] == ["rows", "in_features"]
    assert spec["launchArguments"] == ["x", "proj_weight", "proj_bias", "out", "rows", "in_features", "out_features"]
    weight = _tensor(spec, "proj_weight")
    assert weight["kind"] == "parameter" and weight["shape"] == ["out_features", "in_features"]
    assert weight["input"]["high"] == "1 / sqrt(in_features)"
    assert spec["shape"] == {"rows": 96, "in_features": 96, "out_features": 40}  # scale = 1.5 is no dimension
    assert spec["costModel"]["flops"] == "2 * rows * in_features * out_features"
    assert evaluate(spec["costModel"]["bytes"], spec["shape"]) == 4 * (96 * 96 + 40 * 96 + 40 + 96 * 40)
    origin = spec["origin"]
    assert origin["kind"] == "kernelbench" and len(origin["sha256"]) == 64 and origin["precision"] == "fp32"


def test_tuple_outputs_are_named_in_order(imported):
    _, spec = _task(imported, "min_max_pair")
    assert spec["reference"]["outputs"] == ["out0", "out1"]
    assert _tensor(spec, "out0")["shape"] == ["height"] and _tensor(spec, "out1")["shape"] == ["width"]


def test_integer_inputs_draw_valid_class_indices(imported):
    _, spec = _task(imported, "nll_classes")
    labels = _tensor(spec, "labels")
    assert labels["dtype"] == "int64"
    assert labels["input"] == {"distribution": "randint", "low": 0, "high": "classes"}
    assert _tensor(spec, "out")["shape"] == []


def test_strided_convolution_output_is_an_expression_that_matches_torch(imported):
    _, spec = _task(imported, "strided_conv")
    out = _tensor(spec, "out")
    conv = torch.nn.Conv2d(3, 8, 5, stride=2, padding=1)
    for height, width, kernel in [(64, 48, 3), (33, 20, 5)]:
        dims = {**spec["shape"], "height": height, "width": width, "kernel": kernel}
        got = [evaluate(e, dims) for e in out["shape"][2:]]
        conv = torch.nn.Conv2d(3, 8, kernel, stride=2, padding=1)
        assert got == list(conv(torch.zeros(1, 3, height, width)).shape[2:])
    assert "stride" not in spec["shape"] and "padding" not in spec["shape"]
    assert "height" in spec["costModel"]["flops"]  # fitted, not a literal


def test_interpreter_shapes_are_small_and_one_is_ragged(imported):
    _, spec = _task(imported, "lower_triangular")
    shapes = {s["name"]: s for s in spec["correctness"]["shapes"]}
    assert all(s["interpreter"] for s in shapes.values())
    assert 3 * shapes["small"]["dims"]["size"] ** 2 <= 262_144
    assert shapes["ragged"]["dims"]["size"] % 2 == 1


def test_zero_output_cannot_pass_the_tolerance(imported):
    root, spec = _task(imported, "leaky_slope")
    atol = _tensor(spec, "out").get("atol", spec["correctness"]["atol"])
    reference = _load(root / "reference.py", "kb_leaky_reference")
    dims = spec["correctness"]["shapes"][0]["dims"]
    x = torch.randn(dims["tokens"], dims["channels"])
    offset = torch.randn(dims["channels"]) * 0.02
    expected = reference.reference(x, offset, None, dims["tokens"], dims["channels"])
    zeros = torch.zeros_like(expected)
    assert not torch.allclose(zeros, expected, atol=atol, rtol=spec["correctness"]["rtol"])


def test_scalar_constructor_argument_stays_in_the_source_and_custom_parameters_are_observed(imported):
    _, spec = _task(imported, "leaky_slope")
    assert "slope" not in spec["shape"]
    offset = _tensor(spec, "offset")["input"]
    assert offset["distribution"] == "normal" and 0.01 < offset["standardDeviation"] < 0.03
    assert any("offset" in n for n in spec["origin"]["notes"])


def test_structured_inputs_come_from_the_problems_own_get_inputs(imported):
    root, spec = _task(imported, "lower_triangular")
    assert spec["generator"] == {"filename": "inputs.py", "entrypoint": "make_inputs"}
    assert "input" not in _tensor(spec, "L")
    inputs = _load(root / "inputs.py", "kb_tril_inputs")
    made = inputs.make_inputs({"size": 37}, 5, "cpu")
    assert set(made) == {"L", "R"} and made["L"].shape == (37, 37)
    assert torch.equal(made["L"], torch.tril(made["L"])) and made["L"].abs().sum() > 0
    again = inputs.make_inputs({"size": 37}, 5, "cpu")
    assert torch.equal(made["R"], again["R"])  # seeded


def _problem_answer(stem: str, dims: dict, forward: list, state: dict):
    problem = _load(DATA / f"{stem}.py", f"kb_direct_{stem}")
    for k, v in dims.items():
        setattr(problem, k, v)
    model = problem.Model(*problem.get_init_inputs())
    model.load_state_dict(state)
    with torch.no_grad():
        return model(*forward)


def test_reference_and_pytorch_baseline_agree_with_the_problem_itself(imported):
    root, spec = _task(imported, "strided_conv")
    dims = spec["correctness"]["shapes"][1]["dims"]  # the ragged one
    reference = _load(root / "reference.py", "kb_conv_reference")
    baseline = _load(root / "baseline.py", "kb_conv_baseline")
    images = torch.rand(dims["batch"], dims["channels_in"], dims["height"], dims["width"])
    weight = torch.randn(dims["channels_out"], dims["channels_in"], dims["kernel"], dims["kernel"])
    bias = torch.randn(dims["channels_out"])
    shape = [evaluate(e, dims) for e in _tensor(spec, "out")["shape"]]
    out = torch.full(shape, math.nan)
    scalars = [dims[n] for n in spec["shape"]]
    expected = _problem_answer("strided_conv", dims, [images], {"conv.weight": weight, "conv.bias": bias})
    got = reference.reference(images, weight, bias, out, *scalars)
    torch.testing.assert_close(got, expected)
    # eager as a user calls it: its own result, returned (the evaluator copies it after the timed region)
    torch.testing.assert_close(baseline.launch(images, weight, bias, out, *scalars), expected)
    assert out.isnan().all()


def test_train_mode_buffers_are_not_modified_and_scalar_arguments_pass_through(imported):
    root, spec = _task(imported, "batchnorm_scalar_arg")
    assert _tensor(spec, "power") == {"name": "power", "kind": "scalar", "dtype": "float32", "value": 1.5}
    assert _tensor(spec, "norm_running_var")["input"] == {"distribution": "constant", "value": 1}
    reference = _load(root / "reference.py", "kb_bn_reference")
    x = torch.randn(20, 6)
    state = [torch.ones(6), torch.zeros(6), torch.zeros(6), torch.ones(6), torch.tensor(0)]
    before = [t.clone() for t in state]
    got = reference.reference(x, 1.5, *state, None, 20, 6)
    assert all(torch.equal(a, b) for a, b in zip(state, before))
    expected = ((x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)).abs() ** 1.5
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_an_existing_task_is_not_overwritten_without_force(imported, tmp_path):
    root, _ = _task(imported, "min_max_pair")
    with pytest.raises(TaskError, match="--force"):
        import_problem(DATA / "min_max_pair.py", root)


def test_fit_forms_and_equal_values():
    base = {"M": 64, "N": 64, "K": 3}
    moves = [{**base, "M": 71}, {**base, "M": 77}, {**base, "N": 71}, {**base, "N": 88}, {**base, "K": 5},
             {**base, "K": 7}, {"M": 67, "N": 69, "K": 4}]
    cases = {
        "N": lambda d: d["N"],
        "2 * M + K - 1": lambda d: 2 * d["M"] + d["K"] - 1,
        "(M - K + 4) // 2": lambda d: (d["M"] + 2 - d["K"]) // 2 + 1,
        "2 * M * N * K": lambda d: 2 * d["M"] * d["N"] * d["K"],
        7: lambda d: 7,
    }
    for expected, f in cases.items():
        samples = [Sample(d, f(d)) for d in [base, *moves]]
        assert fit(samples, base, ["M", "N", "K"]) == expected
    odd = [Sample(d, d["M"] * d["M"] + d["N"] % 5) for d in [base, *moves]]
    assert fit(odd, base, ["M", "N", "K"]) is None


def test_setter_recomputes_derived_constants():
    text = (DATA / "strided_conv.py").read_text()
    problem = parse("p.py", text.replace("height, width = (64, 48)", "height, width = (64, 48)\nsize = (height, width)"))
    assert [c.name for c in problem.candidates][:3] == ["batch", "channels_in", "channels_out"]
    code = setter_source(problem, ["height"])
    scope: dict = {"height": 64, "width": 48, "size": (64, 48)}
    exec(code, scope)
    scope["_kt_set_dimensions"]({"height": 10})
    assert scope["size"] == (10, 48)


def test_a_size_handed_to_forward_follows_the_dimensions(imported):
    # get_inputs() passes `cols` to forward, which reshapes by it: at the interpreter's sizes it must shrink too
    _, spec = _task(imported, "size_argument")
    assert _tensor(spec, "n")["value"] == "cols"


@pytest.mark.parametrize("stem", ["strided_conv", "lower_triangular", "batchnorm_scalar_arg", "size_argument"])
def test_imported_tasks_pass_check_task_on_the_cpu(imported, stem, capsys):
    from kernel_tui.cli import main

    root, _ = _task(imported, stem)
    assert main(["check-task", str(root), "--device", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["status"] == "ok"


def test_an_import_writes_nothing_beside_the_problem_and_no_null_level(tmp_path):
    import shutil

    problems = tmp_path / "copied"  # a problem copied out of its levelN folder
    problems.mkdir()
    shutil.copy(DATA / "leaky_slope.py", problems / "leaky_slope.py")
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["import", "kernelbench", str(problems / "leaky_slope.py"), "--out", str(tmp_path / "t")])
    assert args.func(args) == 0
    assert sorted(p.name for p in problems.iterdir()) == ["leaky_slope.py"]  # no __pycache__ left there
    origin = json.loads((tmp_path / "t" / "task.json").read_text())["origin"]
    assert "level" not in origin and origin["problem"] == "leaky_slope"
    level1 = tmp_path / "level1"
    level1.mkdir()
    shutil.copy(DATA / "leaky_slope.py", level1 / "leaky_slope.py")
    args = parser.parse_args(["import", "kernelbench", str(level1 / "leaky_slope.py"), "--out", str(tmp_path / "u")])
    assert args.func(args) == 0
    assert json.loads((tmp_path / "u" / "task.json").read_text())["origin"]["level"] == 1
