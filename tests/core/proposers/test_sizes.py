"""Sizes as compile-time constants: a kernel's size and stride parameters made tl.constexpr, offered where every
launch binds them to sizes and the kernel never uses them as pointers, once, nowhere on a tl.dot kernel; in the
move vocabulary; and correct on the interpreter, on the fixtures and on Inductor's starts."""

from __future__ import annotations

import pytest

from kernel_tui.core.describe import describe_change
from kernel_tui.core.policy import check_source
from kernel_tui.core.proposers import search_steps
from kernel_tui.core.proposers.llm_tools import structural_moves
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES

KID = "kernel:add_kernel:sizes"
ELEMENTWISE = [n for n in FIXTURE_NAMES if n != "matmul"]


def baseline(name: str = "vector_add") -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


def size_actions(source: str) -> list:
    return [x for x in analyze(source).actions() if x.kind == "sizes"]


def constant(source: str) -> str:
    (action,) = size_actions(source)
    return analyze(source).apply(action)


def test_the_size_parameters_become_constexpr_and_nothing_else_changes():
    src = baseline()
    (action,) = size_actions(src)
    assert "sizes" in STRUCTURAL_KINDS
    assert (action.knob, action.old, action.new) == (KID, "runtime", "compile-time")
    assert action.change == ("sizes as compile-time constants (n_elements): compiled once per shape, index math by "
                             "constants")
    out = analyze(src).apply(action)
    assert "def add_kernel(x_ptr, y_ptr, out_ptr, n_elements: tl.constexpr, BLOCK_SIZE: tl.constexpr):" in out
    assert out.replace("n_elements: tl.constexpr,", "n_elements,") == src  # the launch and the body as they were
    after = analyze(out)
    assert after.knobs[KID].value == "compile-time" and not size_actions(out)  # once: nothing more to offer
    assert describe_change(src, out) == "sizes as compile-time constants"


def test_strides_and_annotated_sizes_are_sizes_and_pointers_and_blocks_are_not():
    out = constant(baseline("softmax"))
    # n_cols is a host `int`, the strides come from x.stride(0): all three; BLOCK_SIZE was constexpr already
    assert ("def softmax_kernel(x_ptr, out_ptr, n_cols: tl.constexpr, x_row_stride: tl.constexpr, "
            "out_row_stride: tl.constexpr, BLOCK_SIZE: tl.constexpr):") in out
    assert analyze(out).knobs["kernel:softmax_kernel:sizes"].where == " (n_cols, x_row_stride, out_row_stride)"


def test_inductors_dynamic_index_math_gets_constant_divisors():
    from tests.core.inductor.test_templates import start

    src = start("avg_pool2d_wide_index")
    assert "x1 = xindex // ks0 % ks1" in src
    (action,) = size_actions(src)
    # r0_numel is assigned in the body (Inductor fixed it at 121): no parameter to specialize; the pointers never
    assert action.change.startswith("sizes as compile-time constants (ks0, ks1, ks2, ks3, ks4, xnumel):")
    out = analyze(src).apply(action)
    assert "(in_ptr0, out_ptr1, ks0: tl.constexpr, ks1: tl.constexpr, ks2: tl.constexpr, ks3: tl.constexpr, " \
           "ks4: tl.constexpr, xnumel: tl.constexpr, r0_numel, " in out


def test_not_offered_on_a_tl_dot_kernel_whose_other_moves_read_its_sizes():
    assert not size_actions(baseline("matmul"))
    assert "kernel:matmul_kernel:sizes" not in analyze(baseline("matmul")).knobs


LAUNCH = "    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)\n"
NOT_A_SIZE = {
    # (what is changed, into what, the parameters still offered)
    "launched from a loop": (LAUNCH, "    for _ in range(1):\n    " + LAUNCH, None),
    "autotuned": ("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n_elements'])\n"
                                 "@triton.jit", None),
    "jit options": ("@triton.jit", "@triton.jit(do_not_specialize=['n_elements'])", None),
    "a tensor at the launch": ("def launch(x: torch.Tensor, y: torch.Tensor, output: torch.Tensor, n_elements: int)",
                               "def launch(x: torch.Tensor, y: torch.Tensor, output: torch.Tensor, "
                               "n_elements: torch.Tensor)", None),
    "a float literal at the launch": ("output, n_elements, BLOCK", "output, 0.5, BLOCK", None),
    "an addend of a pointer": ("offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
                               "offsets = n_elements + pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)", None),
    "assigned in the kernel": ("    pid = tl.program_id(axis=0)\n",
                               "    pid = tl.program_id(axis=0)\n    n_elements = n_elements - 0\n", None),
    "passed to a helper": ("    total = x + y\n", "    total = x + y + helper(n_elements)\n", None),
}


@pytest.mark.parametrize("why", sorted(NOT_A_SIZE))
def test_not_offered_where_a_parameter_may_not_be_a_size_of_the_shape(why):
    old, new, _ = NOT_A_SIZE[why]
    src = baseline()
    assert old in src, why
    changed = src.replace(old, new, 1)
    analyze(changed)  # read without an exception
    assert not size_actions(changed), why
    assert size_actions(src)


def test_a_parameter_read_for_an_attribute_is_a_pointer():
    src = baseline("softmax").replace("out_ptr.dtype.element_ty", "n_cols.dtype")
    assert "n_cols" not in size_actions(src)[0].change


def test_in_the_vocabulary_the_agent_hears_favoured_where_memory_bounds_and_never_a_step_on_the_interpreter():
    assert any(m.startswith("sizes as compile-time constants (n_elements)") for m in structural_moves(baseline()))
    assert "sizes" in search_steps.INTERPRETER_IGNORES
    assert "sizes" in search_steps.FAVOURED_KINDS["memory"] and "sizes" in search_steps.FAVOURED_KINDS["latency"]


def test_the_rewrites_pass_the_policy():
    for name in ELEMENTWISE:
        spec = load_task(FIXTURES / name).spec
        report = check_source(constant(baseline(name)), entrypoint=spec.entrypoint,
                              launch_arguments=spec.launch_arguments,
                              tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
        assert report.ok, (name, report.summary())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_constant_sizes_pass_correctness_on_the_interpreter(tmp_path):
    from kernel_tui.core.evaluator import Evaluator, Status
    from tests.core.inductor.support import check_on_interpreter
    from tests.core.inductor.test_templates import SAMPLES, start

    failures = []
    for name in ELEMENTWISE:
        ev = Evaluator(load_task(FIXTURES / name), device="cpu", workdir=tmp_path / name)
        try:
            result = ev.check(constant(baseline(name)))
        finally:
            ev.close()
        if result.status is not Status.ok:
            failures.append(f"{name}: {result.status.value}: {result.reason}")
    assert not failures, failures
    for name in ("softmax_rows", "avg_pool2d_wide_index"):  # Inductor's dynamic-shape kernels, at every task shape
        check_on_interpreter(SAMPLES / name, constant(start(name)), tmp_path / "inductor")
