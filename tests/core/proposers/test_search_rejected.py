"""A change the person rejects is not proposed again in the run: the same knob moved between the same values
(or the same resulting edit), from the incumbent it was rejected on and from any later one, alone or as a step
of a two-step proposal; after a restart too, whether the proposer's saved state remembers it or only the
workspace does (the trajectory's rejected_by_person lines and their commits). Driven through propose/feedback,
no evaluator."""

from __future__ import annotations

import json

import pytest

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer, state_key
from kernel_tui.core.proposers.transforms import analyze
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from tests.core.proposers.test_search import baseline

WARPS = "launch:add_kernel:0:num_warps"
REASON = "one warp leaves the SM idle"


def base() -> str:
    return baseline("vector_add")


def larger_block() -> str:
    """A later incumbent (the person's edit, say): another block, num_warps still Triton's default 4."""
    return base().replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512")


def one_warp(source: str) -> str:
    analysis = analyze(source)
    return analysis.apply(next(a for a in analysis.actions() if a.knob == WARPS and a.new == 1))


def warps_moves(incumbent: str, proposals: list[str]) -> set[tuple]:
    """(old, new) num_warps of each proposal from `incumbent`."""
    old = analyze(incumbent).assignment[WARPS]
    return {(old, analyze(s).assignment[WARPS]) for s in proposals if analyze(s).assignment[WARPS] != old}


def exhaust(p: SearchProposer, best: str, first_round: int, history: list | None = None, limit: int = 400) -> list[str]:
    """Every proposal from `best` until the search has nothing more (each measured as no change)."""
    out = []
    for r in range(first_round, first_round + limit):
        proposal = p.propose(ProposerContext(round=r, best_source=best, baseline_source=base(), history=history or []))
        if proposal is None:
            return out
        out.append(proposal.source)
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=0.0))
    raise AssertionError("the search should run out of moves")


def test_a_rejected_change_is_not_proposed_again_from_a_later_incumbent():
    said: list[str] = []
    p = SearchProposer(seed=0)
    p.on_activity = said.append
    r = 1
    while p.propose(ProposerContext(round=r, best_source=base(), baseline_source=base(), history=[])).change != "num_warps 4 → 1":
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=0.0))
        r += 1
        assert r < 40
    p.feedback(Feedback(round=r, status="rejected_by_person", accepted=False, reason=REASON, rejected_by_person=True))

    later = exhaust(p, larger_block(), r + 1)
    moves = warps_moves(larger_block(), later)
    assert (4, 1) not in moves
    assert (4, 2) in moves and (4, 8) in moves  # the other warp counts are still tried
    told = [s for s in said if "num_warps 4 → 1" in s]
    assert len(told) == 1, said
    assert f"round {r}" in told[0] and REASON in told[0] and "not proposed again" in told[0]


def _line(round_no: int, commit: str, incumbent: str, kind: str = "search") -> TrajectoryLine:
    return TrajectoryLine(round=round_no, change="num_warps 4 → 1", proposer=ProposerInfo(kind=kind, name=kind),  # type: ignore[arg-type]
                          commit=commit, status="rejected_by_person", reason=REASON, accepted=False,
                          incumbent_commit=incumbent, device="cpu")


@pytest.mark.parametrize("kind,edit,refused", [
    ("search", lambda s: s, True),  # the search's own proposal
    ("llm", lambda s: s.replace("num_warps=1", "num_warps = 1") + "\n# one warp\n", True),  # the same edit, written otherwise
    ("llm", lambda s: s.replace("offsets < n_elements", "n_elements > offsets"), False),  # more than the knob
])
def test_a_resumed_run_rebuilds_the_rejections_from_the_workspace_history(kind, edit, refused):
    # a fresh proposer with no saved state (killed before it was saved, or another proposer made the run so
    # far): the trajectory's rejection and the two commits are all it has
    rejected = edit(one_warp(base()))
    commits = {"c0": base(), "c1": rejected}
    history = [_line(3, "c1", "c0", kind)]
    said: list[str] = []
    p = SearchProposer(seed=0, sources=commits.get)
    p.on_activity = said.append
    from_base = exhaust(p, base(), 4, history)
    assert rejected not in from_base
    later = exhaust(p, larger_block(), 4 + len(from_base), history)
    assert ((4, 1) in warps_moves(base(), from_base) | warps_moves(larger_block(), later)) is not refused
    if refused:
        assert any("num_warps 4 → 1" in s and "round 3" in s and REASON in s for s in said), said


def test_a_rejection_saved_by_an_older_version_is_kept_across_incumbents():
    p = SearchProposer(seed=0)
    p.propose(ProposerContext(round=1, best_source=base(), baseline_source=base(), history=[]))
    state = json.loads(json.dumps(p.state()))
    state.pop("refused", None)
    state["version"] = 2
    state["rejected"] = {state_key(analyze(base()).assignment): [[f"{WARPS}=1"]]}
    old = SearchProposer(seed=0)
    old.restore(state)
    assert (4, 1) not in warps_moves(larger_block(), exhaust(old, larger_block(), 2))
