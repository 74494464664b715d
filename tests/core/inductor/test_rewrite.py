"""The rewrite of Inductor's modules into task baselines: the policy passes them, the project's evaluator finds
them correct on the CPU interpreter, the search finds their knobs, and what cannot be rewritten is refused in
one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kernel_tui.core.inductor import Refusal, derive_placeholders, parse_generated, rewrite, rewrite_for_task
from kernel_tui.core.policy import check_source
from kernel_tui.core.proposers.transforms import analyze
from tests.core.inductor.support import check_on_interpreter, generated_source, spec_of, task_dir, tensors_of

SUPPORTED = [("scale_leaky_relu", "dynamic"), ("gelu", "dynamic"), ("softmax_rows", "dynamic"),
             ("rms_norm", "dynamic"), ("transpose_scale", "dynamic"), ("softmax_one_shape", "static")]


def baseline(name: str, kind: str = "dynamic", configs: dict | None = None) -> str:
    return rewrite_for_task(generated_source(name, kind), spec_of(name), tensors_of(name, kind), configs)


@pytest.mark.parametrize("name, kind", SUPPORTED)
def test_the_baseline_passes_the_policy(name, kind):
    spec = spec_of(name)
    report = check_source(baseline(name, kind), entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                          tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
    assert report.ok, report.violations


@pytest.mark.parametrize("name, kind", SUPPORTED)
def test_the_baseline_is_correct_on_the_interpreter(name, kind, tmp_path: Path):
    check_on_interpreter(task_dir(name), baseline(name, kind), tmp_path)


def test_symbols_come_from_the_tensors_sizes():
    g = parse_generated(generated_source("rms_norm"))
    assert derive_placeholders(g, ["x", "weight"]) == ["x.shape[0]", "x.shape[1]", "x", "weight"]
    source = baseline("rms_norm")
    assert "s77 = x.shape[0]" in source and "s27 = x.shape[1]" in source
    # the returned buffer is a plain allocation: the kernel writes the output directly, nothing is allocated
    assert "torch.empty_strided" not in source and "(x, weight, output, s27, s77, s27," in source


def test_helpers_become_tl_and_inductors_decorators_go():
    source = baseline("softmax_rows")
    assert "triton_helpers" not in source and "triton_heuristics" not in source and "set_driver_to_cpu" not in source
    assert "tl.max(_tmp2, 1)" in source and "tl.where((_tmp2 > tmp1) | (_tmp2 != _tmp2), _tmp2, tmp1)" in source
    assert "tl.exp(tmp5)" in source and "libdevice" not in source
    assert "[(triton.cdiv(s77, XBLOCK_0),)]" in source


def test_a_libdevice_function_tl_lacks_stays_libdevice():
    source = generated_source("gelu").replace("libdevice.erf(tmp4)", "libdevice.tanh(tmp4)")
    out = rewrite_for_task(source, spec_of("gelu"), ["x"])
    assert "libdevice.tanh(tmp4)" in out and "from triton.language.extra import libdevice" in out
    assert check_source(out, entrypoint="launch", launch_arguments=["x", "output"]).ok
    # the CPU interpreter runs no libdevice: on the CPU the start says so instead of failing its check
    from kernel_tui.core.inductor.start import interpreter_gap

    assert interpreter_gap(out) == "libdevice.tanh" and interpreter_gap(baseline("gelu")) is None


def test_the_knobs_are_found_by_the_search():
    knobs = analyze(baseline("rms_norm")).knobs
    # rows of 256 at the captured shape (size_hints): one chunk a row, four rows a program
    assert knobs["const:XBLOCK_0"].value == 4 and knobs["const:R0_BLOCK_0"].value == 256
    assert knobs["launch:triton_red_fused_add_mean_mul_pow_rsqrt_0:0:num_warps"].value == 8
    assert "launch:triton_red_fused_add_mean_mul_pow_rsqrt_0:0:num_stages" in knobs  # a loop: it pipelines
    knobs = analyze(baseline("gelu")).knobs
    assert knobs["const:XBLOCK_0"].value == 1024 and knobs["launch:triton_poi_fused_gelu_0:0:num_warps"].value == 4


def test_recorded_configs_set_the_constants():
    kept = {"triton_poi_fused_gelu_0": {"heuristic": "pointwise", "offered": [],
                                        "kept": [{"kwargs": {"XBLOCK": 256}, "num_warps": 2, "num_stages": 1}]}}
    source = baseline("gelu", configs=kept)
    assert "XBLOCK_0 = 256" in source and "num_warps=2" in source
    plain = {"triton_poi_fused_gelu_0": {"kwargs": {"XBLOCK": 512}, "num_warps": 8, "num_stages": 1}}
    assert "XBLOCK_0 = 512" in baseline("gelu", configs=plain)


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and isinstance(exc.value, ValueError)
    return text


def test_an_extern_call_is_refused():
    with pytest.raises(Refusal) as exc:
        baseline("linear_relu")
    assert one_line(exc) == "extern call extern_kernels.addmm stays a library call: keep the eager start"


def test_an_unknown_helper_is_refused():
    source = generated_source("gelu").replace("libdevice.erf(tmp4)", "triton_helpers.bucketize_binary_search(tmp4, tmp3)")
    with pytest.raises(Refusal) as exc:
        rewrite_for_task(source, spec_of("gelu"), ["x"])
    assert "triton_helpers.bucketize_binary_search" in one_line(exc) and "keep the eager start" in str(exc.value)


def test_static_code_for_a_task_with_several_shapes_is_kept_with_a_note_for_the_check():
    g = parse_generated(generated_source("scale_leaky_relu", "static"))
    notes: list[str] = []
    source = rewrite(g, launch_arguments=["x", "output"], placeholders=["x"], outputs=["output"], single_shape=False,
                     notes=notes)
    assert "xnumel = 4773" in source
    assert notes == ["kernel triton_poi_fused_leaky_relu_mul_0 has sizes fixed at the captured shape: only the check "
                     "at every shape of the task says whether they hold"]
    # for a task of one shape there is nothing to say
    notes.clear()
    rewrite(g, launch_arguments=["x", "output"], placeholders=["x"], outputs=["output"], single_shape=True, notes=notes)
    assert notes == []


def test_a_template_kernel_that_is_no_gemm_is_refused():
    source = generated_source("gelu").replace("@triton_heuristics.pointwise(", "@triton_heuristics.template(")
    with pytest.raises(Refusal) as exc:
        rewrite_for_task(source, spec_of("gelu"), ["x"])
    assert "is a template without the GEMM's BLOCK_K" in one_line(exc) and "keep the eager start" in str(exc.value)


def test_a_transposed_view_returned_as_the_output_is_refused():
    source = generated_source("gelu").replace(
        "return (buf0, )", "buf1 = reinterpret_tensor(buf0, (s27, s77), (1, s27), 0)\n        return (buf1, )")
    with pytest.raises(Refusal) as exc:
        rewrite_for_task(source, spec_of("gelu"), ["x"])
    assert "returned buf1 is not a plain row-major buffer to write output through" in one_line(exc)
    behind_an_alias = generated_source("gelu").replace(
        "return (buf0, )", "buf1 = reinterpret_tensor(buf0, (s27, s77), (1, s27), 0)\n        buf2 = buf1\n"
        "        return (buf2, )")
    with pytest.raises(Refusal) as exc:
        rewrite_for_task(behind_an_alias, spec_of("gelu"), ["x"])
    assert "returned buf2 is not a plain row-major buffer" in one_line(exc)


def test_a_2d_tiled_kernel_gets_its_y_axis_with_inductors_overflow_into_z():
    source = baseline("transpose_scale")
    assert "XBLOCK_0 = 32" in source and "YBLOCK_0 = 32" in source
    grid = ("[(triton.cdiv(s77, XBLOCK_0), min(triton.cdiv(s27, YBLOCK_0), 65535), "
            "triton.cdiv(triton.cdiv(s27, YBLOCK_0), 65535),)]")
    assert grid in source


def small_reduction_start(name: str) -> str:
    """The start from a capture under tests/data/inductor/NAME, its looped reductions 16 wide: the interpreter
    runs tl.reduce's combine function element by element, and 1024 wide takes minutes."""
    capture = json.loads((task_dir(name) / "capture.json").read_text())
    generated = parse_generated(capture["code"])
    small = {k.name: {"kwargs": {"XBLOCK": 1, "R0_BLOCK": 16}, "num_warps": 4, "num_stages": 1}
             for k in generated.kernels.values() if k.heuristic == "reduction"}
    spec = spec_of(name)
    source = rewrite(generated, launch_arguments=list(spec.launch_arguments), placeholders=capture["placeholders"],
                     outputs=[t.name for t in spec.tensors if t.kind == "output"], configs=small)
    assert check_source(source, entrypoint="launch", launch_arguments=spec.launch_arguments,
                        tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"]).ok
    return source


def test_welfords_running_variance_is_the_starts_own_and_correct(tmp_path: Path):
    """GroupNorm (tests/data/inductor/group_norm): Inductor's welford_reduce and welford become the start's own
    jit functions."""
    source = small_reduction_start("group_norm")
    assert "triton_helpers" not in source and "welford_step(tmp1, tmp2_mean, tmp2_m2, tmp2_weight" in source
    assert "welford_along(tmp2_mean, tmp2_m2, tmp2_weight, 1)" in source and "def welford_merge(" in source
    assert "def larger_with_index(" not in source  # only the helpers a kernel calls
    check_on_interpreter(task_dir("group_norm"), source, tmp_path)


def test_argmax_is_correct_with_the_starts_own_helpers(tmp_path: Path):
    source = small_reduction_start("argmax_dim1")
    assert "triton_helpers" not in source and "larger_with_index(_tmp2, _tmp2_index, tmp1, rindex)" in source
    assert "largest_with_index(_tmp2, _tmp2_index, 1)" in source and "def welford_step(" not in source
    check_on_interpreter(task_dir("argmax_dim1"), source, tmp_path)


TIES = """
import torch, triton, triton.language as tl
{helpers}

@triton.jit
def pick(x_ptr, value_ptr, index_ptr, n: tl.constexpr):
    offsets = tl.arange(0, n)
    value, index = {along}(tl.load(x_ptr + offsets), offsets, 0)
    tl.store(value_ptr, value)
    tl.store(index_ptr, index)

for row in ([1.0, 3.0, 3.0, 2.0], [1.0, float("nan"), 5.0, float("nan")], [2.0, 2.0, 2.0, 2.0]):
    x = torch.tensor(row)
    value, index = torch.empty(1), torch.empty(1, dtype=torch.int32)
    pick[(1,)](x, value, index, 4)
    print(int(index), int(torch.{torch_fn}(x)))
"""


@pytest.mark.parametrize("group, along, torch_fn", [("max_index", "largest_with_index", "argmax"),
                                                    ("min_index", "smallest_with_index", "argmin")])
def test_the_index_helpers_pick_the_first_of_equal_values_and_a_nan_as_torch_does(group, along, torch_fn, tmp_path):
    import os
    import subprocess
    import sys

    from kernel_tui.core.inductor.helpers import SOURCES

    script = tmp_path / "ties.py"
    script.write_text(TIES.format(helpers=SOURCES[group], along=along, torch_fn=torch_fn))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = [line.split() for line in done.stdout.split("\n") if line.strip()]
    assert len(pairs) == 3 and all(ours == theirs for ours, theirs in pairs), pairs


FLOORS = """
import torch
import triton
import triton.language as tl

{helpers}

@triton.jit
def floors(a_ptr, b_ptr, q_ptr, r_ptr, n):
    i = tl.arange(0, 16)
    m = i < n
    a = tl.load(a_ptr + i, mask=m)
    b = tl.load(b_ptr + i, mask=m, other=1)
    tl.store(q_ptr + i, floor_divide(a, b), mask=m)
    tl.store(r_ptr + i, floor_remainder(a, b), mask=m)

a = torch.tensor([7, -7, 7, -7, 6, -6, 0, -1, -5, 5], dtype=torch.int64)
b = torch.tensor([2, 2, -2, -2, 3, 3, 4, 2, 2, -3], dtype=torch.int64)
q, r = torch.empty_like(a), torch.empty_like(a)
floors[(1,)](a, b, q, r, 10)
print(q.tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())], r.tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())])
"""


def test_integer_floor_division_rounds_toward_negative_infinity_as_python_does(tmp_path):
    """Max pooling's output sizes call div_floor_integer on a numerator that may be negative (L1-43)."""
    import os
    import subprocess
    import sys

    from kernel_tui.core.inductor.helpers import FUNCTIONS, SOURCES

    assert FUNCTIONS["div_floor_integer"] == ("floor_divide", "integer")
    script = tmp_path / "floors.py"
    script.write_text(FLOORS.format(helpers=SOURCES["integer"]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]


def test_an_input_size_inductor_fixed_at_the_captured_shape_is_named_where_the_tasks_shapes_move_it():
    """L1-41 (max pooling, dilation 3): Inductor compiled the sequence length as 64, the captured shape's; the start
    wrote out of bounds at the ragged shape (63). Refused up front, with the size named."""
    from kernel_tui.core.inductor.start import fixed_input_size

    capture = json.loads((task_dir("cumsum_dim1") / "capture.json").read_text())
    spec = spec_of("cumsum_dim1")
    assert fixed_input_size(parse_generated(capture["code"]), capture["placeholders"], spec) is None
    fixed = capture["code"].replace("assert_size_stride(arg2_1, (s77, s27), (s27, 1)",
                                    "assert_size_stride(arg2_1, (s77, 40), (40, 1)")
    assert fixed != capture["code"]
    line = fixed_input_size(parse_generated(fixed), capture["placeholders"], spec)
    assert line == ("torch.compile fixed dimension 1 of x at 40, its size at the captured shape, and the task's "
                    "shapes move it (33, 40, 4096)")


def test_a_layout_is_judged_at_draws_that_empty_no_dimension_and_reads_inductors_max_guards():
    from kernel_tui.core.inductor.symbolic import is_contiguous, same_numel

    # L1-43's pooled output: its strides guard each size with max(1, ...), and s53 = 3 would empty a dimension
    sizes = ("s77", "s27", "(-3 + s53) // 2", "(-3 + s0) // 2")
    strides = ("s27 * max(1, 1 + (-5 + s53) // 2) * max(1, 1 + (-5 + s0) // 2)",
               "max(1, 1 + (-5 + s53) // 2) * max(1, 1 + (-5 + s0) // 2)", "max(1, 1 + (-5 + s0) // 2)", "1")
    assert is_contiguous(sizes, strides)
    assert not is_contiguous(sizes, (strides[0], strides[1], "1", "max(1, 1 + (-5 + s53) // 2)"))  # transposed
    assert not is_contiguous(("s0 - 97 - 20000",), ("1",))  # no draw leaves the size at least 1: no judgment
    assert same_numel(("s0 * s1",), ("s1", "s0")) and not same_numel(("s0 * s1",), ("s1", "s1"))


def test_without_a_recorded_config_a_short_rows_reduction_takes_rows_not_lanes():
    from kernel_tui.core.inductor.launch import default_config

    kernels = parse_generated(generated_source("rms_norm")).kernels.values()
    kernel = next(k for k in kernels if k.heuristic == "reduction")
    for hints, xblock, width in [({"x": 32768, "r0_": 4}, 64, 4), ({"x": 2, "r0_": 40}, 2, 64),
                                 ({"x": 64, "r0_": 4096}, 1, 1024), ({"x": 64, "r0_": 1024}, 1, 1024)]:
        config = default_config(replace(kernel, size_hints=hints))
        assert (config.kwargs["XBLOCK"], config.kwargs["R0_BLOCK"]) == (xblock, width), hints


def test_a_scan_carries_its_combine_function_and_its_running_total_across_blocks(tmp_path: Path):
    """Cumsum (tests/data/inductor/cumsum_dim1, KernelBench L1-89): the scan's combine function, defined beside
    the kernel in its module, comes along, and select_one (the block's last value, carried into the next block)
    is the start's own; 16-wide blocks make the interpreter shapes' rows of 40 and 33 span three blocks."""
    source = small_reduction_start("cumsum_dim1")
    assert "triton_helpers" not in source and "def _triton_helper_fn_add0(" in source
    assert "tl.associative_scan((tmp2,), 1, _triton_helper_fn_add0)" in source and "def select_one(" in source
    check_on_interpreter(task_dir("cumsum_dim1"), source, tmp_path)


def test_a_zero_dimensional_buffer_is_allocated_with_empty_sizes(tmp_path: Path):
    """Frobenius norm (tests/data/inductor/frobenius_norm, KernelBench L1-37): the norm is a 0-d buffer between
    two reductions and the division; its sizes are `()`, which the rewrite wrote as "(,)", no Python."""
    source = small_reduction_start("frobenius_norm")
    assert "torch.empty_strided((), (), dtype=torch.float32" in source
    check_on_interpreter(task_dir("frobenius_norm"), source, tmp_path)


def test_a_combine_function_two_kernels_name_alike_is_kept_once_or_renamed():
    from kernel_tui.core.inductor.kernels import rewrite_kernel

    capture = json.loads((task_dir("cumsum_dim1") / "capture.json").read_text())
    kernel = next(iter(parse_generated(capture["code"]).kernels.values()))
    taken: dict[str, str] = {}
    first, _ = rewrite_kernel(kernel, single_shape=False, taken=taken)
    again, _ = rewrite_kernel(kernel, single_shape=False, taken=taken)
    assert first.count("def _triton_helper_fn_add0(") == 1 and "def _triton_helper_fn_add0(" not in again
    clash = {"_triton_helper_fn_add0": "@triton.jit\ndef _triton_helper_fn_add0(a, b):\n    return a * b"}
    renamed, _ = rewrite_kernel(kernel, single_shape=False, taken=clash)
    assert "def _triton_helper_fn_add0_2(" in renamed and ", 1, _triton_helper_fn_add0_2)" in renamed
    assert set(clash) == {"_triton_helper_fn_add0", "_triton_helper_fn_add0_2"}


def test_a_kernel_writing_through_a_view_further_into_its_buffer_takes_the_buffer_and_the_offset(tmp_path: Path):
    """Exclusive cumsum (tests/data/inductor/cumsum_exclusive, KernelBench L1-92): Inductor scans into a view of
    the output one element in and zeroes the first column through another; the first kernel takes the output
    and `out_ptr0_offset=1`, which it adds to its pointer."""
    source = small_reduction_start("cumsum_exclusive")
    assert "as_strided" not in source and "out_ptr0_offset=1" in source
    assert "tl.store(out_ptr0 + out_ptr0_offset + (r0_1 + ks0 * x0)" in source
    check_on_interpreter(task_dir("cumsum_exclusive"), source, tmp_path)


def test_a_view_further_in_is_refused_where_it_is_more_than_a_kernels_argument():
    capture = json.loads((task_dir("cumsum_exclusive") / "capture.json").read_text())
    spec = spec_of("cumsum_exclusive")
    kernel = "triton_red_fused_cumsum_slice_0"
    launch = next(line for line in capture["code"].split("\n") if f"{kernel}.run(" in line)
    cases = {"launched both ways": capture["code"].replace(launch, f"{launch}\n{launch.replace('buf0', 'buf2')}"),
             "used other than as a kernel": capture["code"].replace(launch, f"{launch}\n        n = buf0.size()")}
    for code in cases.values():
        with pytest.raises(Refusal, match="the middle of a buffer"):
            rewrite(parse_generated(code), launch_arguments=list(spec.launch_arguments),
                    placeholders=capture["placeholders"], outputs=["out"])
