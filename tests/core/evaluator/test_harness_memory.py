"""The harness's checks work in chunks and its argument sets hold no more than set_bytes says, with
results identical to whole-tensor checks. CHECK_CHUNK is made tiny so every check crosses chunk borders."""

from __future__ import annotations

import pytest
import torch

from kernel_tui.core.evaluator import checks
from kernel_tui.core.evaluator.harness import (
    ArgumentSet,
    CandidateFault,
    _close,
    _close_flag,
    _count_not_close,
    _equal_flag,
    compare,
)
from kernel_tui.core.evaluator.memory import set_bytes
from kernel_tui.core.task import TaskSpec

SMALL = 7
HUGE = 1 << 40


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(checks, "CHECK_CHUNK", SMALL)


def spec_of(atol: float = 1e-3, rtol: float = 1e-3) -> TaskSpec:
    """One input, one parameter, a scalar and two outputs of different dtypes."""
    return TaskSpec.model_validate({
        "name": "mem", "shape": {"n": 6, "m": 9},
        "tensors": [
            {"name": "x", "kind": "input", "dtype": "float32", "shape": ["n", "m"]},
            {"name": "w", "kind": "parameter", "dtype": "float16", "shape": ["m"]},
            {"name": "k", "kind": "scalar", "dtype": "float32", "value": 2.0},
            {"name": "y", "kind": "output", "dtype": "float32", "shape": ["n", "m"]},
            {"name": "z", "kind": "output", "dtype": "float16", "shape": ["n"]},
        ],
        "launchArguments": ["x", "w", "k", "y", "z"],
        "correctness": {"atol": atol, "rtol": rtol},
    })


def reference(x, w, k, y, z):
    return x * w.float() * k, x.sum(1).to(torch.float16)


def message(monkeypatch, chunk: int, out: torch.Tensor, expected: torch.Tensor) -> str:
    monkeypatch.setattr(checks, "CHECK_CHUNK", chunk)
    with pytest.raises(CandidateFault) as caught:
        compare(out, expected, 1e-3, 1e-3, "case")
    return caught.value.reason


# --- compare -----------------------------------------------------------------------------------------

def base() -> tuple[torch.Tensor, torch.Tensor]:
    expected = torch.randn(5, 11, generator=torch.Generator().manual_seed(1))
    return expected.clone(), expected


def test_compare_names_the_first_bad_element_of_a_later_chunk(monkeypatch):
    out, expected = base()
    out[4, 3] += 1.0  # flat 47: the seventh chunk
    out[4, 6] += 2.0  # the largest error, in a later chunk still
    out[4, 10] += 0.5
    chunked = message(monkeypatch, SMALL, out, expected)
    assert chunked == message(monkeypatch, HUGE, out, expected)
    assert "3 of 55 elements differ" in chunked and "first at (4, 3)" in chunked
    assert "max abs error 2" in chunked


def test_compare_names_the_first_nan_of_a_later_chunk_before_bad_elements(monkeypatch):
    out, expected = base()
    out[0, 1] += 1.0  # a bad element earlier than any NaN: the NaN message still wins
    out[2, 9] = float("nan")  # flat 31
    out[3, 2] = float("inf")
    out[4, 0] = float("nan")
    chunked = message(monkeypatch, SMALL, out, expected)
    assert chunked == message(monkeypatch, HUGE, out, expected)
    assert "3 of 55 elements are NaN/Inf" in chunked and "first at (2, 9) (NaN)" in chunked
    out[2, 9] = 0.0
    assert "first at (3, 2) (Inf)" in message(monkeypatch, SMALL, out, expected)


def test_compare_flags_a_finite_result_where_inf_is_expected(monkeypatch):
    out, expected = base()
    expected[3, 5] = float("inf")
    out[3, 5] = 1e30
    chunked = message(monkeypatch, SMALL, out, expected)
    assert chunked == message(monkeypatch, HUGE, out, expected)
    assert "1 of 55 elements differ" in chunked and "first at (3, 5)" in chunked


def test_compare_on_non_contiguous_tensors(monkeypatch):
    out, expected = base()
    out[1, 8] -= 1.0
    chunked = message(monkeypatch, SMALL, out.T, expected.T)
    assert chunked == message(monkeypatch, HUGE, out.T, expected.T)
    assert "first at (8, 1)" in chunked


def test_compare_returns_the_same_max_abs_error_when_everything_passes(monkeypatch):
    out, expected = base()
    noise = torch.rand(5, 11, generator=torch.Generator().manual_seed(2)) * 1e-4
    out += noise
    out[4, 9] = expected[4, 9] + 9e-4  # the largest, in the last chunk
    expected[0, 0] = out[0, 0] = float("-inf")  # matched specials count for nothing
    monkeypatch.setattr(checks, "CHECK_CHUNK", SMALL)
    chunked = compare(out, expected, 1e-3, 1e-3, "case")
    monkeypatch.setattr(checks, "CHECK_CHUNK", HUGE)
    assert chunked == compare(out, expected, 1e-3, 1e-3, "case")
    assert chunked == pytest.approx(9e-4, rel=1e-3)


# --- chunked flags agree with whole-tensor definitions -------------------------------------------------

def planted(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    b = torch.randn(6, 13, generator=gen)
    a = b + torch.rand(6, 13, generator=gen) * 1e-4
    return a, b


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("spots", [[], [(5, 12)], [(0, 0), (3, 4), (5, 11)]])
def test_close_flag_and_count_agree_with_the_full_map(spots):
    a, b = planted(len(spots))
    for i, j in spots:
        a[i, j] += 0.5
    assert bool(_close_flag(a, b, 1e-3, 1e-3)) is bool(_close(a, b, 1e-3, 1e-3).all()) is (not spots)
    assert _count_not_close(a, b, 1e-3, 1e-3) == int((~_close(a, b, 1e-3, 1e-3)).sum()) == len(spots)
    assert _count_not_close(a.T, b.T, 1e-3, 1e-3) == len(spots)


@pytest.mark.usefixtures("small_chunks")
def test_equal_flag_agrees_with_elementwise_equality_nan_included():
    a = torch.randn(6, 13, generator=torch.Generator().manual_seed(4))
    b = a.clone()
    assert bool(_equal_flag(a, b)) is bool((a == b).all()) is True
    b[5, 12] = 7.0  # the last, short chunk
    assert bool(_equal_flag(a, b)) is bool((a == b).all()) is False
    a[5, 12] = b[5, 12] = float("nan")  # NaN != NaN, as `==` says
    assert bool(_equal_flag(a, b)) is bool((a == b).all()) is False
    ints = torch.arange(50)
    assert bool(_equal_flag(ints, ints.clone()))


# --- ArgumentSet ---------------------------------------------------------------------------------------

@pytest.mark.usefixtures("small_chunks")
def test_a_sides_inputs_are_compared_with_the_truth_in_the_same_buffers_every_call():
    s = ArgumentSet.build(spec_of(), {"n": 6, "m": 9}, "cpu", 1)
    s.compute_expected(reference)

    def call(mutate: bool) -> None:
        s.prepare_call()
        x, w, k, y, z = s.args()
        for view, exp in zip((y, z), s.expected):
            view.copy_(exp)
        if mutate:
            x[5, 8] += 1.0  # in the last chunk

    call(False)
    pointers = {n: t.data_ptr() for n, t in s.side_inputs["local"].items()}
    assert s.check("call", error=False) == 0.0
    call(True)
    with pytest.raises(CandidateFault, match="input 'x' was modified"):
        s.check("call", error=False)
    s.fill(2)  # new inputs: the side gets them at its next call, in the same buffers
    s.compute_expected(reference)
    call(False)
    assert {n: t.data_ptr() for n, t in s.side_inputs["local"].items()} == pointers
    assert all(torch.equal(s.side_inputs["local"][n], s.inputs[n]) for n in s.inputs)
    assert s.check("call") == 0.0


def test_answer_is_a_copy_even_of_a_buffer_the_reference_keeps():
    """A reference that writes its answer into a buffer it keeps (a preallocated output) and returns it:
    the next answer must not overwrite the one already kept."""
    spec = spec_of()
    s = ArgumentSet.build(spec, {"n": 6, "m": 9}, "cpu", 1)
    kept: dict[str, torch.Tensor] = {}

    def reusing(x, w, k, y, z):
        a, b = reference(x, w, k, y, z)
        kept.setdefault("a", torch.empty_like(a)).copy_(a)
        kept.setdefault("b", torch.empty_like(b)).copy_(b)
        return kept["a"], kept["b"]

    first = s._answer(reusing, s.inputs, s.scalars)
    saved = [t.clone() for t in first]
    others = {n: torch.randn_like(t) if t.is_floating_point() else t.clone() for n, t in s.inputs.items()}
    s._answer(reusing, others, s.scalars)
    assert all(torch.equal(a, b) for a, b in zip(first, saved))
    assert {t.untyped_storage().data_ptr() for t in first}.isdisjoint({t.untyped_storage().data_ptr() for t in kept.values()})


def test_other_answer_gives_the_reference_its_inputs_uncloned():
    s = ArgumentSet.build(spec_of(), {"n": 6, "m": 9}, "cpu", 1)
    given: list[int] = []

    def ref(x, w, k, y, z):
        given.append(x.data_ptr())
        return reference(x, w, k, y, z)

    real = {}

    def answer(reference, inputs, scalars, *, clone_inputs=True):
        real.update(inputs)
        return ArgumentSet._answer(s, reference, inputs, scalars, clone_inputs=clone_inputs)

    s._answer = answer  # type: ignore[method-assign]
    assert s._other_answer(ref) is not None
    assert given == [real["x"].data_ptr()]


@pytest.mark.usefixtures("small_chunks")
def test_loose_tolerances_as_with_whole_tensors():
    def old(s: ArgumentSet) -> list[str]:
        problems = []
        for (name, out), exp in zip(s.outputs.items(), s.expected):
            atol, rtol = s._tolerance(name)
            e = exp.detach().to(torch.float64).abs()
            if not e.numel() or float(e.max()) == 0.0:
                continue
            if bool(_close(torch.zeros_like(out.view), exp, atol, rtol).all()):
                problems.append(
                    f"output {name!r}: atol {atol:g} lets an all-zeros result pass (largest |expected| "
                    f"{float(e.max()):.3g}); lower its atol (tensors[].atol) or give it an atolScale"
                )
        return problems

    def tiny(x, w, k, y, z):  # everything within atol of zero
        return x * 1e-4, (x.sum(1) * 1e-4).to(torch.float16)

    def tiny_but_one(x, w, k, y, z):  # but for one element, in a middle chunk
        first, second = tiny(x, w, k, y, z)
        first[3, 4] = 3.0
        return first, second

    def zero(x, w, k, y, z):
        return torch.zeros_like(y), torch.zeros_like(z)

    s = ArgumentSet.build(spec_of(atol=1e-2), {"n": 6, "m": 9}, "cpu", 1)
    verdicts = []
    for ref in (reference, tiny, tiny_but_one, zero):
        s.compute_expected(ref)
        verdicts.append(s.loose_tolerances())
        assert verdicts[-1] == old(s)
    assert verdicts[0] == [] and len(verdicts[1]) == 2 and verdicts[2] == verdicts[1][1:] and verdicts[3] == []


def test_scaled_tolerances_sample_the_same_positions():
    spec = TaskSpec.model_validate({
        "name": "scaled", "shape": {"n": 3_000_001},
        "tensors": [{"name": "x", "kind": "input", "dtype": "float16", "shape": ["n"]},
                    {"name": "out", "kind": "output", "dtype": "float16", "shape": ["n"], "atolScale": 0.01}],
        "launchArguments": ["x", "out"],
        "correctness": {"atol": 1.0, "rtol": 0.0},
    })
    s = ArgumentSet.build(spec, {"n": 3_000_001}, "cpu", 1)
    s.compute_expected(lambda x, out: (x.float() * torch.linspace(0, 4, x.numel())).to(out.dtype))
    flat = s.expected[0].flatten().abs().float()
    q90 = float(torch.quantile(flat[:: max(1, flat.numel() // 1_000_000)], 0.9))
    assert s.tolerances["out"] == (min(1.0, 0.01 * q90), 0.0)


# --- memory accounting -----------------------------------------------------------------------------------

def held_bytes(s: ArgumentSet) -> int:
    """Bytes of every distinct storage the set holds on its device."""
    tensors = [*s.inputs.values(), *(t for side in s.side_inputs.values() for t in side.values()), *s.expected,
               *s.previous]
    for out in s.outputs.values():
        tensors += [*out.storages.values(), out.before, *([out.stale] if out.stale is not None else [])]
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return reference(*args)


def test_set_bytes_is_what_a_set_holds_after_a_refresh():
    spec, dims = spec_of(), {"n": 6, "m": 9}
    ref = Counting()
    s = ArgumentSet.build(spec, dims, "cpu", 1)
    s.compute_expected(ref)
    assert ref.calls == 2  # the expected answer and another inputs' answer, the first stale poison
    s.prepare_call()
    assert all(out.stale is not None for out in s.outputs.values())
    assert held_bytes(s) == set_bytes(spec, dims, sides=1)
    s.fill(2)
    s.compute_expected(ref)
    s.prepare_call()
    assert ref.calls == 3 and len(s.previous) == 2
    assert held_bytes(s) == set_bytes(spec, dims, sides=1) > set_bytes(spec, dims, stale=False, sides=1)


def test_without_stale_the_reference_runs_once_per_answer():
    spec, dims = spec_of(), {"n": 6, "m": 9}
    ref = Counting()
    s = ArgumentSet.build(spec, dims, "cpu", 1, stale=False)
    assert s.stale is False
    s.compute_expected(ref)
    s.prepare_call()
    assert ref.calls == 1 and all(out.stale is None for out in s.outputs.values())
    assert held_bytes(s) == set_bytes(spec, dims, stale=False, sides=1)
    s.fill(2)
    s.compute_expected(ref)
    s.prepare_call()
    assert ref.calls == 2 and s.previous == []  # no old answer is kept either: one answer per set
    assert all(out.stale is None for out in s.outputs.values())
    assert held_bytes(s) == set_bytes(spec, dims, stale=False, sides=1)
