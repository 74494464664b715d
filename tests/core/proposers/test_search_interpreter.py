"""The built-in search on Triton's CPU interpreter: a move that only changes knobs the interpreter ignores
(warps, stages, load hints, loop unrolling, tl.dot input precision, the persistent grid) is no move there, and the search says once
which it leaves out. Driven through propose/feedback, no evaluator."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer
from kernel_tui.core.proposers.transforms import analyze
from tests.core.proposers.test_search import baseline

GPU_ONLY = {"num_warps", "num_stages", "eviction_policy", "cache_modifier", "unroll", "input_precision", "grid"}


def changed_kinds(before: str, after: str) -> set[str]:
    """The kinds of the incumbent's knobs a proposal moves."""
    a, b = analyze(before), analyze(after).assignment
    return {knob.kind for kid, knob in a.knobs.items() if b.get(kid) != knob.value}


def drive(p: SearchProposer, name: str, rounds: int = 60, **context) -> list[tuple[str, str]]:
    """(incumbent, proposal) of each round; every third proposal is accepted, so several incumbents are seen."""
    base = best = baseline(name)
    out = []
    for r in range(1, rounds + 1):
        proposal = p.propose(ProposerContext(round=r, best_source=best, baseline_source=base, history=[], **context))
        if proposal is None:
            break
        out.append((best, proposal.source))
        accepted = r % 3 == 0
        p.feedback(Feedback(round=r, status="ok", accepted=accepted, reason="", improvement=0.05 if accepted else 0.0))
        if accepted:
            best = proposal.source
    return out


@pytest.mark.parametrize("name", ["vector_add", "matmul", "rmsnorm"])
def test_on_the_interpreter_no_move_only_changes_a_knob_it_ignores(name):
    on_gpu = drive(SearchProposer(seed=0), name, rounds=30)
    assert any(changed_kinds(a, b) & GPU_ONLY for a, b in on_gpu)  # on a GPU these are moves

    said: list[str] = []
    p = SearchProposer(seed=0, device="cpu")
    p.on_activity = said.append
    moves = drive(p, name)
    assert moves
    for incumbent, proposal in moves:
        kinds = changed_kinds(incumbent, proposal)
        assert kinds and not kinds & GPU_ONLY, kinds
    assert any("block" in changed_kinds(a, b) for a, b in moves)  # block sizes change the interpreter's work
    told = [s for s in said if "interpreter" in s]
    assert len(told) == 1 and "num_warps" in told[0] and "block" in told[0], said


def test_the_context_says_the_device_where_the_constructor_did_not():
    said: list[str] = []
    p = SearchProposer(seed=1)
    p.on_activity = said.append
    moves = drive(p, "matmul", rounds=20, device="cpu")
    assert moves and not any(changed_kinds(a, b) & GPU_ONLY for a, b in moves)
    assert any("interpreter" in s for s in said)


def test_a_kernel_with_only_gpu_knobs_has_nothing_to_propose_on_the_interpreter_and_says_why():
    said: list[str] = []
    p = SearchProposer(seed=0, device="cpu")
    p.on_activity = said.append
    base = baseline("softmax")  # its knobs: warps and load hints only
    assert p.propose(ProposerContext(round=1, best_source=base, baseline_source=base, history=[])) is None
    assert any("interpreter" in s and "num_warps" in s for s in said), said


def test_the_factory_builds_the_search_for_the_evaluators_device():
    from kernel_tui.core.proposers.factory import build

    ws = SimpleNamespace(task=SimpleNamespace(spec=SimpleNamespace(optimization=SimpleNamespace(max_rounds=16))),
                         source_at=lambda rev: "")
    p = build("search", ws, SimpleNamespace(device="cpu"))
    assert isinstance(p, SearchProposer)
    moves = drive(p, "vector_add", rounds=16)
    assert moves and not any(changed_kinds(a, b) & GPU_ONLY for a, b in moves)
