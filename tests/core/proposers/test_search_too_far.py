"""A step that lost more than 20% went too far: from the same state, no single move of that knob as far or
further the same way is offered again; nearer moves and the other way still are."""

from __future__ import annotations

import json
import math

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer
from kernel_tui.core.proposers.search_steps import beyond
from kernel_tui.core.proposers.transforms import Action
from tests.conftest import FIXTURES

BASE = (FIXTURES / "vector_add" / "baseline.py").read_text(encoding="utf-8")


def test_beyond_is_the_same_way_as_far_or_further_from_the_same_value():
    lost = [("const:BLOCK_SIZE", 256.0, 4096.0)]

    def move(old, new, knob="const:BLOCK_SIZE"):
        return Action(knob=knob, kind="block", old=old, new=new, change="")

    assert beyond(move(256, 4096), lost) and beyond(move(256, 8192), lost)
    assert not beyond(move(256, 1024), lost)  # nearer: still worth a look
    assert not beyond(move(256, 64), lost)  # the other way
    assert not beyond(move(512, 8192), lost)  # from another value the knob is another question
    assert not beyond(move(256, 8192, knob="const:OTHER"), lost)
    assert not beyond(Action(knob="k", kind="eviction_policy", old="", new="evict_first", change=""), lost)


def test_after_a_step_that_lost_30_percent_the_search_never_goes_as_far_that_way():
    search = SearchProposer(seed=1)
    ctx = lambda r: ProposerContext(round=r, best_source=BASE, baseline_source=BASE, history=[], device="cuda")  # noqa: E731
    far = None
    for rnd in range(1, 40):
        proposal = search.propose(ctx(rnd))
        if proposal is None:
            break
        parts = search.pending[str(rnd)]["parts"]
        state = json.loads(search.pending[str(rnd)]["s"])
        for part in parts if len(parts) == 1 else []:  # the state stays: nothing is accepted
            knob, _, raw = part.partition("=")
            if far is not None and knob == far[0] and raw.lstrip("-").isdigit() and state.get(knob) == far[1]:
                new = int(raw)
                assert not (math.log(new / far[1]) * math.log(far[2] / far[1]) > 0
                            and abs(math.log(new / far[1])) >= abs(math.log(far[2] / far[1]))), part
        numeric = [p for p in parts if p.partition("=")[2].isdigit()]
        if far is None and len(parts) == 1 and numeric:
            knob, _, raw = parts[0].partition("=")
            far = (knob, state[knob], int(raw))
            search.feedback(Feedback(round=rnd, status="ok", accepted=False, reason="rejected early: -30%",
                                     improvement=-0.30, latency=1.3e-3, incumbent_latency=1e-3))
        else:
            search.feedback(Feedback(round=rnd, status="ok", accepted=False, reason="rejected", improvement=-0.01,
                                     latency=1.01e-3, incumbent_latency=1e-3))
    assert far is not None
