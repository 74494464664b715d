"""The steps the built-in search may propose from its best source (the design is in `search`'s docstring).

Single steps first; in a kernel with tl.dot also coupled moves (a tile with its warps or stages, or two
tiles trading size); when those are spent, two steps through a tried candidate. Left out: any (state,
step) or source already tried, every change the person refused, a step the gate turned down under the
same bottleneck, a single step as far or further the same way as one that lost more than 20% from the
same state, and on Triton's CPU interpreter the knobs it ignores. Of what is left, the steps of the
kinds the bottleneck favours and, in a tl.dot kernel, the one-step moves go first.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from kernel_tui.core.proposers.base import Proposer
from kernel_tui.core.proposers.search_model import TILE_KINDS, ValueModel
from kernel_tui.core.proposers.search_refusals import Refusals, moves_of
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, Action, Analysis, Knob, source_hash
from kernel_tui.core.proposers.transforms.knobs import TENSOR_CORE_PRECISION

TWO_STEP_FLOOR = -0.1  # a tried step this much slower (log) or worse is no way through
# A step that lost more than 20% went too far: from the same state, no single move of that knob as far or further
# the same way is offered again (of a live H200 matmul's 25 rounds, 7 of the 13 far jumps lost 1.9 to 4.2 times).
TOO_FAR = -math.log(1.2)

# What the incumbent's bottleneck (ProposerContext.bottleneck) makes worth trying first. Memory-bound: more
# bytes in flight and kinder caching; compute-bound: tiles, pipelining and warps; latency-bound: more work
# in flight per SM; for the last two also the persistent grid (no launch and scheduling cost per tile, one
# tile's loads overlapping the previous tile's epilogue); compute-bound also the tensor-descriptor loads (TMA
# moves the tl.dot tiles, freeing the registers and issue slots their addresses took). Steps of only these kinds are the candidates while
# any is left (a prior alone lost to the optimism every untried step gets: 6 of 25 rounds of the live H200
# matmul went to load hints); after that, BOTTLENECK_PRIOR, small beside what one measurement teaches
# (search_model.NOISE_SD), favours the steps with more favoured parts (a two-step proposal with one).
BOTTLENECK_PRIOR = 0.03
FAVOURED_KINDS = {
    "memory": {"block", "eviction_policy", "cache_modifier", "num_warps", "k_mask"},
    "compute": {"block", "num_stages", "num_warps", "group", "launch_order", "input_precision", "k_mask", "grid",
                "loads"},
    "latency": {"num_warps", "num_stages", "block", "unroll", "grid"},
}
# Split-K (split_k.py) for both: more programs per output tile where the tiles are too few to fill the SMs; a
# kernel bound by latency with a small grid is its case (small M·N, long K), as its change text says.
FAVOURED_KINDS["compute"] |= {"split_k"}
FAVOURED_KINDS["latency"] |= {"split_k", "splits"}
# Epilogue fusion (epilogue.py) under every bottleneck: it takes the intermediate's write and read off memory and
# one launch off the latency, and leaves the GEMM's main loop as it was.
FAVOURED_KINDS["memory"] |= {"epilogue"}
FAVOURED_KINDS["compute"] |= {"epilogue"}
FAVOURED_KINDS["latency"] |= {"epilogue"}
# Warp specialization (warp_specialize.py) where the multiply-adds bound the kernel: loads issued by warps of their
# own keep the tensor cores' warps on the dot.
FAVOURED_KINDS["compute"] |= {"warp_specialize"}
# Sizes as compile-time constants (sizes.py) where memory or latency bounds the kernel: index math that divides by
# a runtime size costs an integer division per element, a constant divisor a multiply and a shift.
FAVOURED_KINDS["memory"] |= {"sizes"}
FAVOURED_KINDS["latency"] |= {"sizes"}


# Knob kinds Triton's CPU interpreter ignores (triton/runtime/interpreter.py, Triton 3.x): a launch's num_warps
# and num_stages are dropped, get_cache_policy returns None for every load hint, tl.range drops its keyword
# arguments (loop_unroll_factor), and tl.dot is np.matmul whatever its input_precision. A step of only these
# measures noise there: of a new user's 16 rounds on the interpreter, 6 went to warps and load hints. The
# persistent grid is one with them: the interpreter runs a launch's programs one after another, so one program
# per SM looping over the tiles does the same work there as one program per tile. So are the tensor-descriptor
# loads: the interpreter gathers a descriptor's tile with numpy as it does a pointer load's, no TMA unit.
INTERPRETER_IGNORES = frozenset({"num_warps", "num_stages", "eviction_policy", "cache_modifier", "unroll",
                                 "input_precision", "grid", "loads"})
# Split-K too, and its count: it gains by running a tile's share of K on more SMs at once, and the interpreter runs
# the programs one after another, so the same multiply-adds cost the same there, plus each split's store and the
# reduction pass: always a little slower, whatever it would do on a GPU.
INTERPRETER_IGNORES |= {"split_k", "splits"}
# And warp specialization: a keyword of tl.range, which the interpreter drops with the others.
INTERPRETER_IGNORES |= {"warp_specialize"}
# And sizes as constants: the interpreter evaluates the index math with numpy, divisor constant or not.
INTERPRETER_IGNORES |= {"sizes"}


def _couples(action: Action, ratio: float, kernels: frozenset[str], knobs: dict[str, Knob]) -> bool:
    """Whether `action` is a partner a tile change by `ratio` calls for (see SearchSteps._coupled): of the
    tile's own kernel (`kernels`: those the tile is of). Across kernels the pair means nothing: on KernelBench's
    L2-12, Inductor's GEMM with its elementwise epilogue kernel, the epilogue's block 512 → 8192 went with the
    GEMM's warps 4 → 8 three times, each a new pair, each the warps' own -13.8%."""
    knob = knobs.get(action.knob)
    if knob is None or not knob.kernels & kernels:
        return False
    if not isinstance(action.old, int) or not isinstance(action.new, int) or action.old <= 0:
        return False
    if action.kind == "num_warps":  # warps moved the tile's way, by up to `ratio` (powers of two: exact)
        lo, hi = sorted((action.old, action.old * ratio))
        return lo <= action.new <= hi
    if action.kind == "block":  # another tile by the inverse ratio: the tile's shape changes, its size stays
        return action.new * ratio == action.old
    return action.kind == "num_stages" and ratio > 1 and action.new == action.old - 1


def _lightens_a_thread(action: Action, kernels: frozenset[str], knobs: dict[str, Knob]) -> bool:
    """Twice the warps, or half of one of the tile's blocks, of a kernel in `kernels`: the partners of tf32x3 for
    an incumbent at its register cap, kept where they halve the accumulator a thread holds (SearchSteps._coupled).
    Which one pays depends on the operands: on an H100, Inductor's 128×128×32 start of L1-1 (A·B, B N-major) lost
    13% with tf32x3 and 8 warps and gained 25% with tf32x3 and block_n 64, while on L1-17 (A·Bᵀ) both gained about
    70% (bench/results/2026-12-07-h100-tf32x3-tiles)."""
    knob = knobs.get(action.knob)
    if knob is None or not knob.kernels & kernels or not isinstance(action.old, int):
        return False
    if action.kind == "num_warps":
        return action.new == 2 * action.old
    return action.kind == "block" and knob.dot and isinstance(action.new, int) and 2 * action.new == action.old


def _accumulator(analysis: Analysis, assign: dict, kernels: frozenset[str]) -> float | None:
    """The fp32 accumulator a thread of `kernels`' tl.dot launches holds under `assign` (None: unknown)."""
    held = [t.accumulator_per_thread for t in analysis.dot_tiles(assign) if t.kernel in kernels]
    known = [h for h in held if h is not None]
    return max(known) if known and len(known) == len(held) else None


@dataclass(frozen=True)
class Candidate:
    key: str  # the action key ("knob=value", or "first+second" for two steps)
    parts: tuple[str, ...]  # the atomic action keys
    moves: frozenset[str]  # each part as a knob's move from its value here (search_refusals.move)
    change: str
    source: str
    after: dict  # the knob assignment of the source


class SearchSteps(Proposer):
    """The candidates from a state, on the search's memory; SearchProposer builds and saves that memory."""

    model: ValueModel
    bottleneck: str | None  # the incumbent's, when last told
    interpreter: bool  # the current proposal's device is Triton's CPU interpreter
    transitions: list[dict]
    tried_pairs: set[str]
    tried_sources: set[str]
    turned_down: dict[str, list[str]]
    refused: Refusals
    _analyze_source: Callable[[str], Analysis]
    _analyses: dict[str, Analysis]
    _said_ignored: set[str]

    def _analyze(self, source: str) -> Analysis:
        h = source_hash(source)
        got = self._analyses.get(h)
        if got is None:
            if len(self._analyses) > 512:
                self._analyses.clear()
            got = self._analyses[h] = self._analyze_source(source)
        return got

    def _candidates(self, analysis: Analysis, skey: str) -> list[Candidate]:
        """Untried single steps from the best; when none is left, two steps through a tried candidate
        that was not clearly slower; when none of those is left either (a local optimum of single
        steps), two steps through any step: an interaction can hide behind a slower first step
        (measured on an H200 matmul table, 5 of 20 replayed searches stopped short without this)."""
        seen: set[str] = set()
        out = self._steps(analysis, skey, None, seen=seen) + self._coupled(analysis, skey, seen)
        if out:
            return out
        outcomes = {(t["s"], t["a"]): t.get("step", t["r"]) for t in self.transitions}
        for floor in (TWO_STEP_FLOOR, -math.inf):
            seen = set()
            for first in self._actions(analysis):
                r = outcomes.get((skey, first.key))
                if r is None or r < floor:  # untried here, failed, or (first pass) clearly slower
                    continue
                out += self._through(analysis, skey, first, seen)
            if out:
                return out
        return out

    def _actions(self, analysis: Analysis) -> list[Action]:
        """The source's steps, less those of knobs the interpreter ignores when the run is on it."""
        if not self.interpreter:
            return analysis.actions()
        return [a for a in analysis.actions() if a.kind not in INTERPRETER_IGNORES]

    def _say_ignored(self, analysis: Analysis) -> None:
        """Once per kind: which of the source's knobs the search leaves alone on the interpreter, and why."""
        if not self.interpreter:
            return
        kinds = ({k.kind for k in analysis.knobs.values()} & INTERPRETER_IGNORES) - self._said_ignored
        if kinds:
            self._said_ignored |= kinds
            self.on_activity(f"on Triton's CPU interpreter: no moves of {', '.join(sorted(kinds))} (GPU-only knobs the "
                             "interpreter ignores); block sizes, tiling factors and the launch order change its work")

    def _kinds_of(self, parts: tuple[str, ...] | list[str]) -> set[str]:
        return {self.model.kinds.get(p.split("=", 1)[0], "") for p in parts}

    def _local_first(self, analysis: Analysis, candidates: list[Candidate]) -> list[Candidate]:
        """In a kernel with tl.dot, the candidates whose every part moves a tile, warp or stage knob by one
        step (a tile or warps ×2 or ÷2, stages ±1) while any is left, else all of them. Far jumps there
        mostly lose, and by much: of a live H200 matmul's 25 rounds (2026-12-01), 13 moved a knob further;
        2 won (by 5% and 4%), 7 were 1.9 to 4.2 times slower. One step first, the matmul replay over the
        H200 sweep needs at most 13 evaluations (23 before). Elementwise kernels keep every jump
        (vector_add's best block is 32 times its start), also beside a tl.dot kernel in one source."""
        if not any(k.has_dot for k in analysis.kernels.values()):
            return candidates
        current = analysis.assignment
        local = [c for c in candidates if all(self._one_step(current, p) for p in c.parts)]
        return local or candidates

    def _one_step(self, current: dict, part: str) -> bool:
        knob, _, raw = part.partition("=")
        kind, old = self.model.kinds.get(knob, ""), current.get(knob)
        if knob not in self.model.dot_knobs or kind not in TILE_KINDS or not isinstance(old, int) or not raw.lstrip("-").isdigit() or old <= 0:
            return True
        new = int(raw)
        return abs(new - old) == 1 if kind == "num_stages" else new in (2 * old, old // 2)

    def _favoured_first(self, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates of only the kinds the bottleneck favours while there is one, else all of them."""
        favoured = FAVOURED_KINDS.get(self.bottleneck or "")
        if not favoured:
            return candidates
        first = [c for c in candidates if self._kinds_of(c.parts) <= favoured]
        return first or candidates

    def _note_turned_down(self, pending: dict) -> None:
        """A single step of a kind its bottleneck does not favour, measured and turned down by the gate, is
        that bottleneck's answer for the step: not offered again from a later incumbent while the bottleneck
        stays (such a kind is off the critical path; a favoured kind's effect depends on the rest, so it is
        tried anew: on the vector_add, memory-bound, evict_first measured nothing with 256-element blocks and
        paid with larger ones)."""
        bottleneck, parts = pending.get("bottleneck"), pending.get("parts") or [pending["a"]]
        favoured = FAVOURED_KINDS.get(bottleneck or "")
        if not favoured or len(parts) != 1 or self._kinds_of(parts) <= favoured:
            return
        keys = self.turned_down.setdefault(str(bottleneck), [])
        if parts[0] not in keys:
            keys.append(parts[0])

    def _too_far(self, skey: str) -> list[tuple[str, float, float]]:
        """(knob, from, to) of every numeric single step from this state that lost more than 20% (TOO_FAR).
        Only from this state: with other knobs elsewhere the same move is another question (a larger block
        that lost with 4 warps may win with 16)."""
        out = []
        for t in self.transitions:
            parts = t["a"].split("+")
            if t["s"] != skey or len(parts) != 1 or t.get("step", 0.0) >= TOO_FAR:
                continue
            knob, _, raw = parts[0].partition("=")
            old = json.loads(t["s"]).get(knob)
            try:
                new = float(raw)
            except ValueError:
                continue
            if isinstance(old, (int, float)) and not isinstance(old, bool) and old > 0 and new > 0:
                out.append((knob, float(old), new))
        return out

    def _mark_tried(self, skey: str, c: Candidate) -> None:
        """Never this step from this state, nor this program, again."""
        self.tried_pairs.add(f"{skey}|{c.key}")
        self.tried_sources.add(source_hash(c.source))

    def _coupled(self, analysis: Analysis, skey: str, seen: set[str]) -> list[Candidate]:
        """Coupled moves of a kernel with tl.dot, offered beside the single steps: a tile that grows by a factor r together with
        num_warps scaled by up to r (by r the work per warp stays; a larger tile often wants more work per warp:
        the H200 matmul sweep's best needs block_n 256 with 8 warps, and live, block_n 64 → 256 came only with
        16), or with one pipeline stage less (the shared memory a stage takes grows with the tile); a tile that
        shrinks with fewer warps; a tile that grows while another shrinks by as much (its shape changes, its
        size and so its registers stay: from 256x128 the best 128x256 is two single steps that each lose, and
        in the matmul replay 6 of 20 seeds took about 70 evaluations without this move, none over 23 with it).
        And tf32x3 with twice its kernel's warps, or with one of its tile's blocks halved: the tensor cores for an
        incumbent at its register cap, where the split operands of tf32x3 alone would spill (search_rank)."""
        out: list[Candidate] = []
        if not any(k.has_dot for k in analysis.kernels.values()):
            return out  # elementwise blocks couple weakly with warps: more moves would only dilute the search
        for tile in self._actions(analysis):
            if tile.kind != "block" or not isinstance(tile.old, int) or not isinstance(tile.new, int) or tile.old <= 0:
                continue
            knob = analysis.knobs.get(tile.knob)
            if knob is None or not knob.dot:
                continue  # an elementwise kernel's block beside the GEMM: its warps are another kernel's
            out += self._through(analysis, skey, tile, seen,
                                 functools.partial(_couples, ratio=tile.new / tile.old, kernels=knob.kernels))
        for precision in self._actions(analysis):  # the tensor cores, a thread lightened (search_rank)
            knob = analysis.knobs.get(precision.knob)
            if precision.kind != "input_precision" or precision.new != TENSOR_CORE_PRECISION or knob is None:
                continue
            held = _accumulator(analysis, analysis.assignment, knob.kernels)
            out += [c for c in self._through(analysis, skey, precision, seen,
                                             functools.partial(_lightens_a_thread, kernels=knob.kernels))
                    if held is None or (_accumulator(analysis, c.after, knob.kernels) or held) < held]
        return out

    def _through(self, analysis: Analysis, skey: str, first: Action, seen: set[str],
                 partner: Callable[..., bool] | None = None) -> list[Candidate]:
        """Two-step candidates: `first`, then a step from the source it makes (one `partner(action,
        knobs=that source's knobs)` admits, where given); none where `first` cannot be applied."""
        try:
            middle = self._analyze(analysis.apply(first))
        except ValueError:
            return []
        self.model.register(middle)
        only = None if partner is None else functools.partial(partner, knobs=middle.knobs)
        return self._steps(middle, skey, first, seen, only=only)

    def _steps(self, analysis: Analysis, skey: str, first: Action | None, seen: set[str],
               only: Callable[[Action], bool] | None = None) -> list[Candidate]:
        turned_down = set(self.turned_down.get(self.bottleneck or "", ()))
        out = []
        too_far = self._too_far(skey) if first is None else []
        for action in self._actions(analysis):
            if first is not None and action.knob == first.knob:
                continue
            if only is not None and not only(action):
                continue
            if beyond(action, too_far):
                continue
            key = action.key if first is None else f"{first.key}+{action.key}"
            if f"{skey}|{key}" in self.tried_pairs:
                continue
            parts = (action.key,) if first is None else (first.key, action.key)
            moves = moves_of(first, action)
            change = action.change if first is None else f"{first.change}, then {action.change}"
            refusal = self.refused.blocking(moves)  # makes every move of a change the person rejected
            if refusal is not None:
                if self.refused.first_time(refusal):
                    self.on_activity(refusal.skip_text(change))
                continue
            if turned_down.intersection(parts):  # the bottleneck's answer stands until it changes
                continue
            try:
                source = analysis.apply(action)
            except ValueError:
                continue
            h = source_hash(source)
            if h in self.tried_sources or h in seen:
                continue
            seen.add(h)
            after = analysis.assignment_after(action)
            if action.kind in STRUCTURAL_KINDS:  # the rewritten source's knobs, as the model will meet them
                self.model.register(self._analyze(source))
            out.append(Candidate(key=key, parts=parts, moves=moves, change=change, source=source, after=after))
        return out


def beyond(action: Action, too_far: list[tuple[str, float, float]]) -> bool:
    """A move from a value some step from it lost more than 20% by, as far or further the same way."""
    if not isinstance(action.old, (int, float)) or not isinstance(action.new, (int, float)) or action.old <= 0 \
            or action.new <= 0:
        return False
    mine = math.log(action.new / action.old)
    for knob, old, new in too_far:
        if knob == action.knob and old == action.old:
            lost = math.log(new / old)
            if mine * lost > 0 and abs(mine) >= abs(lost):
                return True
    return False

