"""Output poison: varied per seed and call, never one value a kernel could sniff for; and the task check
that CPU-interpreter correctness reaches past a kernel's first blocks."""

from __future__ import annotations

import pytest
import torch

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.evaluator.harness import (
    GUARD,
    INT_SENTINEL,
    STALE_MIN_SHARE,
    STALE_SEED_OFFSET,
    ArgumentSet,
    CandidateFault,
    GuardedOutput,
)
from kernel_tui.core.evaluator.models import TimingPlan
from kernel_tui.core.task import MIN_INTERPRETER_OUTPUT_ELEMENTS, TaskSpec, load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES

DIMS = {"rows": 37, "cols": 129}


def add(x, y, out, n):
    return (x.float() + y.float()).to(out.dtype)


def softmax(x, out, n_rows, n_cols):
    return torch.softmax(x.float(), dim=-1).to(out.dtype)


@pytest.fixture(scope="module")
def spec() -> TaskSpec:
    return load_task(FIXTURES / "vector_add").spec


def ready(spec, seed: int, dims=DIMS, reference=add) -> ArgumentSet:
    s = ArgumentSet.build(spec, dims, "cpu", seed)
    s.compute_expected(reference)
    return s


def poisons(s: ArgumentSet, calls: int) -> list[torch.Tensor]:
    out = []
    for _ in range(calls):
        s.prepare_call()
        out.append(s.outputs["output"].storage.clone())
    return out


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.view(torch.int16), b.view(torch.int16))


def test_poison_differs_between_calls_and_seeds_and_is_reproducible(spec):
    seen = poisons(ready(spec, 5), 6) + poisons(ready(spec, 6), 2)
    for i in range(len(seen)):
        for j in range(i):
            assert not same_bits(seen[i], seen[j]), (i, j)
    again = poisons(ready(spec, 5), 6)
    assert all(same_bits(a, b) for a, b in zip(again, seen))


def test_first_call_holds_nan_random_finite_values_and_a_stale_answer(spec):
    for seed in range(8):
        s = ready(spec, seed)
        s.prepare_call()
        out, expected = s.outputs["output"], s.expected[0]
        view = out.view.float()
        nan = torch.isnan(view)
        stale = view == out.stale.view(view.shape).float()
        assert nan.float().mean() >= 0.2, seed  # every segment is at least a fifth of the output
        assert (stale & ~nan).float().mean() >= 0.2, seed
        garbage = ~nan & ~stale
        assert garbage.float().mean() >= 0.2 and torch.isfinite(view[garbage]).all(), seed
        # random values sit at the answer's scale, so a range check cannot tell them from an answer
        lo, hi = float(expected.float().min()), float(expected.float().max())
        span = hi - lo
        assert lo - span / 4 <= float(view[garbage].min()) and float(view[garbage].max()) <= hi + span / 4
        # guard bands: random finite values, not a recognisable NaN
        guards = torch.cat([out.storage[:GUARD], out.storage[-GUARD:]]).float()
        assert torch.isfinite(guards).all() and guards.unique().numel() > GUARD


def test_later_calls_vary_the_mix_including_no_nan_at_all(spec):
    s = ready(spec, 11)
    nan_shares = []
    for _ in range(40):
        s.prepare_call()
        nan_shares.append(float(torch.isnan(s.outputs["output"].view).float().mean()))
    assert min(nan_shares) == 0.0  # some calls are all finite: "not NaN" never means "written"
    assert max(nan_shares) == 1.0  # and some are all NaN
    assert len(set(nan_shares)) > 5


def test_stale_answer_is_the_reference_for_other_inputs_and_must_differ(spec):
    s = ready(spec, 3)
    out = s.outputs["output"]
    other = ArgumentSet.build(spec, DIMS, "cpu", 3 + STALE_SEED_OFFSET)
    other.compute_expected(add)
    assert torch.equal(out.stale, other.expected[0].flatten())
    differs = ~torch.isclose(out.stale.float(), s.expected[0].flatten().float(), rtol=1e-3, atol=1e-3)
    assert differs.float().mean() >= STALE_MIN_SHARE
    # a timing refresh uses the previous inputs' answer
    before = s.expected[0].flatten().clone()
    s.fill(4)
    s.compute_expected(add)
    assert torch.equal(out.stale, before)
    # an answer that does not depend on the inputs is no poison: random values instead
    constant = ready(spec, 3, reference=lambda x, y, o, n: torch.ones_like(o))
    assert constant.outputs["output"].stale is None
    constant.prepare_call()
    view = constant.outputs["output"].view.float()
    assert (view == 1).float().mean() < 0.01 and torch.isfinite(view).float().mean() > 0.5


def test_integer_outputs_get_sentinel_and_random_in_range_poison():
    spec = TaskSpec.model_validate({
        "name": "ints", "shape": {"n": 5000},
        "tensors": [{"name": "x", "kind": "input", "dtype": "int32", "shape": ["n"]},
                    {"name": "out", "kind": "output", "dtype": "int32", "shape": ["n"]}],
        "launchArguments": ["x", "out"],
        "correctness": {"atol": 0, "rtol": 0},
    })
    s = ArgumentSet.build(spec, {"n": 5000}, "cpu", 1)
    s.compute_expected(lambda x, out: x * 3)
    s.prepare_call()
    view, exp = s.outputs["out"].view, s.expected[0]
    assert (view == INT_SENTINEL).any() and (view != INT_SENTINEL).any()
    assert int(view[view != INT_SENTINEL].abs().max()) <= 2 * int(exp.abs().max()) + 2
    view.copy_(exp)
    assert s.check("ok", error=False) == 0.0
    s.prepare_call()
    s.outputs["out"].storage[-1] += 1
    view.copy_(exp)
    with pytest.raises(CandidateFault, match="out of bounds"):
        s.check("oob", error=False)


def sniff_nan(x, y, out, n):
    """Writes only where the output is NaN, trusting the rest as already written."""
    out.copy_(torch.where(torch.isnan(out), x + y, out))


def sniff_finite_blocks(x, y, out, n, block=256):
    """Skips every block whose output is all finite."""
    flat_out, flat = out.view(-1), (x + y).view(-1)
    for start in range(0, flat.numel(), block):
        if not torch.isfinite(flat_out[start : start + block]).all():
            flat_out[start : start + block] = flat[start : start + block]


def sniff_softmax_rows(x, out, n_rows, n_cols):
    """Skips rows that already look like a softmax: only a stale answer gets past it."""
    looks_done = ((out.float().sum(-1) - 1).abs() < 0.01) & (out >= 0).all(-1)
    out.copy_(torch.where(looks_done[:, None], out, torch.softmax(x.float(), -1).to(out.dtype)))


def plain_nan(monkeypatch):
    """The old scheme: NaN everywhere, guards included."""
    real = GuardedOutput.poison
    monkeypatch.setattr(GuardedOutput, "poison",
                        lambda self, side, rng, plain, first: real(self, side, rng, plain=True, first=first))


@pytest.mark.parametrize("sniffer", [sniff_nan, sniff_finite_blocks])
def test_sniffing_kernels_fail_correctness_but_passed_against_nan_alone(spec, sniffer, monkeypatch):
    def correctness(seeds) -> list[str]:
        verdicts = []
        for seed in seeds:
            s = ready(spec, seed, dims={"rows": 257, "cols": 263})
            s.prepare_call()
            sniffer(*s.args())
            try:
                s.check("call")
                verdicts.append("ok")
            except CandidateFault as fault:
                verdicts.append(fault.status)
        return verdicts

    assert correctness(range(10)) == ["incorrect"] * 10
    plain_nan(monkeypatch)
    assert correctness(range(3)) == ["ok"] * 3


def test_stale_rows_get_past_random_poison_but_not_a_stale_answer():
    spec = load_task(FIXTURES / "softmax").spec
    s = ready(spec, 2, reference=softmax)
    s.prepare_call()
    sniff_softmax_rows(*s.args())
    with pytest.raises(CandidateFault, match="never written"):
        s.check("call")
    # without a stale answer (random values where it would be) the sniffer is right
    s = ready(spec, 2, reference=softmax)
    s.outputs["output"].stale = None
    s.prepare_call()
    sniff_softmax_rows(*s.args())
    s.check("call")


HONEST = """
def launch(x, y, output, n_elements):
    output.copy_(x + y)
"""
# trusts every element that is not NaN as written already (host code: the policy is off for it)
SNIFFER = """
import torch


def launch(x, y, output, n_elements):
    output.copy_(torch.where(torch.isnan(output), x + y, output))
"""


def test_timed_calls_catch_a_kernel_that_trusts_its_output(tmp_path):
    task = load_task(FIXTURES / "vector_add")
    ev = Evaluator(task, device="cpu", enforce_policy=False, workdir=tmp_path / "eval", timeout=120)
    plan = TimingPlan(pairs=3, inner_repeats=3, warmup=1)
    try:
        fine = ev.timing_run(HONEST, HONEST, block=0, correctness=False, plan=plan, trusted=True)
        assert fine.status is Status.ok and fine.timing is not None and fine.timing.timed_outputs_checked == 9
        caught = ev.timing_run(SNIFFER, HONEST, block=1, correctness=False, plan=plan, trusted=True)
        assert caught.status is Status.incorrect and "timed call of the candidate" in caught.reason
    finally:
        ev.close()


# --- CPU-interpreter correctness reaches past the first blocks ------------------------------------

def test_coverage_warning_flags_only_tasks_whose_interpreter_shapes_are_all_small(spec):
    assert spec.coverage_warnings() == []
    data = spec.model_dump(by_alias=True)
    shapes = data["correctness"]["shapes"]
    data["correctness"]["shapes"] = [c for c in shapes if c["name"] != "large"]
    small = TaskSpec.model_validate(data)
    (warning,) = small.coverage_warnings()
    assert f"{MIN_INTERPRETER_OUTPUT_ELEMENTS:,}" in warning and "small (37, 129), 4,773" in warning
    # exactly at the threshold passes; just below it does not
    for cols, flagged in ((256, False), (255, True)):
        extra = {"name": "edge", "dims": {"rows": 256, "cols": cols}, "interpreter": True}
        edge = dict(data, correctness=dict(data["correctness"], shapes=[*data["correctness"]["shapes"], extra]))
        assert bool(TaskSpec.model_validate(edge).coverage_warnings()) is flagged


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixtures_check_a_large_interpreter_shape(name):
    spec = load_task(FIXTURES / name).spec
    sizes = {c.name: spec.output_elements(c.dims) for c in spec.correctness_shapes("cpu")}
    assert spec.timing_shape("cpu").name != "large"  # only correctness pays for it
    if name == "row_sum":  # one output per row: 65,536 rows cost minutes per call under the interpreter
        assert sizes["large"] > 1024 and spec.coverage_warnings()
        return
    assert max(sizes.values()) >= MIN_INTERPRETER_OUTPUT_ELEMENTS and not spec.coverage_warnings()
