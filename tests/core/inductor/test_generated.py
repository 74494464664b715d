"""Reading Inductor's generated modules: kernels, launches, allocations, reuse aliases, extern calls."""

from __future__ import annotations

from kernel_tui.core.inductor import parse_generated
from kernel_tui.core.inductor.generated import (
    Alias,
    Alloc,
    AssertSizeStride,
    Bind,
    ExternCall,
    Launch,
    Return,
    Unpack,
)
from tests.core.inductor.support import generated_source


def test_a_pointwise_kernel_and_its_launch():
    g = parse_generated(generated_source("gelu"))
    (kernel,) = g.kernels.values()
    assert kernel.name == "triton_poi_fused_gelu_0" and kernel.heuristic == "pointwise"
    assert kernel.size_hints == {"x": 8192} and kernel.grid_type == "Grid1D"
    assert kernel.signature == {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    assert kernel.constexprs == ("XBLOCK",) and kernel.runtime_params == ("in_ptr0", "out_ptr0", "xnumel")
    assert g.of(Unpack) == [Unpack(("arg0_1", "arg1_1", "arg2_1"))]
    assert g.of(Bind)[:2] == [Bind("s77", "arg0_1"), Bind("s27", "arg1_1")]
    assert g.of(Bind)[2] == Bind("triton_poi_fused_gelu_0_xnumel", "s27 * s77")
    assert g.of(AssertSizeStride) == [AssertSizeStride("arg2_1", ("s77", "s27"), ("s27", "1"))]
    assert g.of(Alloc) == [Alloc("buf0", ("s77", "s27"), ("s27", "1"), "torch.float32", "empty_strided_cpu")]
    assert g.of(Launch) == [Launch("triton_poi_fused_gelu_0", ("arg2_1", "buf0", "triton_poi_fused_gelu_0_xnumel"))]
    assert g.of(Return) == [Return(("buf0",))]


def test_reductions_a_reuse_alias_and_a_static_persistent_reduction():
    g = parse_generated(generated_source("softmax_rows"))
    (kernel,) = g.kernels.values()
    assert kernel.heuristic == "reduction" and kernel.constexprs == ("XBLOCK", "R0_BLOCK")
    assert g.of(Alias) == [Alias("buf3", "buf1")]
    assert g.of(Launch)[0].args == ("buf3", "arg2_1", "s27", "s77", "s27")
    static = parse_generated(generated_source("softmax_one_shape", "static"))
    (persistent,) = static.kernels.values()
    assert persistent.heuristic == "persistent_reduction" and persistent.constexprs == ("XBLOCK",)
    assert static.of(Launch)[0].args == ("buf3", "arg0_1", "128", "300")
    assert static.of(AssertSizeStride)[0].sizes == ("128", "300")


def test_an_extern_call_is_found_with_its_target():
    g = parse_generated(generated_source("linear_relu"))
    (extern,) = g.of(ExternCall)
    assert extern.target == "extern_kernels.addmm" and "reinterpret_tensor(arg4_1" in extern.text
    assert g.of(Alias) == [Alias("buf1", "buf0")]
    assert [op.kernel for op in g.of(Launch)] == ["triton_poi_fused_relu_0"]


def test_older_launches_with_a_grid_keyword_and_a_device_guard():
    source = generated_source("gelu").replace(
        "triton_poi_fused_gelu_0.run(arg2_1, buf0, triton_poi_fused_gelu_0_xnumel, stream=raw_streamNone)",
        "with torch.cuda._DeviceGuard(0):\n"
        "            triton_poi_fused_gelu_0.run(arg2_1, buf0, triton_poi_fused_gelu_0_xnumel, "
        "grid=grid(triton_poi_fused_gelu_0_xnumel), stream=stream0)")
    assert "_DeviceGuard" in source
    g = parse_generated(source)
    assert g.of(Launch) == [Launch("triton_poi_fused_gelu_0", ("arg2_1", "buf0", "triton_poi_fused_gelu_0_xnumel"))]
