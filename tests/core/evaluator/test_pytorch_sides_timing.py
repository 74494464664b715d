"""The PyTorch sides are timed as a user calls them: a trusted source returns its results, allocated by
itself, and the copy into the checked outputs is made after the timed region. A copy that takes 80 ms (a
tensor subclass that sleeps in `copy_`) shows where the clock stops."""

from __future__ import annotations

import pytest

from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.evaluator.models import Status, TimingPlan
from kernel_tui.core.suite.sources import pytorch_source
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES

SLOW = 0.08  # seconds the copy takes; a call of the add itself takes well under this on the CPU

_COMMON = f'''
import time

import torch


class _SlowCopy(torch.Tensor):
    """A result whose copy into another tensor takes {SLOW} s."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.copy_:
            time.sleep({SLOW})
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {{}}))


def _add(x, y):
    return (x.float() + y.float()).to(torch.float16).as_subclass(_SlowCopy)
'''

RETURNING = _COMMON + '''

def launch(x, y, output, n_elements):
    return _add(x, y)
'''

COPYING = _COMMON + '''

def launch(x, y, output, n_elements):
    output.copy_(_add(x, y))
'''


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURES / "vector_add")


def test_the_copy_of_a_returning_side_is_outside_the_timed_region(task, tmp_path):
    ev = Evaluator(task, device="cpu", enforce_policy=False, returning=[RETURNING], workdir=tmp_path, timeout=120)
    try:
        plan = TimingPlan(pairs=3, inner_repeats=1, warmup=1, seed=1)
        res = ev.timing_run(RETURNING, COPYING, block=0, correctness=True, plan=plan, trusted=True)
    finally:
        ev.close()
    assert res.status is Status.ok, res.reason
    assert res.cases and all(c.passed for c in res.cases)  # the delivered results were checked, and right
    timing = res.timing
    assert timing is not None and timing.timed_outputs_checked > 0
    assert min(timing.incumbent) >= SLOW  # the copying launch pays for its copy inside the call...
    assert max(timing.candidate) < SLOW  # ...the returning one is timed without it


def test_no_candidate_can_choose_to_return_its_outputs(task, tmp_path):
    """Returning is the caller's choice, by exact source: the same source, not named, has written nothing."""
    ev = Evaluator(task, device="cpu", enforce_policy=False, workdir=tmp_path, timeout=120)
    try:
        res = ev.check(RETURNING, trusted=True)
    finally:
        ev.close()
    assert res.status is Status.incorrect, res.reason


def test_the_pytorch_sides_return_and_name_their_outputs_by_position(task, tmp_path):
    eager = pytorch_source(task, "eager")
    assert "copy_" not in eager.split("kernel-tui suite")[1]  # no copy in the launch: the evaluator delivers
    ev = Evaluator(task, device="cpu", enforce_policy=False, returning=[eager], workdir=tmp_path)
    try:
        assert ev._setup("incumbent", eager, tmp_path, enforce=False).returns == [2]  # output: 3rd argument
        assert ev._setup("candidate", eager + "\n", tmp_path, enforce=False).returns is None
    finally:
        ev.close()


def test_the_torch_compile_side_compiles_and_passes_inside_the_sandbox(task, tmp_path):
    """Inductor runs a C++ compiler, a child Python and openssl on the CPU (torch's ptxas on a GPU): the
    trusted compile side may run exactly those, in every other layer of the sandbox; a candidate may not."""
    source = pytorch_source(task, "compile")
    ev = Evaluator(task, device="cpu", enforce_policy=False, returning=[source], inductor=[source],
                   workdir=tmp_path, timeout=300)
    try:
        res = ev.check(source, trusted=True)
        confined = ev._setup("candidate", source, tmp_path, enforce=False).sandbox
        other = ev._setup("candidate", task.baseline_source, tmp_path, enforce=False).sandbox
    finally:
        ev.close()
    assert res.status is Status.ok, res.reason
    assert res.sandbox is not None and res.sandbox.active and not res.sandbox.violations, res.sandbox
    if confined is not None and other is not None:  # KERNEL_TUI_SANDBOX=0 has no plans to compare
        assert set(other.execute) < set(confined.execute)
