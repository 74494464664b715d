"""The built-in search and the incumbent's bottleneck and tiles: which knob families go first, what a
turned-down step of another family teaches about later incumbents, knob effects read per tile, and the
coupled tile moves. Driven through propose/feedback and the value model, no evaluator."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import FAVOURED_KINDS, STATE_VERSION, SearchProposer, state_key
from kernel_tui.core.proposers.transforms import analyze
from tests.core.proposers.test_search import baseline

HINTS = ("eviction_policy", "cache_modifier", "loop_unroll_factor")


def context(r: int, best: str, base: str, bottleneck: str | None) -> ProposerContext:
    return ProposerContext(round=r, best_source=best, baseline_source=base, history=[], bottleneck=bottleneck)


def no_effect(p: SearchProposer, r: int) -> None:
    p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=0.0, latency=1.0,
                        incumbent_latency=1.0))


def kinds_of(analysis, parts) -> set[str]:
    return {analysis.knobs[part.split("=", 1)[0]].kind for part in parts}


# --- the bottleneck decides which families go first --------------------------------------------------------
def test_a_compute_bound_incumbent_gets_no_load_hint_while_a_tile_warp_or_stage_step_is_left():
    # live on the H200 matmul (compute-bound), rounds 5-7 and 22-24 went to load hints that measured nothing:
    # with most tile, warp and stage steps slower, a step predicted to do nothing looked best. Here every
    # such step is 30% slower; 40 rounds stay within the 50-odd tile, warp and stage steps from the baseline
    base = baseline("matmul")
    p = SearchProposer(seed=0)
    changes = []
    for r in range(1, 41):
        proposal = p.propose(context(r, base, base, "compute"))
        assert proposal is not None
        changes.append(proposal.change)
        if any(h in proposal.change for h in HINTS):
            no_effect(p, r)
        else:
            p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=-0.3, latency=1.3,
                                incumbent_latency=1.0))
    assert not [c for c in changes if any(h in c for h in HINTS)], changes

    # with no bottleneck (off a GPU) every family is a candidate from the start
    p = SearchProposer(seed=0)
    p.propose(context(1, base, base, None))
    analysis = p._analyze(base)
    everything = p._favoured_first(p._candidates(analysis, state_key(analysis.assignment)))
    assert any(kinds_of(analysis, c.parts) & {"eviction_policy", "cache_modifier", "unroll"} for c in everything)


def test_the_other_families_come_once_the_favoured_steps_are_spent():
    # vector_add told it is compute-bound: its blocks and warps are favoured, its load hints are not
    base = baseline("vector_add")
    p = SearchProposer(seed=0)
    analysis = analyze(base)
    favoured_steps = [a for a in analysis.actions() if a.kind in FAVOURED_KINDS["compute"]]
    kinds = []
    for r in range(1, len(favoured_steps) + 3):
        proposal = p.propose(context(r, base, base, "compute"))
        assert proposal is not None
        kinds.append("hint" if any(h in proposal.change for h in HINTS) else "favoured")
        no_effect(p, r)
    n = len(favoured_steps)
    assert kinds[:n] == ["favoured"] * n and kinds[n:] == ["hint", "hint"]


# --- a turned-down step of a family the bottleneck puts last carries over ---------------------------------------
def test_a_load_hint_turned_down_under_compute_is_not_offered_again_on_a_new_incumbent_until_the_bottleneck_changes():
    base = baseline("vector_add")
    p = SearchProposer(seed=0)
    hints: list[str] = []
    r = 0
    while len(hints) < 2:  # every step measured as no effect, until two load hints were tried
        r += 1
        proposal = p.propose(context(r, base, base, "compute"))
        assert proposal is not None and r < 40
        if any(h in proposal.change for h in HINTS):
            hints.append(p.pending[str(r)]["a"])
        no_effect(p, r)
    turned_down = set(p.turned_down["compute"])
    assert turned_down == set(hints)  # the blocks and warps turned down too were favoured: not carried

    # a new incumbent (a larger block), still compute-bound: those hints are no candidate, the others are
    a = analyze(base)
    step = next(x for x in a.actions() if x.kind == "block" and x.new == 1024)
    best = a.apply(step)
    p.propose(context(r + 1, best, base, "compute"))
    no_effect(p, r + 1)
    new = p._analyze(best)
    offered = {part for c in p._candidates(new, state_key(new.assignment)) for part in c.parts}
    assert not offered & turned_down
    assert any(key.startswith("kernel:add_kernel:") for key in offered)  # the hints not tried yet are

    # the bottleneck changes to memory: the hints are worth a try again (on the vector_add they paid only
    # once the block had grown)
    p.propose(context(r + 2, best, base, "memory"))
    offered = {part for c in p._candidates(new, state_key(new.assignment)) for part in c.parts}
    assert turned_down <= offered

    # saved and restored with the rest of the state
    fresh = SearchProposer(seed=0)
    fresh.restore(json.loads(json.dumps(p.state())))
    assert set(fresh.turned_down["compute"]) == turned_down


def test_a_favoured_hint_under_memory_is_tried_again_on_a_new_incumbent():
    # memory-bound: load hints are on the critical path, and their effect depends on the block
    base = baseline("vector_add")
    p = SearchProposer(seed=0)
    for r in range(1, 30):
        proposal = p.propose(context(r, base, base, "memory"))
        assert proposal is not None
        no_effect(p, r)
    turned_down = [key.split("=", 1)[0] for key in p.turned_down.get("memory", [])]
    assert not [kid for kid in turned_down if p.model.kinds.get(kid) in FAVOURED_KINDS["memory"]]
    assert set(turned_down) <= {"kernel:add_kernel:grid"}  # a persistent grid is no memory-bound kernel's move


def test_an_older_saved_state_without_kinds_or_turned_down_steps_still_loads_and_continues():
    base = baseline("matmul")
    p = SearchProposer(seed=3)
    for r in range(1, 6):
        assert p.propose(context(r, base, base, "compute")) is not None
        no_effect(p, r)
    old = p.state()
    for key in ("kinds", "dot_knobs", "turned_down", "refused"):
        del old[key]
    old["version"] = 1
    old["rejected"] = {}
    for pending in old["pending"].values():
        for key in ("bottleneck", "moves", "change"):
            pending.pop(key, None)
    fresh = SearchProposer(seed=0)
    fresh.restore(json.loads(json.dumps(old)))
    assert fresh.model.kinds == {} and fresh.turned_down == {}
    for r in range(6, 12):
        assert fresh.propose(context(r, base, base, "compute")) is not None
        no_effect(fresh, r)
    assert fresh.model.kinds and fresh.model.dot_knobs  # filled again from the sources it analysed
    assert fresh.state()["version"] == STATE_VERSION


# --- knob effects read per tile --------------------------------------------------------------------------
MATMUL = {"M": "const:BLOCK_M", "N": "const:BLOCK_N", "K": "const:BLOCK_K",
          "w": "launch:matmul_kernel:0:num_warps", "s": "launch:matmul_kernel:0:num_stages"}

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) -> µs, as measured live on the H200 (fp16 4096³)
LIVE_MATMUL = [((64, 64, 32, 4, 2), 427), ((64, 256, 32, 16, 2), 454), ((16, 64, 32, 1, 2), 1070),
               ((64, 64, 256, 4, 1), 647), ((64, 64, 32, 4, 2), 415), ((128, 64, 32, 8, 2), 423),
               ((64, 64, 32, 4, 5), 429), ((256, 64, 32, 4, 2), 484), ((64, 64, 64, 4, 2), 452),
               ((64, 64, 32, 16, 2), 1120), ((128, 64, 32, 4, 2), 409), ((128, 64, 16, 4, 2), 687),
               ((128, 64, 32, 4, 4), 349), ((128, 128, 32, 4, 4), 231)]


def matmul_model(rows) -> tuple[SearchProposer, Callable[..., dict]]:
    p = SearchProposer(seed=0)
    a = analyze(baseline("matmul"))
    p.model.register(a)

    def assignment(m: int, n: int, k: int, w: int, s: int) -> dict:
        return {**a.assignment, **dict(zip(MATMUL.values(), (m, n, k, w, s)))}

    base_us = rows[0][1]
    for cfg, us in rows:
        p.model.add(assignment(*cfg), math.log(base_us / us))
    return p, assignment


def test_num_warps_16_much_slower_on_a_64x64_tile_does_not_condemn_num_warps_8_on_a_128x128_tile():
    p, at = matmul_model(LIVE_MATMUL)
    incumbent = at(128, 128, 32, 4, 4)
    mean, sd = p.model.predict(at(128, 128, 32, 8, 4), incumbent)
    assert mean > -0.05 and mean + 0.5 * sd > 0.1  # still worth a try, even at the greedy end of a run
    # where it was measured, the measurement stands
    mean16, sd16 = p.model.predict(at(64, 64, 32, 16, 2), at(64, 64, 32, 4, 2))
    assert mean16 < -0.8 and sd16 < 0.1
    # block_k 64 was 9% slower on 64x64 with 2 stages: on 128x128 with 4 it is open again
    mean64, sd64 = p.model.predict(at(128, 128, 64, 4, 4), incumbent)
    assert mean64 + 0.5 * sd64 > 0


def test_a_tile_knob_reads_other_tiles_only_in_a_kernel_with_tl_dot():
    p, at = matmul_model(LIVE_MATMUL[:3])
    assert p.model.tiled() == set(MATMUL.values())
    terms = p.model.terms(at(128, 64, 32, 8, 2), p.model.tiled())
    warps = {t[2:] for t in terms if t[0] == MATMUL["w"] and len(t) > 2}
    assert warps == {(MATMUL["M"], "128"), (MATMUL["N"], "64"), (MATMUL["K"], "32")}
    assert not [t for t in terms if t[0] == MATMUL["s"] and len(t) > 2]  # the reference value: no pair
    va = SearchProposer(seed=0)
    va.model.register(analyze(baseline("vector_add")))
    assert va.model.tiled() == set()  # an elementwise block couples weakly with its warps


# --- coupled tile moves ----------------------------------------------------------------------------------------
def test_a_tile_grown_fourfold_is_offered_with_twice_the_warps_too_and_a_tile_can_change_shape():
    p = SearchProposer(seed=0)
    base = baseline("matmul")
    a = p._analyze(base)
    p.model.register(a)
    changes = {c.change for c in p._candidates(a, state_key(a.assignment))}
    # the H200 sweep's best needs block_n 256 with 8 warps; live, only 16 came with it
    assert {"block_n 64 → 256, then num_warps 4 → 8", "block_n 64 → 256, then num_warps 4 → 16"} <= changes
    # from 256x128, the best 128x256 is one move (each of its two single steps is slower)
    wide = base.replace("BLOCK_M = 64", "BLOCK_M = 256").replace("BLOCK_N = 64", "BLOCK_N = 128") \
        .replace("num_warps=4", "num_warps=8")
    w = p._analyze(wide)
    p.model.register(w)
    changes = {c.change for c in p._candidates(w, state_key(w.assignment))}
    assert {"block_m 256 → 128, then block_n 128 → 256"} & changes or \
        {"block_n 128 → 256, then block_m 256 → 128"} & changes


# --- one step per knob first, in tl.dot kernels --------------------------------------------------------------

def far(analysis, parts) -> list[str]:
    """The parts that move a tile or warps by more than ×2 or ÷2, or stages by more than one."""
    out = []
    for part in parts:
        knob, value = part.split("=", 1)
        k = analysis.knobs.get(knob)
        if k is None or not value.isdigit():  # a structural change (launch order) or a string knob
            continue
        if k.kind in ("block", "num_warps") and int(value) not in (2 * k.value, k.value // 2):
            out.append(part)
        if k.kind == "num_stages" and abs(int(value) - k.value) != 1:
            out.append(part)
    return out


def test_a_dot_kernel_gets_one_step_moves_while_any_is_left_and_far_jumps_after():
    # live on the H200 matmul, 13 of 25 rounds moved a knob by more than one step: 2 won, 7 were 2-4x slower
    base = baseline("matmul")
    p = SearchProposer(seed=0)
    p.propose(context(1, base, base, "compute"))
    analysis = p._analyze(base)
    candidates = p._favoured_first(p._candidates(analysis, state_key(analysis.assignment)))
    local = p._local_first(analysis, candidates)
    assert any(far(analysis, c.parts) for c in candidates)  # far jumps are offered...
    assert local and not [c.change for c in local if far(analysis, c.parts)]  # ...after every one-step move
    # one-step moves include the coupled ones: a tile doubled with its warps
    assert any(len(c.parts) == 2 and kinds_of(analysis, c.parts) == {"block", "num_warps"} for c in local)

    # driven through the rounds: every proposal is one step per knob until those run out, then far ones come
    p = SearchProposer(seed=1)
    jumps = []
    for r in range(1, 80):
        proposal = p.propose(context(r, base, base, "compute"))
        if proposal is None:
            break
        pending = p.pending[str(r)]
        jumps.append(bool(far(analysis, pending["parts"])))
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=-0.3, latency=1.3,
                            incumbent_latency=1.0))
    assert True in jumps, "far jumps should come once the one-step moves are spent"
    # every one-step move first: those left after round 1 above, and that round's own (one step too)
    assert jumps.index(True) == len(local) + 1


def test_an_elementwise_kernel_beside_a_dot_kernel_keeps_its_far_jumps():
    # one source, two kernels: the matmul's tiles move one step at a time, the elementwise block does not
    base = baseline("matmul")
    ew = baseline("vector_add")
    kernel = ew[ew.index("@triton.jit"):ew.index("def launch")]
    source = base.replace("\n@triton.jit", "\nBLOCK_SIZE = 256\n\n\n" + kernel + "\n@triton.jit", 1)
    source = source.replace("        num_stages=2,\n    )\n", "        num_stages=2,\n    )\n"
                            "    add_kernel[(triton.cdiv(M * N, BLOCK_SIZE),)](c, c, c, M * N, BLOCK_SIZE=BLOCK_SIZE)\n")
    p = SearchProposer(seed=0)
    p.propose(context(1, source, source, "compute"))
    analysis = p._analyze(source)
    assert {n: k.has_dot for n, k in analysis.kernels.items()} == {"add_kernel": False, "matmul_kernel": True}
    local = p._local_first(analysis, p._candidates(analysis, state_key(analysis.assignment)))
    moves = {c.change for c in local if len(c.parts) == 1}
    assert {"block_size 256 → 8192", "num_warps 4 → 1 (add_kernel)"} <= moves  # the elementwise kernel's jumps
    matmul_far = [c.change for c in local
                  if far(analysis, [p for p in c.parts if "BLOCK_SIZE" not in p and "add_kernel" not in p])]
    assert not matmul_far  # the matmul's own knobs: one step at a time


def test_an_elementwise_kernel_keeps_its_far_jumps():
    # vector_add's best block is 32 times its start: a block size is not a tile of a product
    base = baseline("vector_add")
    p = SearchProposer(seed=0)
    p.propose(context(1, base, base, "memory"))
    analysis = p._analyze(base)
    candidates = p._candidates(analysis, state_key(analysis.assignment))
    assert p._local_first(analysis, candidates) == candidates
    assert any(far(analysis, c.parts) for c in candidates)
