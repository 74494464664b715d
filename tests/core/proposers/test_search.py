"""The built-in search: Max-Q learning over the transformations, driven through propose/feedback on
synthetic latency landscapes (no evaluator), its saved state, and one real headless run on the interpreter."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import statistics
import subprocess
import sys

import pytest

from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer, state_key
from kernel_tui.core.proposers.transforms import analyze, source_hash
from tests.conftest import FIXTURES, ROOT
from tests.core.proposers.rounds import turned_down

SEEDS = range(5)


def baseline(name: str) -> str:
    return (FIXTURES / name / "baseline.py").read_text(encoding="utf-8")


# --- synthetic landscapes: latency as a function of the knob assignment ---------------------------------------
def vector_add_latency(a: dict) -> float:
    """Bowl in log2(BLOCK_SIZE) around 2048, the best num_warps growing with the block (an interaction: a
    bigger block alone does not pay until the warps follow), evict_first and .cg a few percent better."""
    b, w = a["const:BLOCK_SIZE"], a["launch:add_kernel:0:num_warps"]
    log_t = 0.03 * (math.log2(b) - 11) ** 2 + 0.04 * (math.log2(w) - min(4, max(0, math.log2(b / 256)))) ** 2
    log_t += {"": 0.0, "evict_first": -0.05, "evict_last": 0.02}[a["kernel:add_kernel:eviction_policy"]]
    log_t += {"": 0.0, ".cg": -0.02}[a["kernel:add_kernel:cache_modifier"]]
    return 1e-3 * math.exp(log_t)


def matmul_latency(a: dict) -> float:
    """A product space of three knobs (BLOCK_M x BLOCK_N x BLOCK_K, best 128 x 128 x 64); every other knob
    of the matmul (warps, stages, launch order, GROUP_M, unrolling, load hints) does nothing but noise."""
    m, n, k = (math.log2(a[f"const:BLOCK_{d}"]) for d in "MNK")
    log_t = 0.05 * (m - 7) ** 2 + 0.05 * (n - 7) ** 2 + 0.04 * (k - 6) ** 2 + 0.02 * (m - n) ** 2
    return 1e-3 * math.exp(log_t)


def assignments(name: str, knobs: list[str] | None = None) -> list[dict]:
    """Every valid assignment of `knobs` (default: all of the baseline's), the others as in the baseline."""
    a = analyze(baseline(name))
    knobs = knobs or sorted(a.knobs)
    out = []
    for combo in itertools.product(*(a.knobs[k].domain for k in knobs)):
        assignment = {**a.assignment, **dict(zip(knobs, combo))}
        if not a.violations(assignment):
            out.append(assignment)
    return out


def sweep(name: str, latency, knobs: list[str] | None = None) -> list[float]:
    """The latencies an exhaustive sweep would measure."""
    return [latency(a) for a in assignments(name, knobs)]


class Simulation:
    """The Session's loop without an evaluator: the gate accepts a measured improvement of at least 1%."""

    def __init__(self, name: str, latency, proposer: SearchProposer, *, noise: float = 0.01, seed: int = 0,
                 fail=lambda a: False):
        self.name, self.latency, self.proposer, self.fail = name, latency, proposer, fail
        self.base = baseline(name)
        self.best = self.base
        self.noise = random.Random(1000 + seed)
        self.noise_sd = noise
        self.round = 0
        self.proposals: list = []

    def context(self) -> ProposerContext:
        return ProposerContext(round=self.round + 1, best_source=self.best, baseline_source=self.base, history=[])

    def propose(self):
        proposal = self.proposer.propose(self.context())
        if proposal is not None:
            self.round += 1
            self.proposals.append(proposal)
        return proposal

    def judge(self, proposal) -> float:
        cand, inc = analyze(proposal.source).assignment, analyze(self.best).assignment
        if self.fail(cand):
            self.proposer.feedback(Feedback(round=self.round, status="incorrect", accepted=False, reason="wrong"))
            return math.inf
        t_cand = self.latency(cand) * math.exp(self.noise.gauss(0, self.noise_sd))
        t_inc = self.latency(inc) * math.exp(self.noise.gauss(0, self.noise_sd))
        improvement = 1 - t_cand / t_inc
        accepted = improvement >= 0.01
        self.proposer.feedback(Feedback(
            round=self.round, status="ok", accepted=accepted, reason="", improvement=improvement,
            latency=t_cand, incumbent_latency=t_inc,
        ))
        if accepted:
            self.best = proposal.source
        return self.latency(cand)

    def evaluations_to(self, target: float, limit: int = 300) -> int | None:
        for _ in range(limit):
            proposal = self.propose()
            if proposal is None:
                return None
            if self.judge(proposal) <= target:
                return self.round
        return None


@pytest.mark.parametrize("name,latency,knobs", [
    ("vector_add", vector_add_latency, None),
    ("matmul", matmul_latency, ["const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K"]),
])
def test_max_q_reaches_the_optimum_in_fewer_evaluations_than_a_sweep(name, latency, knobs):
    space = sweep(name, latency, knobs)
    optimum = min(space)
    found = []
    for seed in SEEDS:
        sim = Simulation(name, latency, SearchProposer(seed=seed), seed=seed)
        n = sim.evaluations_to(optimum * 1.03)
        assert n is not None, f"seed {seed} never came within 3% of the optimum"
        found.append(n)
    print(f"{name}: evaluations to within 3% of the optimum {sorted(found)}, sweep {len(space)}")
    assert statistics.median(found) < len(space)
    assert statistics.median(found) < len(space) / 3  # and by a wide margin: the sweep is 144 / 106
    assert max(found) < len(space)


def test_failed_candidates_are_learned_from():
    # blocks of 4096 and more "fail" (as if they broke correctness): the search still finds the best
    # of what passes and does not keep proposing failing blocks
    def fail(a):
        return a["const:BLOCK_SIZE"] >= 4096

    space = [vector_add_latency(a) for a in assignments("vector_add") if not fail(a)]
    sim = Simulation("vector_add", vector_add_latency, SearchProposer(seed=3), seed=3, fail=fail)
    assert sim.evaluations_to(min(space) * 1.03) is not None
    failing = [p for p in sim.proposals if fail(analyze(p.source).assignment)]
    assert len(failing) <= 4, [p.change for p in failing]
    state = sim.proposer.state()
    assert any(fails for _, fails in state["outcomes"].values())


def test_never_the_same_source_or_state_action_twice_and_none_when_spent():
    sim = Simulation("softmax", lambda a: 1.0 + 0.1 * random.Random(json.dumps(a, sort_keys=True)).random(),
                     SearchProposer(seed=1), seed=1)
    while (proposal := sim.propose()) is not None:
        sim.judge(proposal)
        assert sim.round < 200
    sources = [p.source for p in sim.proposals]
    assert len(sources) == len(set(sources)) > 5
    assert source_hash(sim.base) not in {source_hash(s) for s in sources}
    state = sim.proposer.state()
    assert len(state["tried_pairs"]) == len(set(state["tried_pairs"])) == len(sources)
    assert sim.propose() is None  # spent stays spent
    # softmax has 30 assignments of one program per row (5 warps x 3 eviction policies x 2 cache modifiers) and
    # 150 persistent ones (its loop over rows loads: x 5 stages): each proposed once at most
    assert len(sources) <= 30 + 150 - 1


def test_change_texts_name_the_transformation():
    analysis = analyze(baseline("matmul"))
    changes = {a.change for a in analysis.actions()}
    assert {"block_m 64 → 128", "num_warps 4 → 8", "num_stages 2 → 3", "grouped launch order GROUP_M=8",
            "eviction_policy evict_first on loads", "cache_modifier .cg on loads", "loop_unroll_factor 1 → 2",
            } <= changes
    assert "block_size 256 → 1024" in {a.change for a in analyze(baseline("vector_add")).actions()}
    pattern = re.compile(
        r"^((block_\w+|group_m|num_warps|num_stages|loop_unroll_factor) \S+ → \S+( \(.+\))?"
        r"|grouped launch order GROUP_M=\d+"
        r"|persistent grid over the SMs( \(.+\))?: programs loop over the tiles, one per SM"
        r"|unmasked K loop when K is a multiple of its block \(EVEN_K guard at launch\)"
        r"|tl\.dot operands loaded through tensor descriptors \(TMA; USE_TMA guard at launch\)"
        r"|sizes( of \w+)? as compile-time constants \(.+\): compiled once per shape, index math by constants"
        r"|(eviction_policy|cache_modifier) (\S+ → )?\S+ on loads)(, then .+)?$")
    for name in ("vector_add", "matmul", "rmsnorm"):
        sim = Simulation(name, lambda a: 1.0, SearchProposer(seed=2))
        for _ in range(15):
            proposal = sim.propose()
            assert proposal is not None and pattern.match(proposal.change), proposal.change
            assert proposal.proposer.kind == "search" and proposal.proposer.name == "built-in search"
            sim.judge(proposal)


def _drive(p: SearchProposer, sim: Simulation, steps: int) -> list[str]:
    out = []
    for _ in range(steps):
        proposal = sim.propose()
        if proposal is None:
            break
        out.append(proposal.source)
        sim.judge(proposal)
    return out


@pytest.mark.parametrize("mid_proposal", [False, True])
def test_state_round_trips_and_continues_identically(mid_proposal):
    def make(p):
        return Simulation("matmul", matmul_latency, p, seed=4)

    straight = make(SearchProposer(seed=4))
    first = _drive(straight.proposer, straight, 8)
    # a second run, stopped after the same 8 rounds and resumed from JSON into a fresh proposer
    resumed_sim = make(SearchProposer(seed=4))
    assert _drive(resumed_sim.proposer, resumed_sim, 8) == first
    pending = None
    if mid_proposal:  # stopped after a proposal was made, before its verdict (the Session saves then too)
        pending = resumed_sim.propose()
        pending_straight = straight.propose()
        assert pending.source == pending_straight.source
        straight.judge(pending_straight)
    saved = json.loads(json.dumps(resumed_sim.proposer.state()))
    assert saved["kind"] == "search" and saved["step"] == 8 + mid_proposal
    fresh = SearchProposer(seed=99, gamma=0.5)  # restore wins over the constructor's arguments
    fresh.restore(saved)
    assert fresh.state() == saved
    resumed_sim.proposer = fresh
    if pending is not None:
        resumed_sim.judge(pending)
    assert _drive(fresh, resumed_sim, 10) == _drive(straight.proposer, straight, 10)
    assert resumed_sim.proposer.state() == straight.proposer.state()


def test_a_resumed_proposer_remembers_the_sources_it_tried():
    sim = Simulation("vector_add", vector_add_latency, SearchProposer(seed=5), seed=5)
    tried = set(_drive(sim.proposer, sim, 12))
    other = SearchProposer(seed=6)  # another seed would go elsewhere, but the tried set is restored
    other.restore(sim.proposer.state())
    sim.proposer = other
    later = _drive(other, sim, 30)
    assert not tried & set(later) and len(later) == len(set(later))


def test_state_is_json_and_foreign_states_are_ignored():
    p = SearchProposer(seed=0)
    assert p.state()["kind"] == "search"
    p.restore({"kind": "replay", "directory": "/x", "next": 3})
    assert p.state()["step"] == 0
    sim = Simulation("rmsnorm", lambda a: 1.0, p)
    _drive(p, sim, 3)
    json.dumps(p.state())
    assert p.state()["step"] == 3 and len(p.state()["tried_sources"]) >= 4  # 3 proposals + the baseline


def test_person_rejection_and_edit_are_taken():
    p = SearchProposer(seed=0)
    base = baseline("vector_add")
    ctx = ProposerContext(round=1, best_source=base, baseline_source=base, history=[])
    first = p.propose(ctx)
    p.feedback(Feedback(round=1, status="rejected_by_person", accepted=False, reason="no", rejected_by_person=True))
    second = p.propose(ctx.model_copy(update={"round": 2}))
    assert second.source != first.source
    edited = base.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512")
    p.feedback(Feedback(round=2, status="ok", accepted=True, reason="", improvement=0.2, edited_source=edited))
    for r in range(3, 40):
        nxt = p.propose(ProposerContext(round=r, best_source=edited, baseline_source=base, history=[]))
        if nxt is None:
            break
        assert nxt.source not in (first.source, second.source, edited, base)
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=0.0))


def test_a_rejected_change_is_not_proposed_again_from_the_same_state_even_after_a_restart():
    # the person rejects "cache_modifier .cg" on the baseline; the best never moves, so every later proposal
    # is made from the same state: neither the step again nor a two-step path through it, before or after
    # a restore into a fresh proposer
    base = baseline("vector_add")
    p = SearchProposer(seed=0)

    def ctx(r: int) -> ProposerContext:
        return ProposerContext(round=r, best_source=base, baseline_source=base, history=[])

    def neutral(r: int) -> None:
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=0.0))

    rejected = 1
    while "cache_modifier .cg" not in p.propose(ctx(rejected)).change:
        neutral(rejected)
        rejected += 1
    p.feedback(Feedback(round=rejected, status="rejected_by_person", accepted=False, reason="no .cg here",
                        rejected_by_person=True))
    fresh = SearchProposer(seed=0)
    fresh.restore(json.loads(json.dumps(p.state())))
    p = fresh
    later = []
    for r in range(rejected + 1, rejected + 400):
        proposal = p.propose(ctx(r))
        if proposal is None:
            break
        later.append(proposal.change)
        neutral(r)
    assert later and any(", then " in c for c in later)  # the two-step paths were reached
    assert not [c for c in later if "cache_modifier .cg" in c]


def test_imports_no_torch_triton_or_textual():
    code = ("import sys; import kernel_tui.core.proposers.search, kernel_tui.core.proposers.transforms; "
            "print(sorted(m for m in ('torch', 'triton', 'textual') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- end to end: the real CLI on the interpreter ------------------------------------------------------------------
def kt(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_headless_search_run_on_the_interpreter(tmp_path):
    """A search run, stopped after a round and resumed: it continues where it stopped and proposes nothing it
    tried before. On the interpreter the vector_add's moves are its block sizes (warps and load hints do nothing
    there), and a halving that lost more than 20% ends the way down (the search's TOO_FAR): it may say it has
    nothing more to propose before the budget is spent, and then says so."""
    import git

    ws = tmp_path / "ws"
    out = kt("run", str(FIXTURES / "vector_add"), "--headless", "--proposer", "search", "--max-steps", "1",
             "--device", "cpu", "--workspace", str(ws))
    assert out.returncode == 0, out.stdout + out.stderr
    first = [json.loads(x) for x in (ws / "trajectory.jsonl").read_text().splitlines()]
    assert len(first) == 1 and json.loads((ws / "session.json").read_text())["proposer"]["step"] == 1

    more = kt("run", str(ws), "--headless", "--max-steps", "4", "--device", "cpu")
    assert more.returncode == 0, more.stdout + more.stderr
    lines = [json.loads(x) for x in (ws / "trajectory.jsonl").read_text().splitlines()]
    assert 2 <= len(lines) <= 4 and lines[0] == first[0]
    if len(lines) < 4:
        assert "idle: the proposer has nothing more to propose" in more.stdout
    repo = git.Repo(ws)
    sources = [repo.commit(ln["commit"]).tree["kernel.py"].data_stream.read().decode() for ln in lines]
    assert len(set(sources)) == len(lines) and baseline("vector_add") not in sources  # nothing proposed twice
    for ln in lines:
        assert ln["status"] not in ("incorrect", "compile_error", "policy_violation"), ln
        assert ln["proposer"]["kind"] == "search" and ln["proposer"]["name"] == "built-in search"
        assert ln["change"].startswith("block_size"), ln["change"]
    assert json.loads((ws / "session.json").read_text())["proposer"]["step"] == len(lines)


def test_the_incumbents_bottleneck_weights_the_knob_kinds_it_favours():
    from kernel_tui.core.proposers.search import BOTTLENECK_PRIOR, FAVOURED_KINDS

    p = SearchProposer(seed=0)
    said: list[str] = []
    p.on_activity = said.append
    base = baseline("vector_add")
    ctx = ProposerContext(round=1, best_source=base, baseline_source=base, history=[])
    assert p.propose(ctx) is not None and p.bottleneck is None and not said
    analysis = p._analyze(base)
    candidates = p._candidates(analysis, state_key(analysis.assignment))
    before = [p._score(analysis, analysis.assignment, 0.0, c)[0] for c in candidates]
    p.bottleneck = "compute"  # load hints are not what a compute-bound kernel needs
    after = [p._score(analysis, analysis.assignment, 0.0, c)[0] for c in candidates]
    favoured = FAVOURED_KINDS["compute"]
    raised = 0
    for c, b, a in zip(candidates, before, after):
        kinds = [analysis.knobs[part.split("=", 1)[0]].kind for part in c.parts]
        share = sum(k in favoured for k in kinds) / len(kinds)
        assert a - b == pytest.approx(BOTTLENECK_PRIOR * share, abs=1e-12)
        raised += share > 0
    assert 0 < raised < len(candidates)  # some steps favoured, some not: the prior discriminates

    p.pending, p.bottleneck = {}, None
    ctx2 = ctx.model_copy(update={"round": 2, "bottleneck": "compute"})
    p.propose(ctx2)
    assert said == ["the incumbent is compute-bound: trying block, epilogue, grid, group, input_precision, k_mask, launch_order, loads, "
                    "num_stages, num_warps, split_k, warp_specialize knobs first"]
    p.propose(ctx2.model_copy(update={"round": 3}))
    assert len(said) == 1  # said once, not every round
    fresh = SearchProposer(seed=0)
    fresh.restore(json.loads(json.dumps(p.state())))
    assert fresh.bottleneck == "compute"


def test_a_tile_of_tl_dot_is_also_offered_with_its_warps_or_stages_moved_with_it():
    p = SearchProposer(seed=0)
    base = baseline("matmul")
    analysis = p._analyze(base)
    p.model.register(analysis)
    candidates = p._candidates(analysis, state_key(analysis.assignment))
    pairs = [c for c in candidates if len(c.parts) == 2]
    assert pairs, "coupled moves are offered beside the single steps"
    kinds = {c.parts[0].split("=")[0]: analysis.knobs[c.parts[0].split("=")[0]].kind for c in pairs}
    assert set(kinds.values()) == {"block"}
    for c in pairs:
        tile, partner = (part.split("=") for part in c.parts)
        old_tile, new_tile = analysis.knobs[tile[0]].value, int(tile[1])
        knob = analysis.knobs[partner[0]]
        ratio = new_tile / old_tile
        if knob.kind == "num_warps":  # moved the tile's way, by up to the tile's ratio
            assert min(knob.value, knob.value * ratio) <= int(partner[1]) <= max(knob.value, knob.value * ratio)
        elif knob.kind == "block":  # another tile by the inverse ratio: the tile's size stays
            assert int(partner[1]) * ratio == knob.value
        else:
            assert knob.kind == "num_stages" and ratio > 1 and int(partner[1]) == knob.value - 1
    grown = {c.parts for c in pairs if analysis.knobs[c.parts[1].split("=")[0]].kind == "num_warps"}
    assert any(int(t.split("=")[1]) > analysis.knobs[t.split("=")[0]].value for t, _ in grown)
    assert any(int(t.split("=")[1]) < analysis.knobs[t.split("=")[0]].value for t, _ in grown)
    # an elementwise block is left to single steps
    va = p._analyze(baseline("vector_add"))
    assert all(len(c.parts) == 1 for c in p._candidates(va, state_key(va.assignment)))


def test_a_candidate_whose_kernels_spill_is_skipped_before_any_round_is_spent_on_it():
    from kernel_tui.core.evaluator.kernel_facts import KernelFacts
    from kernel_tui.core.proposers.search import MAX_RESOURCE_CHECKS, resource_problem

    spilling = KernelFacts(name="add_kernel", registers=255, spills=12, num_warps=4, blocks_per_sm=2, occupancy=0.125,
                           limited_by="registers")
    assert resource_problem([spilling]) == "add_kernel spills 12 registers per thread to local memory"
    assert "no block fits" in resource_problem([spilling.model_copy(update={"spills": 0, "blocks_per_sm": 0})])
    assert resource_problem([spilling.model_copy(update={"spills": 0})]) is None  # low occupancy alone is fine

    asked: list[str] = []

    def compiled(source: str) -> list:
        asked.append(source)
        return [spilling] if "BLOCK_SIZE = 1024" in source else []

    p = SearchProposer(seed=0, resources=compiled)
    base = baseline("vector_add")
    proposals, said = turned_down(p, base, 12)
    assert asked and all("BLOCK_SIZE = 1024" not in x.source for x in proposals)
    skipped = [s for s in said if s.startswith("skipped before timing:")]
    assert skipped and all("spills 12 registers" in s for s in skipped)
    assert p.outcomes[next(k for k in p.outcomes if k.endswith("=1024"))][1] >= 1  # learned as a failure

    everything_spills = SearchProposer(seed=0, resources=lambda source: [spilling])
    checked: list[str] = []
    everything_spills.on_activity = checked.append
    assert everything_spills.propose(ProposerContext(round=1, best_source=base, baseline_source=base, history=[]))
    assert len(checked) == MAX_RESOURCE_CHECKS  # bounded: after that the pick stands (the gate will judge it)


def test_a_candidate_the_compiler_rejects_is_skipped_before_timing_and_learned_as_a_failure():
    # on an H100, L1-95's first round went to a load with two hints that ptxas rejects: the pre-check had
    # compiled it and said nothing, since only facts came back
    from kernel_tui.core.proposers.search import CompileRefused

    def compiled(source: str) -> list:
        if 'cache_modifier=".cg"' in source:
            raise CompileRefused("a call: PTXASError: ptxas: line 154; error   : Unknown modifier")
        return []

    p = SearchProposer(seed=0, resources=compiled)
    proposals, said = turned_down(p, baseline("vector_add"), 8)
    assert all('cache_modifier=".cg"' not in x.source for x in proposals)
    skipped = [s for s in said if s.startswith("skipped before timing:")]
    assert skipped and all(s.endswith("it does not compile: a call: PTXASError: ptxas: line 154; error   : "
                                      "Unknown modifier") for s in skipped)
    assert p.outcomes[next(k for k in p.outcomes if k.endswith("=.cg"))][1] >= 1  # learned as a failure


def test_when_every_one_step_move_spills_the_search_goes_on_with_the_far_ones():
    # in a tl.dot kernel one-step moves come first; when the compiler says each of the last few spills,
    # what is left is the far moves, not "nothing more to propose"
    from kernel_tui.core.evaluator.kernel_facts import KernelFacts

    base = baseline("matmul")
    p = SearchProposer(seed=0)

    def context(r: int) -> ProposerContext:
        return ProposerContext(round=r, best_source=base, baseline_source=base, history=[], bottleneck="compute")

    def local_moves() -> list:
        a = p._analyze(base)
        return p._local_first(a, p._favoured_first(p._candidates(a, state_key(a.assignment))))

    r = 0
    while len(local := local_moves()) > 2 or not all(p._one_step(p._analyze(base).assignment, part)
                                                     for c in local for part in c.parts):
        r += 1
        assert r < 60, "the one-step moves should run low within the budget"
        assert p.propose(context(r)) is not None
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=-0.3, latency=1.3,
                            incumbent_latency=1.0))
    spill = {c.source for c in local}
    p.resources = lambda src: [KernelFacts(name="matmul_kernel", spills=40 if src in spill else 0, blocks_per_sm=1)]
    said: list[str] = []
    p.on_activity = said.append
    prop = p.propose(context(r + 1))
    assert prop is not None and prop.source not in spill
    assert sum(s.startswith("skipped before timing:") for s in said) == len(local)
