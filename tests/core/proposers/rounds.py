"""Rounds a search plays against a gate that turns every proposal down (the tests of its skips before timing)."""

from __future__ import annotations

from kernel_tui.core.proposers.base import Feedback, Proposal, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer


def turned_down(p: SearchProposer, base: str, rounds: int, **context) -> tuple[list[Proposal], list[str]]:
    """`rounds` proposals from `base`, each rejected at -1%: the proposals, and what the search said meanwhile."""
    said: list[str] = []
    p.on_activity = said.append
    proposals = []
    for r in range(1, rounds + 1):
        prop = p.propose(ProposerContext(round=r, best_source=base, baseline_source=base, history=[], **context))
        assert prop is not None
        proposals.append(prop)
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=-0.01, latency=1.0,
                            incumbent_latency=1.0))
    return proposals, said
