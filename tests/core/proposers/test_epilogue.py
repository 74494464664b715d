"""Epilogue fusion: offered where the host launches an elementwise kernel over a tl.dot kernel's scratch output, and
nowhere the pattern is not all there; once only; the tail computed in the types the second kernel used; composed
with the other structural moves; passing the policy; and correct on the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_tui.core.proposers.search_steps import FAVOURED_KINDS, INTERPRETER_IGNORES
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from tests.conftest import DATA, FIXTURE_NAMES, FIXTURES

TASK = DATA / "matmul_leaky_relu"
KID = "kernel:matmul_kernel:epilogue"
TAIL = "    y = tl.where(x > 0, x, x * slope)\n"
LAUNCH = "    leaky_relu_kernel[(triton.cdiv(M * N, BLOCK_SIZE),)](t, c, M * N, slope, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)\n"
ALLOC = "    t = torch.empty((M, N), device=c.device, dtype=c.dtype)\n"
GEMM_STORE = "    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])\n"


def baseline() -> str:
    return (TASK / "baseline.py").read_text(encoding="utf-8")


def fusions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "epilogue"]


def fuse(source: str) -> str:
    a = analyze(source)
    (action,) = [x for x in a.actions() if x.kind == "epilogue"]
    return a.apply(action)


def then(source: str, kind: str) -> str:
    a = analyze(source)
    return a.apply(next(x for x in a.actions() if x.kind == kind))


def variant(*pairs: tuple[str, str]) -> str:
    src = baseline()
    for old, new in pairs:
        assert old in src, old
        src = src.replace(old, new)
    return src


def test_the_gemm_applies_the_leaky_relu_before_its_store_once():
    src = baseline()
    (action,) = fusions(src)
    assert "epilogue" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == (KID, "separate kernel", "fused")
    assert action.change == ("elementwise epilogue leaky_relu_kernel fused into the GEMM matmul_kernel (applied to the "
                             "tile before its store: no round trip through memory, one launch fewer)")
    out = fuse(src)
    assert ("    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn\n"
            "    x = acc.to(c_ptr.dtype.element_ty)\n"
            "    y = tl.where(x > 0, x, x * slope)\n"
            "    tl.store(c_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])\n") in out
    assert "    BLOCK_K: tl.constexpr,\n    slope,\n):\n" in out
    # c for the scratch tensor, with the scratch tensor's strides: element (m, n) at m·N + n, as the second kernel wrote
    assert "        b.stride(1),\n        N,\n        1,\n        BLOCK_M=BLOCK_M," in out
    assert "        num_stages=2,\n        slope=slope,\n    )\n" in out
    # the scratch tensor, the second launch, the second kernel and the block only it used: gone
    assert "torch.empty" not in out and "leaky_relu_kernel" not in out and "BLOCK_SIZE" not in out
    assert "BLOCK_K = 32\n\n\n@triton.jit\ndef matmul_kernel(" in out
    assert "    tl.store(c_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])\n\n\ndef launch(" in out
    b = analyze(out)
    assert b.knobs[KID].value == "fused" and b.knobs[KID].domain == ("fused",)
    assert not fusions(out)  # once
    assert {"const:BLOCK_M", "const:BLOCK_K", "kernel:matmul_kernel:k_mask", "loop:matmul_kernel:0:unroll"} <= set(b.knobs)


def test_the_tail_is_computed_in_the_types_the_second_kernel_used():
    # a fp32 scratch tensor: the accumulator rounded to fp32 (no change), the store casts to c's type as before
    out = fuse(variant((ALLOC, ALLOC.replace("dtype=c.dtype", "dtype=torch.float32")),
                       (GEMM_STORE, GEMM_STORE.replace("acc.to(c_ptr.dtype.element_ty)", "acc"))))
    assert "    x = acc.to(tl.float32)\n" + TAIL + "    tl.store(c_ptrs, y, mask=" in out
    # a cast to another type before the store into the scratch tensor: both, in order
    out = fuse(variant((ALLOC, ALLOC.replace("dtype=c.dtype", "dtype=torch.float32")),
                       (GEMM_STORE, GEMM_STORE.replace("c_ptr.dtype.element_ty", "tl.float16"))))
    assert "    x = acc.to(tl.float16).to(tl.float32)\n" in out
    # the second kernel upcast what it loaded and cast to its output's type: so does the GEMM, in its names
    out = fuse(variant(("x = tl.load(x_ptr + offsets, mask=mask)", "x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)"),
                       ("tl.store(y_ptr + offsets, y, mask=mask)", "tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)")))
    assert "    x = acc.to(c_ptr.dtype.element_ty).to(tl.float32)\n" + TAIL in out
    assert "    tl.store(c_ptrs, y.to(c_ptr.dtype.element_ty), mask=" in out
    # the scratch tensor's type named through its pointer in the second kernel: t's type in the GEMM
    out = fuse(variant((ALLOC, ALLOC.replace("dtype=c.dtype", "dtype=torch.float32")),
                       ("mask=mask)\n    y =", "mask=mask).to(x_ptr.dtype.element_ty)\n    y =")))
    assert "    x = acc.to(c_ptr.dtype.element_ty).to(tl.float32).to(tl.float32)\n" not in out
    assert "    x = acc.to(tl.float32).to(tl.float32)\n" in out


@pytest.mark.parametrize("tail, expected", [
    ("    y = tl.maximum(x, 0.0)\n", "    y = tl.maximum(x, 0.0)\n"),
    ("    xf = x.to(tl.float32)\n    y = (xf / (1.0 + tl.exp(-xf))).to(x.dtype)\n",
     "    xf = x.to(tl.float32)\n    y = (xf / (1.0 + tl.exp(-xf))).to(x.dtype)\n"),
    ("    y = tl.where(x > 0, x, x * slope) * SCALE\n", "    y = tl.where(x > 0, x, x * slope) * SCALE\n"),
    ("    y = tl.where(\n        x > 0,\n        x,\n        x * slope,\n    )\n",
     "    y = tl.where(\n        x > 0,\n        x,\n        x * slope,\n    )\n"),
])
def test_other_elementwise_tails(tail, expected):
    src = variant((TAIL, tail), ("BLOCK_SIZE = 1024\n", "BLOCK_SIZE = 1024\nSCALE: tl.constexpr = 2.0\n"))
    out = fuse(src)
    assert "    x = acc.to(c_ptr.dtype.element_ty)\n" + expected + "    tl.store(c_ptrs, y, mask=" in out
    assert ("slope" in tail) == ("    slope,\n):\n" in out)  # a scalar parameter only where the tail reads it


def test_the_other_spellings_of_the_second_launch_and_kernel():
    inline = variant(("    mask = offsets < n_elements\n", ""), ("mask=mask)\n    y", "mask=offsets < n_elements)\n    y"),
                     ("y, mask=mask)", "y, mask=offsets < n_elements)"))
    numel = variant((LAUNCH, LAUNCH.replace("M * N", "t.numel()")))
    named = variant((ALLOC, ALLOC + "    tail_grid = (triton.cdiv(N * M, BLOCK_SIZE),)\n"),
                    (LAUNCH, "    leaky_relu_kernel[tail_grid](t, c, N * M, slope, BLOCK_SIZE=BLOCK_SIZE)\n"))
    literal = variant((LAUNCH, LAUNCH.replace(", slope, ", ", -0.5, ")))
    zeros = variant((ALLOC, ALLOC.replace("torch.empty((M, N),", "torch.zeros(M, N,")))
    for src in (inline, numel, zeros):
        assert "    tl.store(c_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])\n" in fuse(src)
    assert "    tl.store(c_ptrs, y, mask=" in fuse(named) and "tail_grid" not in fuse(named)  # its grid goes with it
    assert "        slope=-0.5,\n    )\n" in fuse(literal)


def test_it_composes_with_the_other_structural_moves():
    src = baseline()
    for first, second in (("k_mask", "epilogue"), ("epilogue", "k_mask"), ("launch_order", "epilogue"),
                          ("epilogue", "launch_order"), ("loads", "epilogue"), ("epilogue", "grid")):
        out = then(then(src, first), second)
        assert "    y = tl.where(x > 0, x, x * slope)\n" in out and "leaky_relu_kernel" not in out, (first, second)
        assert analyze(out).knobs[KID].value == "fused"
    assert "if EVEN_K:" in then(fuse(src), "k_mask") and "EVEN_K=K % BLOCK_K == 0" in fuse(then(src, "k_mask"))
    # a persistent GEMM stores inside its loop over tiles: fused first, then made persistent, only
    assert not fusions(then(src, "grid"))
    assert not [x for x in analyze(fuse(src)).actions() if x.kind == "split_k"]  # it stores more than the sum


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_not_offered_on_the_fixtures_of_one_kernel(name):
    source = (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")
    assert not fusions(source)
    assert not [k for k in analyze(source).knobs if k.endswith(":epilogue")]


NOT_THE_PATTERN = {
    "a tail that reads another tensor (a bias)": (TAIL, "    y = tl.where(x > 0, x, x * slope) + tl.load(x_ptr + offsets, mask=mask)\n"),
    "a tail that reads the offsets": (TAIL, "    y = tl.where(offsets > 0, x, x * slope)\n"),
    "a tail that calls no elementwise function": (TAIL, "    y = tl.sum(x, axis=0) + x\n"),
    "a tail that indexes": (TAIL, "    y = tl.where(x > 0, x, x * slope)[None, :]\n"),
    "an intermediate of another shape": (ALLOC, ALLOC.replace("(M, N)", "(M, N + 1)")),
    "an intermediate shaped by its argument": (ALLOC, "    t = torch.empty_like(c)\n"),
    "an intermediate with no dtype": (ALLOC, ALLOC.replace(", dtype=c.dtype", "")),
    "an intermediate of a type the kernel cannot name": (ALLOC, ALLOC.replace("dtype=c.dtype", "dtype=a.dtype")),
    "an intermediate the caller passes": (
        "slope: float) -> None:\n" + ALLOC, "slope: float, t: torch.Tensor) -> None:\n"),
    "the intermediate read after the launches": (LAUNCH, LAUNCH + "    c.add_(t)\n"),
    "a statement between the launches": (LAUNCH, "    c.zero_()\n" + LAUNCH),
    "a grid bound between the launches": (LAUNCH, "    tail_grid = (triton.cdiv(M * N, BLOCK_SIZE),)\n"
                                          + LAUNCH.replace("[(triton.cdiv(M * N, BLOCK_SIZE),)]", "[tail_grid]")),
    "the tail over fewer elements than the tile writes": (LAUNCH, LAUNCH.replace(", M * N, slope", ", M * N - 1, slope")),
    "a grid that does not cover the elements": (LAUNCH, LAUNCH.replace("(triton.cdiv(M * N, BLOCK_SIZE),)", "(4,)")),
    "a scalar passed as an expression": (LAUNCH, LAUNCH.replace(", slope, ", ", slope * 2, ")),
    "the output a GEMM operand too": (LAUNCH, LAUNCH.replace("(t, c,", "(t, a,")),
    "the GEMM's strides not the intermediate's own": ("        t.stride(0),\n", "        N,\n"),
    "a GEMM store mask without the column bound": (GEMM_STORE, GEMM_STORE.replace(" & mask_n[None, :]", "")),
    "a GEMM storing something else than its sum": (GEMM_STORE, GEMM_STORE.replace("acc.to(", "(acc * 2).to(")),
    "the tail stored at other offsets": ("tl.store(y_ptr + offsets, y,", "tl.store(y_ptr + offsets + 1, y,"),
    "the tail loaded at other offsets": ("tl.load(x_ptr + offsets,", "tl.load(x_ptr + offsets // 2,"),
    "an unmasked tail": (("    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"),
                         "    x = tl.load(x_ptr + offsets)\n"),
    "a tail name the GEMM uses": ("    y = tl.where(x > 0, x, x * slope)\n    tl.store(y_ptr + offsets, y,",
                                  "    acc = tl.where(x > 0, x, x * slope)\n    tl.store(y_ptr + offsets, acc,"),
    "an autotuned elementwise kernel": ("@triton.jit\ndef leaky_relu_kernel", "@triton.autotune(configs=[triton.Config("
                                        "{}, num_warps=4)], key=['n_elements'])\n@triton.jit\ndef leaky_relu_kernel"),
    "the elementwise kernel launched twice": (LAUNCH, LAUNCH + LAUNCH.replace("(t, c,", "(c, c,")),
    "the elementwise kernel named elsewhere": (ALLOC, ALLOC + "    assert leaky_relu_kernel is not None\n"),
}


@pytest.mark.parametrize("why", sorted(NOT_THE_PATTERN))
def test_not_offered_where_the_pattern_is_not_all_there(why):
    old, new = NOT_THE_PATTERN[why]
    src = baseline()
    assert old in src, why
    changed = src.replace(old, new)
    analyze(changed)  # read without an exception
    assert not fusions(changed), why
    assert fusions(src)


def test_a_gemm_with_its_epilogue_written_in_says_so_and_offers_nothing():
    fused = fuse(baseline())
    assert analyze(fused).knobs[KID].value == "fused"
    matmul = (FIXTURES / "matmul" / "baseline.py").read_text(encoding="utf-8")
    assert "kernel:matmul_kernel:epilogue" not in analyze(matmul).knobs  # its store stores the sum
    cast = GEMM_STORE.replace("acc.to(c_ptr.dtype.element_ty)", "out")
    cast_first = matmul.replace(GEMM_STORE, "    out = acc.to(c_ptr.dtype.element_ty)\n" + cast)
    assert "kernel:matmul_kernel:epilogue" not in analyze(cast_first).knobs  # a cast is no epilogue
    by_hand = matmul.replace(GEMM_STORE, "    out = tl.maximum(acc, 0.0).to(c_ptr.dtype.element_ty)\n" + cast)
    assert analyze(by_hand).knobs[KID].value == "fused"
    assert not [x for x in analyze(by_hand).actions() if x.kind == "epilogue"]


def test_the_rewrites_pass_the_policy():
    from kernel_tui.core.evaluator.evaluator import policy_rejection
    from kernel_tui.core.task import load_task

    task = load_task(TASK)
    for source in (baseline(), fuse(baseline()), then(fuse(baseline()), "k_mask"), then(fuse(baseline()), "grid")):
        assert policy_rejection(task, source, "cpu") is None


def test_the_search_and_the_agent_name_it():
    from kernel_tui.core.describe import describe_change
    from kernel_tui.core.proposers.llm_tools import structural_moves

    assert all("epilogue" in kinds for kinds in FAVOURED_KINDS.values())
    assert "epilogue" not in INTERPRETER_IGNORES  # the interpreter runs the second kernel's work too: it gains there
    assert any(m.startswith("elementwise epilogue leaky_relu_kernel fused into the GEMM") for m in structural_moves(baseline()))
    assert describe_change(baseline(), fuse(baseline())) == "epilogue fused into the GEMM"
    assert describe_change(baseline(), then(fuse(baseline()), "k_mask")) == (
        "unmasked K loop when K is a multiple of its block, epilogue fused into the GEMM")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_fused_kernels_pass_correctness_on_the_interpreter(tmp_path: Path):
    from kernel_tui.core.evaluator import Evaluator, Status
    from kernel_tui.core.task import load_task

    src = baseline()
    fp32 = variant((ALLOC, ALLOC.replace("dtype=c.dtype", "dtype=torch.float32")),
                   ("mask=mask)\n    y =", "mask=mask).to(tl.float32)\n    y ="))
    sources = [
        ("fused", fuse(src)),
        ("the unmasked K loop, then fused", fuse(then(src, "k_mask"))),
        ("fused, then grouped", then(fuse(src), "launch_order")),
        ("fused, then persistent", then(fuse(src), "grid")),
        ("an fp32 intermediate, fused", fuse(fp32)),
        ("inline masks, fused", fuse(variant(("    mask = offsets < n_elements\n", ""),
                                             ("mask=mask)\n    y", "mask=offsets < n_elements)\n    y"),
                                             ("y, mask=mask)", "y, mask=offsets < n_elements)")))),
    ]
    ev = Evaluator(load_task(TASK), device="cpu", workdir=tmp_path)
    failures = []
    for change, source in [("unfused", src), ("an fp32 intermediate, unfused", fp32), *sources]:
        result = ev.check(source)
        if result.status is not Status.ok:
            failures.append(f"{change}: {result.status.value}: {result.reason}")
    assert not failures, failures
    broken = fuse(src).replace("x * slope)", "x * slope * 2)")  # the check sees a wrong tail
    assert ev.check(broken).status is not Status.ok
