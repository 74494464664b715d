"""What torch.compile generated on an H200 (tests/data/inductor_gpu): GEMM templates and autotuned kernels
rewritten into starts the policy passes, the interpreter finds correct at the interpreter shapes, and the search
can move; a template the rewrite does not know is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_tui.core.inductor import Refusal, parse_generated, rewrite
from kernel_tui.core.policy import check_source
from kernel_tui.core.proposers.base import ProposerContext
from kernel_tui.core.proposers.search import SearchProposer, state_key
from kernel_tui.core.proposers.transforms import analyze
from kernel_tui.core.task import load_spec
from tests.conftest import DATA
from tests.core.inductor.support import check_on_interpreter

SAMPLES = DATA / "inductor_gpu"
STARTS = ["matmul_square", "batched_matmul", "linear_scale_leaky_relu", "linear_swish_scale", "softmax_rows",
          "matmul_3d", "avg_pool2d_wide_index"]


def captured(name: str) -> dict:
    return json.loads((SAMPLES / name / "capture.json").read_text(encoding="utf-8"))


def start(name: str, code: str | None = None) -> str:
    spec, cap = load_spec(SAMPLES / name / "task.json"), captured(name)
    return rewrite(parse_generated(code or cap["code"]), launch_arguments=list(spec.launch_arguments),
                   placeholders=cap["placeholders"], outputs=[t.name for t in spec.tensors if t.kind == "output"],
                   configs=cap["configs"] or None, single_shape=False)


@pytest.mark.parametrize("name", STARTS)
def test_the_start_passes_the_policy_and_is_correct_on_the_interpreter(name, tmp_path: Path):
    spec = load_spec(SAMPLES / name / "task.json")
    source = start(name)
    report = check_source(source, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                          tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
    assert report.ok, report.violations
    check_on_interpreter(SAMPLES / name, source, tmp_path)


def test_a_template_is_a_plain_kernel_with_its_tiles_as_constants_and_its_grid_from_them():
    source = start("matmul_square")
    assert "triton_heuristics" not in source and "@triton.jit" in source
    assert "BLOCK_M_0 = 128" in source and "BLOCK_N_0 = 128" in source and "GROUP_M_0 = 8" in source
    assert "BLOCK_M: tl.constexpr = " not in source  # moved out of the body into the parameters
    assert "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr)" in source
    assert "[(triton.cdiv(s85, BLOCK_M_0) * triton.cdiv(s86, BLOCK_N_0), 1, 1)]" in source
    assert "num_warps=8, num_stages=2" in source  # the template decorator's choice


def test_a_kernel_with_64_bit_indexing_keeps_its_grid():
    # Inductor widens the program's index (`tl.program_id(0).to(tl.int64) * XBLOCK`) where an index can pass 2**31
    # (L1-45's 16x64x2048x2048 input); the axis is still x, its programs cdiv(xnumel, XBLOCK)
    source = start("avg_pool2d_wide_index")
    assert "xoffset = tl.program_id(0).to(tl.int64) * XBLOCK" in source
    assert "[(triton.cdiv(triton_red_fused_avg_pool2d_0_xnumel, XBLOCK_0),)]" in source
    code = captured("avg_pool2d_wide_index")["code"]
    for cast in ("tl.program_id(0).to(tl.int32)", "tl.program_id(0).to(tl.int64, bitcast=True)"):
        with pytest.raises(Refusal, match="xoffset is not tl.program_id"):  # any other cast: not read as an axis
            start("avg_pool2d_wide_index", code.replace("tl.program_id(0).to(tl.int64)", cast))


def test_a_batched_template_keeps_the_batch_axis():
    source = start("batched_matmul")
    assert "s85 = A.shape[0]" in source
    assert "* triton.cdiv(s68, BLOCK_N_0), s85, 1)]" in source or ", s85, 1)]" in source


def test_an_epilogue_fused_into_the_template_stays_in_it():
    source = start("linear_scale_leaky_relu")
    assert source.count("\n@triton.jit\n") == 1 and "tl.where(tmp5, tmp3, tmp7)" in source and "acc" in source


def test_the_search_can_move_the_tiles_warps_and_stages():
    knobs = analyze(start("linear_swish_scale")).knobs
    assert knobs["const:BLOCK_M_0"].value == 128 and knobs["const:BLOCK_K_0"].value == 32
    assert knobs["const:GROUP_M_0"].kind == "group"
    assert knobs["launch:triton_tem_fused_addmm_t_0:0:num_stages"].value == 3
    assert knobs["const:XBLOCK_1"].value == 1024  # the autotuned epilogue kernel's kept block


def test_an_fp32_gemm_says_its_dot_precision_so_the_search_can_offer_the_tensor_cores():
    # Inductor writes tl.dot(..., allow_tf32=ALLOW_TF32) with `ALLOW_TF32: tl.constexpr = False` for fp32; Triton
    # reads that as input_precision="ieee" (the FMA units), and so does the start, written out
    source = start("matmul_square")
    assert 'tl.dot(a, b, input_precision="ieee", out_dtype=ACC_TYPE)' in source.replace("'", '"')
    assert "allow_tf32" not in source and "ALLOW_TF32" not in source
    assert "USE_FAST_ACCUM: tl.constexpr = False" in source  # the template's other flags stay as they were
    knob = analyze(source).knobs["kernel:triton_tem_fused_mm_0:input_precision"]
    assert knob.value == "ieee" and "tf32x3" in knob.domain
    # the search's first move on this compute-bound fp32 GEMM (4096x4096 out, 132 SMs) is onto the tensor cores
    first = SearchProposer(seed=0).propose(ProposerContext(round=1, best_source=source, baseline_source=source,
                                                           history=[], bottleneck="compute", sm_count=132,
                                                           output_elements=4096 * 4096))
    assert first is not None and 'input_precision="tf32x3"' in first.source.replace("'", '"')
    code = captured("matmul_square")["code"]
    assert "ALLOW_TF32 : tl.constexpr = False" in code  # the capture as Inductor wrote it
    tf32 = start("matmul_square", code.replace("ALLOW_TF32 : tl.constexpr = False", "ALLOW_TF32 : tl.constexpr = True"))
    assert 'input_precision="tf32"' in tf32.replace("'", '"')
    # a flag the rewrite cannot read as a literal stays Triton's to decide
    kept = start("matmul_square", code.replace("allow_tf32=ALLOW_TF32", "allow_tf32=ALLOW_TF32 and EVEN_K"))
    assert "allow_tf32=ALLOW_TF32 and EVEN_K" in kept and "ALLOW_TF32: tl.constexpr = False" in kept


def test_a_grid_that_is_not_the_tile_count_is_refused():
    code = captured("matmul_square")["code"].replace("((127 + s85) // 128)*((127 + s86) // 128), 1, 1",
                                                     "((63 + s85) // 64)*((127 + s86) // 128), 1, 1")
    with pytest.raises(Refusal) as exc:
        start("matmul_square", code)
    assert "is not the tile count of M and N" in str(exc.value) and "\n" not in str(exc.value)


def test_a_template_that_is_no_gemm_is_refused():
    code = captured("matmul_square")["code"].replace("    GROUP_M : tl.constexpr = 8\n", "")
    with pytest.raises(Refusal) as exc:
        start("matmul_square", code)
    assert "without the GEMM's GROUP_M" in str(exc.value) and "keep the eager start" in str(exc.value)


def test_an_output_returned_as_a_reshape_of_its_buffer_is_written_through_directly():
    source = start("matmul_3d")  # the GEMM's (N*M, L) buffer, returned as (N, M, L)
    assert "torch.empty_strided" not in source and "](A, B, out, " in source


def test_a_returned_view_that_is_no_reshape_is_refused():
    code = captured("matmul_3d")["code"]
    assert "(s84*s86, s86, 1), 0)" in code
    for changed in ("(s84*s86, 1, s84), 0)", "(s84*s86, s86, 1), 7)"):  # transposed; not at the start
        with pytest.raises(Refusal) as exc:
            start("matmul_3d", code.replace("(s84*s86, s86, 1), 0)", changed))
        assert "not a plain row-major buffer to write out through" in str(exc.value)


def test_a_view_into_the_middle_of_a_buffer_is_refused_where_no_kernel_takes_it():
    code = captured("matmul_3d")["code"].replace(
        "        return (reinterpret_tensor(buf0,", "        buf9 = reinterpret_tensor(buf0, (s86, ), (1, ), s86)\n"
        "        n9 = buf9.size()\n        return (reinterpret_tensor(buf0,")
    with pytest.raises(Refusal) as exc:
        start("matmul_3d", code)
    assert "buf9, a view into the middle of a buffer, is used other than as a kernel's argument" in str(exc.value)


def test_an_output_row_major_at_every_task_shape_is_written_straight_through(tmp_path: Path):
    """L2-30 (gemm_group_norm_hardtanh): the returned buffer's row stride is `max(1, 16*(s35 // 16))`, which random
    sizes break but every channel count GroupNorm's 16 groups accept keeps: judged at the task's own shapes, the
    output is written straight through; the check on the device then confirms it at each one."""
    from kernel_tui.core.inductor import symbolic
    from kernel_tui.core.inductor.launch import symbol_values

    name = "gemm_group_norm_hardtanh"
    spec, cap = load_spec(SAMPLES / name / "task.json"), captured(name)
    generated = parse_generated(cap["code"])
    sizes = symbol_values(generated, cap["placeholders"], spec)
    assert [env["s35"] for env in sizes] == [8192, 64, 64]  # the channels: gemm_weight's first size
    assert [env["s77"] for env in sizes] == [1024, 32, 31]  # the rows: x's first size
    stride = ("s77", "s35"), ("max(1, 16*(s35 // 16))", "1")
    assert not symbolic.is_contiguous(*stride)  # at random draws
    assert symbolic.contiguous_at(*stride, sizes)
    assert not symbolic.contiguous_at(*stride, [*sizes, {"s77": 8, "s35": 40}])  # 40 channels: rows 32 apart
    assert not symbolic.contiguous_at(*stride, [{"s77": 8}])  # a symbol without a value decides nothing

    def start_from(task_sizes):
        small = {k.name: {"kwargs": {"XBLOCK": 1, "R0_BLOCK": 16}, "num_warps": 4, "num_stages": 1}
                 for k in generated.kernels.values() if k.heuristic == "reduction"}
        return rewrite(generated, launch_arguments=list(spec.launch_arguments), placeholders=cap["placeholders"],
                       outputs=["out"], configs={**cap["configs"], **small}, task_sizes=task_sizes)

    with pytest.raises(Refusal, match="returned buf4 is not a plain row-major buffer"):
        start_from(None)
    source = start_from(sizes)
    assert "buf4" not in source and ", out, s35, " in source  # the pointwise kernel stores into the output
    assert check_source(source, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                        tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"]).ok
    check_on_interpreter(SAMPLES / name, source, tmp_path)


def test_coupled_moves_stay_in_one_kernel_beside_an_elementwise_epilogue():
    # GEMM template + Inductor's elementwise kernel after it: a tile of the GEMM moves with the GEMM's warps,
    # never the epilogue's block with them (on L2-12 such pairs took three of five rounds, each the warps' loss)
    source = start("linear_swish_scale")
    p = SearchProposer(seed=0)
    analysis = p._analyze(source)
    p.model.register(analysis)
    pairs = [c for c in p._candidates(analysis, state_key(analysis.assignment)) if len(c.parts) == 2]
    knobs = analysis.knobs
    assert any(knobs[c.parts[1].split("=")[0]].kind == "num_warps" for c in pairs), "the GEMM's tile with its warps"
    epilogue = {k for k, knob in knobs.items() if knob.kind == "block" and not knob.dot}
    assert epilogue, "the epilogue kernel has a block of its own"
    for c in pairs:
        tile, partner = (knobs[part.split("=")[0]] for part in c.parts)
        assert tile.id not in epilogue and partner.id not in epilogue, c.change
        assert tile.kernels & partner.kernels, c.change


def test_a_spilling_gemm_start_is_offered_the_tensor_cores_with_a_lighter_thread_first():
    # Inductor's x @ W.T template (B K-major, as TF32 wgmma takes it) at 128x128x32 with 4 warps: compiled for
    # sm_90 it spills (bench/results/2026-12-07-cpu-tf32x3-compile), so tf32x3 alone is held back; its split
    # operands take registers. With 8 warps it does not spill. With 8 warps, or half the output tile, it goes first.
    from kernel_tui.core.evaluator.kernel_facts import KernelFacts

    source = start("linear_swish_scale")
    gemm = "triton_tem_fused_addmm_t_0"

    def resources(candidate: str) -> list[KernelFacts]:
        spills = 46 if candidate == source else 0
        return [KernelFacts(name=gemm, registers=255 if spills else 211, spills=spills, num_warps=4, num_stages=3)]

    p = SearchProposer(seed=0, resources=resources)
    first = p.propose(ProposerContext(round=1, best_source=source, baseline_source=source, history=[],
                                      bottleneck="compute", sm_count=132, output_elements=1024 * 8192))
    assert first is not None
    assert first.change in {f"input_precision ieee → tf32x3 (tl.dot of {gemm}), then {move} ({gemm})"
                            for move in ("num_warps 4 → 8", "block_m_0 128 → 64", "block_n_0 128 → 64")}
    assert "input_precision='tf32x3'" in first.source.replace('"', "'")
