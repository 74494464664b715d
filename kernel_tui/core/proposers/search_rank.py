"""Which moves of a tl.dot kernel go first, by the incumbent's registers: grow the tile while there is room,
shrink it while there is none.

A tl.dot kernel keeps its output tile in fp32 registers: BLOCK_M·BLOCK_N / (32·num_warps) of them per thread
(transforms' accumulator bound, MIN_/MAX_ACCUMULATOR_PER_THREAD, reads the same number), beside the operand
fragments, addresses and loop state. A thread has at most MAX_REGISTERS (255); past that the compiler spills to
local memory. Where the incumbent has room (no spills, and doubling its accumulator at the same warps still
fits: registers + accumulator ≤ 255), the moves that give each loaded operand more multiply-adds are the ones
worth a round: a larger output tile (BLOCK_M or BLOCK_N up, alone or with warps up), a longer K step, one more
pipeline stage (where the shared memory the compiler reports leaves room for it), and the structural rewrites
that take work off the loop (the unmasked K loop, tensor-descriptor loads, the grouped launch order, a fused
epilogue). The moves
that shrink the output tile or the K step, or drop a stage, only trade that reuse away, so they wait. Where the
incumbent spills or sits at the 255-register cap, the order turns round: the moves that take registers off a
thread (a smaller output tile, more warps for the same tile, a shorter K step, one stage less) go first.

The evidence: a live 18-round search on an H200 (fixtures/matmul, fp16 4096³, from 64×64×32, 4 warps, 2
stages: 32 accumulator registers per thread, compute-bound) spent 10 rounds on moves that shrank a tile or its
K step or dropped a stage; all 10 lost, 8 of them by 20% to 99% (block_m 64→32 with warps 4→2: −57%; block_k
32→16 with block_m 64→128: −74%). The winners were the other kind: block_n 64→128 with warps 4→8 (+9.0%),
num_stages 2→3 (+11.6%), block_k 32→64 (+3.5%), block_m 64→128 with warps 8→16 (+20.2%), block_n 128→256
(+19.8%); measured the same day, the unmasked K loop (+3.1%) and TMA loads (+1.2%) won too and were never
proposed in the 18 rounds.

Two facts come before the registers. An output tiled into fewer programs than the GPU has SMs (`fills_sms`: the
output's elements at the timed shape over the tile, times the split-K count) leaves SMs idle whatever the tile
does, so there the moves that make more programs (split-K, more splits, a smaller output tile) go first and those
that make fewer last: live on an H200, KernelBench level 1 problem 6 (256×256 output, K = 524288, 16 tiles of
64×64 for 132 SMs) spent 11 rounds and 466 s on tile moves from the register order and never reached split-K.
And in a kernel whose tl.dot multiplies fp32 in full precision ("ieee", on the FMA units), "tf32x3" (three TF32
products on the tensor cores, fp32-class accuracy) goes ahead of every tile move (after those that fill the SMs,
and not while the incumbent spills: its split operands take registers): it changes which units do the work, not
the tile, and an H200's tensor cores do TF32 at several times the fp32 FMA rate. Ranked only with the growing
moves, it came late or never: 8 rounds of KernelBench's fp32 4096³ GEMM live went to tiles and never to it;
on problem 6, after split-K, 18 rounds went to tiles (4 accepted, 14 lost, up to 59%) before round 24's tf32x3
won +20.9%, the run's last accept. First is not always a win: on the fp32 4096³ GEMM (128×64×32, 8 warps) it was
proposed first live and lost 11.6%; one round is what it costs there.

An incumbent at its register cap gets tf32x3 only with a move that halves the accumulator a thread holds (twice
the warps, or the output tile's M or N halved: coupled moves of search_steps), ahead of the other moves that free
registers; elsewhere the single step goes first and the pairs after it. Which partner pays depends on the
operands: on an H100, Inductor's L1-1 start (A·B) gained 25% with tf32x3 and block_n 64 and lost 13% with tf32x3
and 8 warps, while its L1-17 start (A·Bᵀ) gained about 70% with either (bench/results/2026-12-07-h100-tf32x3-tiles).
Inductor's 128×128×32 GEMM template with 4 warps spills when compiled for sm_90 (Triton 3.6: 144 to 184 bytes
of stack), and with tf32x3 some 700; with 8 warps neither does (bench/results/2026-12-07-cpu-tf32x3-compile).
Held back behind the lightening moves, tf32x3 never came in five rounds of L1-17 (C = A·Bᵀ, its start at 0.51x
of eager), while hand-written tf32x3 GEMMs measured up to 1.87x torch.compile's fp32 cuBLAS call at the main
shapes of L1-17 (1.84x), L2-12 and L2-76, all of them x·Wᵀ, against 1.06x on L1-1 and L1-2 (H200, 2026-12-02).

Like the bottleneck's favoured kinds (search_steps), it is a preference while any is left, not a prior: the
first tier that has a candidate is the set the search chooses from; the next one comes when it is spent. The
incumbent's facts come from the compiler where a `resources` callback gives them (a GPU); elsewhere (a replay, the
CPU interpreter) from the assignment alone: room while the doubled accumulator stays within half of the register
file (2·accumulator ≤ MAX_ACCUMULATOR_PER_THREAD / 2 = 128 registers, the other half for operands and addresses),
no room once the accumulator alone takes more than that half. A latency-bound incumbent gets no tile growth first
(fewer, larger tiles leave SMs idle where the grid is already too small). The tiers order what the bottleneck's
favoured kinds and the one-step preference (search_steps) leave: one step first still, and growth among those.

Replayed over the H200 matmul sweep (bench.sweep.replay_recorded, 4 seeds from each of 13 starts across the table,
`--start 0 12 36 52 76 92 100 108 116 140 148 156 160`), the evaluations to within 3% of the sweep best fell from
19.3 to 12.7 on average: most from mid-table starts with room (64×64×64 over 8 warps: 30.0 → 10.5) and from the
spilling ones (128×256×64 over 4 warps, 256 accumulator registers per thread, 7.6 times slower than the best:
33.8 → 4.0). From the sweep's own start the table holds no smaller tile nor fewer stages, so there it only
reorders growth (20 seeds: median 7 evaluations before, 7.5 after; max 14 before, 13 after).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from kernel_tui.core.evaluator.kernel_facts import DeviceLimits, KernelFacts
from kernel_tui.core.proposers.search_steps import Candidate
from kernel_tui.core.proposers.transforms import MAX_ACCUMULATOR_PER_THREAD, Analysis
from kernel_tui.core.proposers.transforms.constraints import DotTile
from kernel_tui.core.proposers.transforms.knobs import TENSOR_CORE_PRECISION
from kernel_tui.core.proposers.transforms.split_k import DEFAULT_SPLITS, SPLIT

MAX_REGISTERS = 255  # per thread on NVIDIA GPUs; the compiler spills past it
ACCUMULATOR_SHARE = MAX_ACCUMULATOR_PER_THREAD // 2  # without compile facts: the accumulator's half of a thread
# the rewrites that take work off a tl.dot loop without shrinking anything: ranked with the growing moves;
# epilogue fusion (epilogue.py) takes a whole kernel's pass over the output away
GROWING_STRUCTURE = frozenset({"k_mask", "loads", "launch_order", "epilogue"})

Room = Literal["room", "full"]


def programs(analysis: Analysis, assign: dict, output_elements: int) -> float | None:
    """The programs a launch of the tl.dot kernels under `assign` starts: the output's elements over the largest
    output tile, times SPLIT_K where the kernel is split (or is made so by `assign`). None without a tile."""
    tiles = [t.output for t in analysis.dot_tiles(assign) if t.output]
    if not tiles:
        return None
    count = output_elements / max(tiles)
    for kid, knob in analysis.knobs.items():
        value = assign.get(kid, knob.value)
        if knob.kind == "splits" and isinstance(value, int) and value > 0:
            count *= value
        elif knob.kind == "split_k" and value == SPLIT and knob.value != SPLIT:
            count *= DEFAULT_SPLITS
    return count


def fills_sms(analysis: Analysis, output_elements: int | None, sm_count: int | None) -> bool | None:
    """Whether the incumbent's tiling gives every SM at least one program; None where either fact is unknown."""
    if not output_elements or not sm_count:
        return None
    count = programs(analysis, analysis.assignment, output_elements)
    return None if count is None else count >= sm_count


def _to_tensor_cores(analysis: Analysis, parts: tuple[str, ...]) -> bool:
    """A step that sets an fp32 tl.dot's input_precision to tf32x3."""
    for part in parts:
        kid, _, value = part.partition("=")
        knob = analysis.knobs.get(kid)
        if knob is not None and knob.kind == "input_precision" and value == TENSOR_CORE_PRECISION:
            return True
    return False


def register_room(tiles: Sequence[DotTile], facts: Sequence[KernelFacts] | None) -> Room | None:
    """"room" where the incumbent's accumulator could double and still fit in its registers, "full" where
    it spills or sits at the cap (or, without facts, its accumulator takes over half of them), else None."""
    accumulators = [t.accumulator_per_thread for t in tiles]
    known = [a for a in accumulators if a is not None]
    if not known or len(known) != len(accumulators):
        return None
    accumulator = max(known)
    names = {t.kernel for t in tiles}
    mine = [f for f in facts or () if f.name in names] or list(facts or ())
    registers = [f.registers for f in mine if f.registers is not None]
    if any(f.spills for f in mine) or any(r >= MAX_REGISTERS for r in registers):
        return "full"
    if registers:
        return "room" if max(registers) + accumulator <= MAX_REGISTERS else None
    if accumulator > ACCUMULATOR_SHARE:
        return "full"
    return "room" if 2 * accumulator <= ACCUMULATOR_SHARE else None


def _stage_fits(tile: DotTile, facts: Sequence[KernelFacts] | None, limits: DeviceLimits) -> bool:
    """Whether one stage more keeps the block's shared memory (as compiled, scaled per stage) within an SM's."""
    shared = [f.shared_bytes for f in facts or () if f.name == tile.kernel and f.shared_bytes]
    stages = tile.num_stages
    if not shared or not stages:
        return True
    return max(shared) * (stages + 1) / stages + limits.reserved_shared_per_block <= limits.shared_bytes


class Direction(NamedTuple):
    """What a move does to the tl.dot tiles: the output tile, K step or stages up with none down (a stage more
    only where it fits); any of them down; any of them up; the accumulator registers per thread down, or up."""

    grows: bool
    shrinks: bool
    raises: bool
    lighter: bool
    heavier: bool

    @property
    def lightens(self) -> bool:
        """Registers off a thread and none on: a smaller tile, K step or stage count, or more warps for the tile."""
        return (self.lighter or self.shrinks) and not self.heavier and not self.raises


def direction(before: Sequence[DotTile], after: Sequence[DotTile], facts: Sequence[KernelFacts] | None = None,
              limits: DeviceLimits | None = None) -> Direction:
    """The Direction of a move from the tiles `before` to those `after`."""
    ups = downs = lighter = heavier = False
    for b, a in zip(before, after, strict=False):
        for old, new in ((b.output, a.output), (b.k_step, a.k_step), (b.num_stages, a.num_stages)):
            if old is not None and new is not None:
                ups, downs = ups or new > old, downs or new < old
        if b.num_stages and a.num_stages and a.num_stages > b.num_stages and not _stage_fits(b, facts, limits or DeviceLimits()):
            downs = True  # a stage the shared memory has no room for goes last, with the shrinking moves
        pb, pa = b.accumulator_per_thread, a.accumulator_per_thread
        if pb is not None and pa is not None:
            lighter, heavier = lighter or pa < pb, heavier or pa > pb
    return Direction(ups and not downs, downs, ups, lighter, heavier)


def ranked(analysis: Analysis, candidates: list[Candidate], kinds_of: Callable[[tuple[str, ...]], set[str]],
           bottleneck: str | None, facts: Sequence[KernelFacts] | None, output_elements: int | None = None,
           sm_count: int | None = None) -> list[Candidate]:
    """The first non-empty tier of the candidates (the module docstring): where the output's programs do not
    fill the SMs, the moves that make more of them, then tf32x3, then the rest, then those that make fewer; else
    tf32x3 (alone, then with a lighter thread) unless the incumbent spills, where only tf32x3 with a lighter
    thread (twice the warps, half the output tile) comes first; then by its register room: with room, the growing
    and structural moves, then the rest, then the shrinking ones; full, the moves that take registers off a
    thread, then the rest, then those that put registers on. All of them where none of this applies."""
    if fills_sms(analysis, output_elements, sm_count) is False:
        assert output_elements is not None
        here = programs(analysis, analysis.assignment, output_elements) or 0.0
        short: list[list[Candidate]] = [[], [], [], []]
        for c in candidates:
            after = programs(analysis, c.after, output_elements) or here
            same = 1 if _to_tensor_cores(analysis, c.parts) and len(c.parts) == 1 else 2
            short[0 if after > here else 3 if after < here else same].append(c)
        return next(t for t in short if t) if candidates else candidates
    before = analysis.dot_tiles(analysis.assignment)
    room = register_room(before, facts)
    tensor_cores = [c for c in candidates if _to_tensor_cores(analysis, c.parts)]
    if tensor_cores and room != "full":  # alone first; with a lighter thread (search_steps) once that is tried
        return [c for c in tensor_cores if len(c.parts) == 1] or tensor_cores
    if room == "full":  # then only with a move that takes registers off a thread (twice the warps, half the tile)
        lightened = [c for c in tensor_cores if direction(before, analysis.dot_tiles(c.after), facts).lightens]
        if lightened:
            return lightened
    if room is None or (room == "room" and bottleneck == "latency"):
        return candidates
    tiers: list[list[Candidate]] = [[], [], []]
    for c in candidates:
        d = direction(before, analysis.dot_tiles(c.after), facts)
        if room == "full":
            tiers[0 if d.lightens else 2 if d.grows or d.heavier else 1].append(c)
        elif d.shrinks:
            tiers[2].append(c)
        else:
            growing = d.grows or kinds_of(c.parts) & GROWING_STRUCTURE
            tiers[0 if growing else 1].append(c)
    return next((t for t in tiers if t), candidates)
