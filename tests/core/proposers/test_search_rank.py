"""The built-in search ranks a tl.dot kernel's moves by the incumbent's register room: with room (few registers,
no spills, a small accumulator) the tile, K step and stages grow first; when it spills, they shrink first.
Driven through propose/feedback with the compiler's facts faked, and from the knob assignment alone."""

from __future__ import annotations

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.search import SearchProposer
from kernel_tui.core.proposers.search_rank import GROWING_STRUCTURE, fills_sms, programs, ranked, register_room
from kernel_tui.core.proposers.transforms import analyze
from kernel_tui.core.proposers.transforms.constraints import DotTile
from tests.conftest import ROOT
from tests.core.proposers.test_search import baseline

TILES = ("const:BLOCK_M", "const:BLOCK_N", "const:BLOCK_K", "launch:matmul_kernel:0:num_stages")
WARPS = "launch:matmul_kernel:0:num_warps"
ROOMY = KernelFacts(name="matmul_kernel", registers=90, spills=0, shared_bytes=24576, num_warps=4, num_stages=2,
                    blocks_per_sm=2)


def moves(base: str, source: str) -> tuple[list[int], float]:
    """Each of BLOCK_M, BLOCK_N, BLOCK_K and the stages: +1 up, -1 down, 0 kept; and the accumulator per thread's
    ratio after/before (BLOCK_M·BLOCK_N / warps)."""
    before, after = analyze(base).assignment, analyze(source).assignment
    signs = [(after[k] > before[k]) - (after[k] < before[k]) for k in TILES]

    def per_thread(a: dict) -> float:
        return a["const:BLOCK_M"] * a["const:BLOCK_N"] / a[WARPS]

    return signs, per_thread(after) / per_thread(before)


def first_proposals(p: SearchProposer, base: str, n: int, bottleneck: str | None = "compute", **gpu) -> list[str]:
    """The first n proposals from `base`, each measured 30% slower and turned down (the incumbent stays);
    `gpu`: the context's sm_count and output_elements."""
    out = []
    for r in range(1, n + 1):
        proposal = p.propose(ProposerContext(round=r, best_source=base, baseline_source=base, history=[],
                                             bottleneck=bottleneck, **gpu))
        assert proposal is not None
        out.append(proposal.source)
        p.feedback(Feedback(round=r, status="ok", accepted=False, reason="", improvement=-0.3, latency=1.3,
                            incumbent_latency=1.0))
    return out


def kinds(base: str, source: str) -> set[str]:
    before, after = analyze(base), analyze(source).assignment
    return {k.kind for kid, k in before.knobs.items() if after.get(kid) != k.value}


def test_with_register_room_a_compute_bound_matmul_grows_its_tile_stages_or_structure_first():
    # the fixture's 64x64 tile over 4 warps holds 32 accumulator registers per thread; the compiler says 90
    # registers and no spills: of a live H200 search's 18 rounds from here, the 10 that shrank a tile or its K
    # step or dropped a stage all lost (8 by 20% to 99%)
    base = baseline("matmul")
    asked: list[str] = []

    def compiled(source: str) -> list[KernelFacts]:
        asked.append(source)
        return [ROOMY]

    p = SearchProposer(seed=0, resources=compiled)
    for source in first_proposals(p, base, 8):
        signs, _ = moves(base, source)
        assert -1 not in signs and (1 in signs or kinds(base, source) & GROWING_STRUCTURE), (signs, kinds(base, source))
    assert base in asked  # the incumbent's own facts were read


def test_when_the_incumbent_spills_the_moves_that_take_registers_off_a_thread_come_first():
    base = baseline("matmul")
    spilling = ROOMY.model_copy(update={"registers": 255, "spills": 48})
    # only the incumbent spills: its candidates compile clean, so none is skipped before timing
    p = SearchProposer(seed=0, resources=lambda source: [spilling if source == base else ROOMY])
    proposals = [moves(base, source) for source in first_proposals(p, base, 12)]
    # seven such moves from the fixture (a tile, K step or stage down, more warps, a tile down with its warps)
    for signs, ratio in proposals[:7]:
        assert 1 not in signs and (-1 in signs or ratio < 1), signs
    # then those that keep a thread's registers (a tile trade), before any that add to them
    assert [ratio for _, ratio in proposals[7:9]] == [1.0, 1.0]


def test_without_compile_facts_the_assignment_decides_as_in_a_replay():
    base = baseline("matmul")  # 32 accumulator registers per thread: room to double twice within 128
    p = SearchProposer(seed=3)
    for source in first_proposals(p, base, 10):
        signs, _ = moves(base, source)
        assert -1 not in signs, signs

    # 128x256 over 4 warps: 256 accumulator registers per thread, past half of a thread's registers
    big = base.replace("BLOCK_M = 64", "BLOCK_M = 128").replace("BLOCK_N = 64", "BLOCK_N = 256")
    p = SearchProposer(seed=3)
    for source in first_proposals(p, big, 6):
        signs, ratio = moves(big, source)
        assert 1 not in signs and (-1 in signs or ratio < 1), signs


def test_register_room_reads_the_facts_first_and_the_accumulator_without_them():
    small = [DotTile("matmul_kernel", 64 * 64, 32, 4, 2)]  # 32 per thread
    assert register_room(small, None) == "room"
    assert register_room(small, [ROOMY]) == "room"
    assert register_room(small, [ROOMY.model_copy(update={"registers": 240})]) is None  # 240 + 32 > 255
    assert register_room(small, [ROOMY.model_copy(update={"spills": 8})]) == "full"
    assert register_room(small, [ROOMY.model_copy(update={"registers": 255})]) == "full"
    assert register_room([DotTile("matmul_kernel", 128 * 128, 32, 4, 2)], None) is None  # 128: neither
    assert register_room([DotTile("matmul_kernel", 128 * 256, 32, 4, 2)], None) == "full"  # 256
    assert register_room([DotTile("matmul_kernel", None, 32, 4, 2)], None) is None
    assert register_room([], None) is None  # no tl.dot: nothing to rank


def test_a_latency_bound_or_elementwise_kernel_keeps_every_candidate():
    base = baseline("matmul")
    p = SearchProposer(seed=0)
    p.propose(ProposerContext(round=1, best_source=base, baseline_source=base, history=[], bottleneck="latency"))
    a = p._analyze(base)
    from kernel_tui.core.proposers.search import state_key

    candidates = p._candidates(a, state_key(a.assignment))
    assert ranked(a, candidates, p._kinds_of, "latency", None) == candidates
    assert len(ranked(a, candidates, p._kinds_of, "compute", None)) < len(candidates)
    vector = analyze(baseline("vector_add"))
    q = SearchProposer(seed=0)
    q.propose(ProposerContext(round=1, best_source=baseline("vector_add"), baseline_source=baseline("vector_add"),
                              history=[]))
    elementwise = q._candidates(vector, state_key(vector.assignment))
    assert ranked(vector, elementwise, q._kinds_of, "compute", None) == elementwise


def test_an_output_of_fewer_tiles_than_sms_makes_more_programs_first():
    # KernelBench level 1 problem 6's output, 256x256: 16 tiles of 64x64 for an H200's 132 SMs. Live, the
    # register order spent 11 rounds on tiles there and never reached split-K
    base, few = baseline("matmul"), {"sm_count": 132, "output_elements": 256 * 256}
    a = analyze(base)
    assert programs(a, a.assignment, 256 * 256) == 16 and fills_sms(a, 256 * 256, 132) is False
    assert fills_sms(a, 4096 * 4096, 132) is True and fills_sms(a, 256 * 256, None) is None
    p = SearchProposer(seed=0)
    proposals = first_proposals(p, base, 6, bottleneck="latency", **few)
    for source in proposals:
        after = analyze(source)
        assert programs(after, after.assignment, 256 * 256) > 16, kinds(base, source)
    assert any("split_k" in kinds(base, source) for source in proposals)
    # the same kernel over a 4096x4096 output fills the SMs: the order is the registers' again
    q = SearchProposer(seed=0)
    for source in first_proposals(q, base, 6, sm_count=132, output_elements=4096 * 4096):
        assert -1 not in moves(base, source)[0]


def test_a_split_kernels_programs_count_its_splits():
    base = baseline("matmul")
    p = SearchProposer(seed=0)
    split = next(s for s in first_proposals(p, base, 12, bottleneck="latency", sm_count=132, output_elements=256 * 256)
                 if "split_k" in kinds(base, s))
    a = analyze(split)
    assert programs(a, a.assignment, 256 * 256) == 16 * 4  # SPLIT_K = 4 partial sums a tile
    more = {kid: 8 for kid, knob in a.knobs.items() if knob.kind == "splits"}
    assert more and programs(a, {**a.assignment, **more}, 256 * 256) == 16 * 8


def _to_tc(c) -> bool:
    return any(part.endswith("input_precision=tf32x3") for part in c.parts)


def test_an_fp32_dot_onto_the_tensor_cores_goes_first_and_with_a_lighter_thread_where_the_incumbent_spills():
    base = (ROOT / "bench/candidates/kb_square_gemm_triton.py").read_text()  # input_precision="ieee"
    p = SearchProposer(seed=0)
    a = p._analyze(base)
    p.model.register(a)  # the candidates before any is proposed (a proposal is tried, then not a candidate)
    from kernel_tui.core.proposers.search import state_key

    candidates = p._candidates(a, state_key(a.assignment))
    tf32 = ("kernel:matmul_kernel:input_precision=tf32x3",)
    for bottleneck, facts in (("compute", None), ("latency", None), ("compute", [ROOMY])):
        assert [c.parts for c in ranked(a, candidates, p._kinds_of, bottleneck, facts)] == [tf32]
    spilling = [ROOMY.model_copy(update={"registers": 255, "spills": 64})]
    # a spilling incumbent gets tf32x3 only with half the accumulator a thread holds (its split operands take
    # registers): twice the warps, or the output tile's M or N halved (on an H100 only block_n 64 paid on L1-1;
    # on L1-17 each of the three did), first, ahead of the other moves that free registers; block_k halved
    # keeps the accumulator and is no partner
    assert sorted(c.parts for c in ranked(a, candidates, p._kinds_of, "compute", spilling)) == sorted([
        (*tf32, "launch:matmul_kernel:0:num_warps=8"), (*tf32, "const:BLOCK_M=32"), (*tf32, "const:BLOCK_N=32")])
    assert {c.parts[1] for c in candidates if _to_tc(c) and len(c.parts) == 2} == {
        "launch:matmul_kernel:0:num_warps=8", "const:BLOCK_M=32", "const:BLOCK_N=32"}
    # an output of too few tiles: the moves that make more programs, then tf32x3 before the other moves
    few = {"output_elements": 256 * 256, "sm_count": 132}
    more = ranked(a, candidates, p._kinds_of, "compute", None, **few)
    assert more and tf32 not in [c.parts for c in more]
    fewer_first = [c for c in candidates if programs(a, c.after, 256 * 256) <= programs(a, a.assignment, 256 * 256)]
    assert [c.parts for c in ranked(a, fewer_first, p._kinds_of, "compute", None, **few)] == [tf32]
    # driven through the proposer: its first proposal on the fp32 GEMM is the move onto the tensor cores
    q = SearchProposer(seed=0)
    assert "tf32x3" in first_proposals(q, base, 1, sm_count=132, output_elements=4096 * 4096)[0]
