"""The timing loop's fused output check agrees with the detailed one on every kind of wrong output."""

from __future__ import annotations

import pytest
import torch

from kernel_tui.core.evaluator.harness import CandidateFault, _close_flag, compare

ATOL, RTOL = 1e-3, 1e-3


def verdict(out: torch.Tensor, expected: torch.Tensor, error: bool, atol: float = ATOL, rtol: float = RTOL) -> str:
    """error=False: the fused device test of the timing loop; True: the detailed comparison."""
    if not error:
        return "ok" if bool(_close_flag(out, expected, atol, rtol)) else "incorrect"
    try:
        compare(out, expected, atol, rtol, "case")
    except CandidateFault as fault:
        return fault.status
    return "ok"


def corruptions(dtype: torch.dtype):
    gen = torch.Generator().manual_seed(3)
    expected = torch.randn(37, 129, generator=gen).to(dtype)
    yield "exact", expected.clone(), expected
    yield "within tolerance", (expected.float() + 5e-4).to(dtype) if dtype == torch.float32 else expected.clone(), expected
    for name, value in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf")), ("off", 0.5)):
        bad = expected.clone()
        bad[17, 100] = bad[17, 100] + value if name == "off" else value
        yield name, bad, expected
    special = expected.clone()
    special[0, 0] = float("inf")
    yield "expected inf matched", special.clone(), special
    wrong = special.clone()
    wrong[0, 0] = 1.0
    yield "expected inf missed", wrong, special
    nan_expected = expected.clone()
    nan_expected[1, 1] = float("nan")
    yield "expected nan matched", nan_expected.clone(), nan_expected


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_fast_check_agrees_with_the_detailed_check(dtype):
    seen = set()
    for name, out, expected in corruptions(dtype):
        fast, detailed = verdict(out, expected, False), verdict(out, expected, True)
        assert fast == detailed, f"{name}: fast {fast}, detailed {detailed}"
        seen.add(detailed)
    assert seen == {"ok", "incorrect"}


def test_integer_outputs_are_compared_exactly_beyond_float32():
    expected = torch.tensor([2**40, 7], dtype=torch.int64)
    out = expected.clone()
    out[0] += 1  # invisible in float32
    assert verdict(out, expected, False, 0, 0) == verdict(out, expected, True, 0, 0) == "incorrect"
    assert verdict(expected.clone(), expected, False, 0, 0) == "ok"


def test_timing_loop_check_catches_what_the_detailed_check_does():
    from kernel_tui.core.evaluator.harness import GUARD, ArgumentSet
    from kernel_tui.core.task import load_task
    from tests.conftest import FIXTURES

    task = load_task(FIXTURES / "vector_add")

    def outcome(damage) -> str:
        s = ArgumentSet.build(task.spec, {"rows": 16, "cols": 256}, "cpu", seed=5)
        s.compute_expected(lambda x, y, out, n: x + y)
        s.prepare_call()
        x, y, out, _ = s.args()
        out.copy_(x + y)
        damage(s, x, out)
        try:
            assert s.check("timed call", error=False) == 0.0
        except CandidateFault as fault:
            return fault.reason
        return "ok"

    assert outcome(lambda s, x, out: None) == "ok"
    assert "input 'x' was modified" in outcome(lambda s, x, out: x.mul_(2))
    assert "out of bounds" in outcome(lambda s, x, out: s.outputs["output"].storage[GUARD - 1].fill_(0))
    assert "differ beyond" in outcome(lambda s, x, out: out[3, 7].add_(1))
    assert "NaN/Inf" in outcome(lambda s, x, out: out[0, 0].fill_(float("nan")))


def test_fast_and_detailed_checks_agree_over_varied_poison():
    """Whatever this call's poison (NaN, random values, a stale answer; random guards), the timing loop's
    one-sync verdict is the detailed check's."""
    from kernel_tui.core.evaluator.harness import GUARD, ArgumentSet
    from kernel_tui.core.task import load_task
    from tests.conftest import FIXTURES

    spec = load_task(FIXTURES / "vector_add").spec
    dims = {"rows": 37, "cols": 129}

    def ready(seed):
        s = ArgumentSet.build(spec, dims, "cpu", seed)
        s.compute_expected(lambda x, y, out, n: (x.float() + y.float()).to(out.dtype))
        return s

    def honest(x, y, out, n):
        out.copy_(x + y)

    def poison_of(s):
        return s.outputs["output"].before[GUARD:-GUARD].view(dims["rows"], dims["cols"])

    damages = {  # name: (damage after an honest call, always wrong)
        "none": (lambda s, out: None, False),
        "head guard": (lambda s, out: s.outputs["output"].storage[GUARD - 1 - s.calls["local"]].add_(1), True),
        "tail guard": (lambda s, out: s.outputs["output"].storage[-1].mul_(-1).add_(0.5), True),
        "first block unwritten": (lambda s, out: out.view(-1)[:256].copy_(poison_of(s).reshape(-1)[:256]), True),
        # a sniffer's output: the old contents kept wherever they were not NaN
        "kept where not NaN": (
            lambda s, out: out.copy_(torch.where(torch.isnan(poison_of(s)), out, poison_of(s))), None),
    }
    verdicts = []
    for seed in range(3):
        s = ready(seed)
        for _ in range(6):
            for name, (damage, wrong) in damages.items():
                s.prepare_call()
                honest(*s.args())
                damage(s, s.outputs["output"].view)
                fast = bool(s.good_flag())
                try:
                    s.check("call")
                    detailed = True
                except CandidateFault:
                    detailed = False
                assert fast == detailed, (seed, name)
                if wrong is not None:
                    assert detailed is not wrong, (seed, name)
                else:
                    verdicts.append(detailed)
    # the sniffer's output is right only on the calls whose poison was NaN throughout: a few, at most
    assert verdicts.count(False) > len(verdicts) // 2
