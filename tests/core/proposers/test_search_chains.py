"""Chains: two steps the gate turned down although each was surely faster (its interval above 0) are proposed
together, said to be a chain; kept across a resume; never a step whose interval reaches 0, never one knob twice,
never the same pair again."""

from __future__ import annotations

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer
from kernel_tui.core.proposers.search_chains import SmallGain, chain_pairs, is_small_gain
from tests.conftest import FIXTURES

BASE = (FIXTURES / "matmul" / "baseline.py").read_text(encoding="utf-8")


def context(rnd: int) -> ProposerContext:
    return ProposerContext(round=rnd, best_source=BASE, baseline_source=BASE, history=[], device="cuda")


def small(rnd: int, improvement: float = 0.006, ci_low: float = 0.004) -> Feedback:
    return Feedback(round=rnd, status="ok", accepted=False, reason="rejected: under the 1% minimum",
                    improvement=improvement, ci_low=ci_low, latency=1e-3, incumbent_latency=1e-3 * (1 + improvement))


def run_until_two_knobs(search: SearchProposer) -> tuple[int, list[str]]:
    """Rounds of single steps, each measured a small gain, until two knobs have one; the parts measured."""
    knobs: dict[str, str] = {}
    rnd = 0
    while len(knobs) < 2:
        rnd += 1
        assert search.propose(context(rnd)) is not None
        parts = search.pending[str(rnd)]["parts"]
        if len(parts) == 1:  # a coupled two-knob step is no small gain of one step
            knobs.setdefault(parts[0].split("=", 1)[0], parts[0])
        search.feedback(small(rnd))
        assert rnd < 40
    return rnd, list(knobs.values())


def test_two_small_gains_are_proposed_together_as_a_chain_and_only_once():
    search = SearchProposer(seed=3)
    rnd, parts = run_until_two_knobs(search)
    chain = search.propose(context(rnd + 1))
    assert chain is not None and chain.change.startswith("chain of two small gains: ")
    assert "each alone was surely faster but under the gate's minimum" in chain.change and "+0.6%" in chain.change
    assert sorted(search.pending[str(rnd + 1)]["parts"]) == sorted(parts[:2])
    search.feedback(Feedback(round=rnd + 1, status="ok", accepted=False, reason="rejected", improvement=0.002,
                             ci_low=-0.001))
    after = search.propose(context(rnd + 2))  # the pair was tried: the search goes on with single steps
    assert after is not None and not after.change.startswith("chain")


def test_the_small_gains_survive_a_resume():
    search = SearchProposer(seed=3)
    rnd, _ = run_until_two_knobs(search)
    resumed = SearchProposer(seed=3)
    resumed.restore(search.state())
    chain = resumed.propose(context(rnd + 1))
    assert chain is not None and chain.change.startswith("chain of two small gains: ")


def test_only_surely_faster_steps_of_different_knobs_chain():
    assert is_small_gain(False, True, 0.006, 0.001)
    assert not is_small_gain(False, True, 0.006, 0.0)  # its interval reaches 0: maybe no gain at all
    assert not is_small_gain(False, True, 0.006, None)
    assert not is_small_gain(True, True, 0.02, 0.01)  # accepted: nothing to chain
    assert not is_small_gain(False, False, 0.006, 0.001)  # failed
    gains = [SmallGain("s", "const:BLOCK_M=128", 0.004, 0.001), SmallGain("s", "const:BLOCK_M=32", 0.008, 0.002),
             SmallGain("s", "const:BLOCK_K=64", 0.006, 0.003), SmallGain("other", "const:BLOCK_N=128", 0.009, 0.005)]
    pairs = chain_pairs(gains, "s", set())
    assert [(a.part, b.part) for a, b in pairs] == [("const:BLOCK_M=32", "const:BLOCK_K=64"),
                                                    ("const:BLOCK_K=64", "const:BLOCK_M=128")]  # not one knob twice
    assert chain_pairs(gains, "s", {"s|const:BLOCK_M=32+const:BLOCK_K=64"})[0][0].part == "const:BLOCK_K=64"


def test_a_gain_with_its_interval_at_zero_is_not_chained():
    search = SearchProposer(seed=3)
    for rnd in range(1, 7):
        assert search.propose(context(rnd)) is not None
        search.feedback(small(rnd, ci_low=-0.0005))
    nxt = search.propose(context(7))
    assert nxt is not None and not nxt.change.startswith("chain") and search.small_gains == []
