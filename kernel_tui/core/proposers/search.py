"""The built-in search: Max-Q learning over atomic source transformations (after PerfDojo).

A state is the knob assignment of the current best source (see `transforms`); an action changes one
knob. Proposals are made on top of the best, so after a rejection the state stays.

Values. PerfDojo's Max-Q learning values an action by the best reward reachable through it,

    Q_max(s, a) = E[ max( r(s, a), γ · max_a' Q_max(s', a') ) ],

the best program found along a trajectory rather than a sum of rewards. Each step's measurement is
r_step = log(T_old / T_new) against the incumbent (from the gate's paired estimate, −log(1 − improvement),
or else from the medians, incumbent_latency / latency); a candidate that fails (incorrect, compile
error, policy violation, crash, timeout) gets r_step = −1, a person's rejection −0.5. For the max to
compare rewards of one trajectory on one scale, a reward is r(s, a) = L(s) + r_step, where
L(s) = log(T_baseline / T(s)) is the state's own log speedup over the run's baseline (0 for the
baseline, and summed along accepted steps): r(s, a) is then exactly log(T_baseline / T(s')).

Learning. Every tried (s, a, s', r) stays in a replay memory and the Q table is the fixed point of
the Max-Q backup over it. A pair is never proposed twice, so choosing needs estimates of *untried*
pairs: Q̂(s, a) = max(m, γ · V̂(s')), with m = L(s) + Δ̂ the predicted reward of s' and V̂(s') the learned
value of s' when it was visited, else m plus the best predicted next step from s'. Δ̂ comes from a
small Bayesian linear model of log speedup over the knob values, fitted to every evaluated candidate
(`search_model`); knob values that failed before are penalised.
Untried pairs start optimistic (plus κ × the model's standard deviation, κ shrinking over the run),
and exploration moves over the run (step / budget_hint) from ε-greedy to Boltzmann to greedy.

The incumbent's bottleneck decides which knob families go first: while a step of only the kinds it
favours is left, the others wait; and a single step of a kind it does not favour that the gate turned
down is not offered again from a later incumbent while the bottleneck stays (load hints on the
compute-bound H200 matmul measured nothing, and were tried again on each new incumbent). In a tl.dot kernel the
incumbent's registers then order what is left (`search_rank`): with room for a larger accumulator, the moves
that grow the tile, its K step or its stages, and the structural rewrites, before those that shrink them; when it
spills, the other way round. The compiler's facts decide where `resources` gives them, else the assignment.

When every single step from the best has been tried, the search goes on through the tried candidates
that passed and were not clearly slower: one proposal of two steps, the second taken from the first's
state (the γ · max_a' Q(s', a') part of the value, made real), so that two knobs that only pay together
(a larger block that needs more warps) are no dead end. Only when those are spent too does `propose`
return None.

Small true gains add up (`search_chains`): a single step the gate turned down although its interval was
above 0 (faster, but by less than the task's minimum) is kept as a small gain of its state; two of one state,
on different knobs, are proposed together as one candidate said to be a chain, before any other step.

Never the same (state, action) twice, never a source already tried (hashes of every proposed,
edited, baseline and best source), and never again in the run a change the person rejected: the same
knob moves between the same values, from any incumbent, alone or as a step of a two-step proposal
(`search_refusals`; it is also read back from the trajectory's rejections and their commits).
`state()` / `restore()` carry all of it, the replay memory, the step counter and the random
generator, so a resumed run continues exactly where it stopped.

On Triton's CPU interpreter (the run's device "cpu") a step of a knob the interpreter ignores
(INTERPRETER_IGNORES: warps, stages, load hints, unrolling, tl.dot precision; the persistent grid, whose
programs the interpreter runs one after another as it does one per tile; tensor-descriptor loads, no TMA unit
there; split-K and its count, for the persistent grid's reason; warp specialization, a tl.range keyword it
drops) is no step: it changes nothing the interpreter's time depends on (split-K only adds a little), so it is
never proposed there, alone or beside another; the search says once which kinds it leaves out. Block sizes, tiling factors and the launch order change the work.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.proposers.base import Feedback, Proposal, ProposerContext
from kernel_tui.core.proposers.occupancy import at_occupancy
from kernel_tui.core.proposers.same_program import same_program
from kernel_tui.core.proposers.search_chains import (
    SmallGain,
    action_for,
    chain_pairs,
    chain_text,
    gains_from_state,
    gains_state,
    is_small_gain,
)
from kernel_tui.core.proposers.search_model import ValueModel
from kernel_tui.core.proposers.search_rank import ranked
from kernel_tui.core.proposers.search_refusals import Refusals, legacy_moves, moves_of
from kernel_tui.core.proposers.search_steps import (
    BOTTLENECK_PRIOR,
    FAVOURED_KINDS,
    INTERPRETER_IGNORES,
    Candidate,
    SearchSteps,
)
from kernel_tui.core.proposers.search_values import choose, max_q_backup
from kernel_tui.core.proposers.transforms import Analysis, analyze, source_hash
from kernel_tui.core.records import ProposerInfo

FAILED_REWARD = -1.0  # log(T_old / T_new) of a candidate that did not pass: as if e times slower
REJECTED_BY_PERSON_REWARD = -0.5
# 2: knob kinds and the steps turned down per bottleneck (older states load with none); 3: the person's
# rejections as knob moves of any state ("refused"; a version-2 "rejected" is read into it)
STATE_VERSION = 3

MAX_RESOURCE_CHECKS = 4  # compiles per proposal at most (each ~1-2 s on a GPU); then the pick stands


class CompileRefused(Exception):
    """Raised by a `resources` callback for a source the compiler rejects: its one-line reason."""


def resource_problem(facts: list[KernelFacts]) -> str | None:
    """Why compiled kernels cannot be fast, before any timing: registers spilled to local memory, or a block
    no SM can hold. (A low occupancy alone is no such reason: a good matmul often runs one block per SM.)"""
    for f in facts:
        if f.blocks_per_sm == 0:
            return f"{f.name}: no block fits on an SM (limited by {f.limited_by})"
        if f.spills:
            return f"{f.name} spills {f.spills} registers per thread to local memory"
    return None


def state_key(assignment: dict) -> str:
    return json.dumps(assignment, sort_keys=True, separators=(",", ":"))


def _step_reward(fb: Feedback) -> float | None:
    """log(T_old / T_new) of a verdict; None when nothing was measured (neither failed nor timed)."""
    if fb.rejected_by_person:
        return REJECTED_BY_PERSON_REWARD
    if fb.status != "ok":
        return None if fb.status == "cancelled" else FAILED_REWARD
    if fb.improvement is not None and fb.improvement < 1.0:
        return -math.log1p(-fb.improvement)
    if fb.latency and fb.incumbent_latency and fb.latency > 0 and fb.incumbent_latency > 0:
        return math.log(fb.incumbent_latency / fb.latency)
    return 0.0


WAITS_FOR_TRITON = (
    "the built-in search transforms Triton kernels and starts from a Triton version: the incumbent is still "
    "the task's PyTorch starting point (write one with w, propose one with the agent, or start from a correct "
    "one in the history with b)"
)


class SearchProposer(SearchSteps):
    batches = True  # every proposal remembers its own step until its round's feedback

    def __init__(self, seed: int = 0, gamma: float = 0.9, budget_hint: int = 25, *,
                 analyze: Callable[[str], Analysis] = analyze,
                 resources: Callable[[str], list[KernelFacts]] | None = None,
                 device: str | None = None,
                 sources: Callable[[str], str | None] | None = None) -> None:
        """`analyze` reads a source's knobs; a caller may narrow what the search sees (a replay over a
        measured table passes one that cuts each knob's domain to the measured values). `resources` compiles
        a source and returns what the compiler made of its kernels (on a GPU), or raises CompileRefused: a
        candidate the compiler rejects, or whose kernels spill registers or cannot be resident on an SM, is
        skipped before any round is spent timing it.
        `device`: where candidates run ("cpu": Triton's interpreter; ProposerContext.device, where given,
        wins). `sources`: a commit's source (None where unknown), to read the person's rejections back from
        the trajectory (`search_refusals`)."""
        self.resources = resources
        self.device = device
        self.sources = sources
        if not 0.0 <= gamma <= 1.0:
            raise ValueError("gamma must be within [0, 1]")
        self._analyze_source = analyze
        self.info = ProposerInfo(kind="search", name="built-in search")
        self.seed, self.gamma, self.budget_hint = int(seed), float(gamma), max(1, int(budget_hint))
        self.rng = random.Random(self.seed)
        self.step = 0
        self.q: dict[str, dict[str, float]] = {}
        self.transitions: list[dict] = []  # {"s", "a", "s2", "r"}: r = L(s) + r_step
        self.tried_pairs: set[str] = set()
        self.tried_sources: set[str] = set()
        self.bottleneck: str | None = None  # the incumbent's, when last told (ProposerContext.bottleneck)
        self.output_elements: int | None = None  # ProposerContext's, when last told: whether the tiles fill the SMs
        self.sm_count: int | None = None
        # bottleneck -> steps (action keys) of kinds it does not favour that the gate turned down under it
        self.turned_down: dict[str, list[str]] = {}
        self.levels: dict[str, float] = {}  # state key -> L(s) = log(T_baseline / T(s))
        self.outcomes: dict[str, list[int]] = {}  # action key -> [passed, failed]
        self.refused = Refusals()  # the person's rejections, as knob moves never proposed again
        self.small_gains: list[SmallGain] = []  # steps surely faster but under the gate's minimum (search_chains)
        self.interpreter = False  # the current proposal's device is Triton's CPU interpreter
        self._said_ignored: set[str] = set()
        # round (as text: JSON keys) -> the step proposed in it, until its feedback; several in a batch
        self.pending: dict[str, dict] = {}
        self.model = ValueModel()  # Δ̂: knob kinds and values, and the measured programs
        self._analyses: dict[str, Analysis] = {}
        self._facts: dict[str, list[KernelFacts]] = {}  # source hash -> the compiler's facts (an incumbent's)

    # --- the Proposer interface -----------------------------------------------------------------------
    def propose(self, context: ProposerContext) -> Proposal | None:
        if context.incumbent_is_pytorch:
            self.on_activity(WAITS_FOR_TRITON)
            return None
        if not self.levels:  # the baseline (or the first Triton version after a PyTorch one): L = 0
            anchor = context.best_source if context.baseline_language == "pytorch" else context.baseline_source
            base = self._analyze(anchor)
            self.model.register(base)
            key = state_key(base.assignment)
            self.levels[key] = 0.0
            self.model.add(base.assignment, 0.0)
        self.tried_sources.add(source_hash(context.baseline_source))
        self.tried_sources.add(source_hash(context.best_source))
        self.interpreter = (context.device or self.device) == "cpu"
        if self.sources is not None:
            for rejected in self.refused.learn(context.history, self.sources, self._analyze):
                self.tried_sources.add(source_hash(rejected))
        if context.bottleneck != self.bottleneck and context.bottleneck is not None:
            kinds = ", ".join(sorted(FAVOURED_KINDS[context.bottleneck]))
            self.on_activity(f"the incumbent is {context.bottleneck}-bound: trying {kinds} knobs first")
        self.bottleneck = context.bottleneck
        self.output_elements, self.sm_count = context.output_elements, context.sm_count
        analysis = self._analyze(context.best_source)
        self.model.register(analysis)
        self._say_ignored(analysis)
        s = analysis.assignment
        skey = state_key(s)
        level = self.levels.get(skey)
        if level is None:  # a best the search did not make (a person's edit, a restore)
            level = self.model.predict(s)[0]

        checks = 0
        while True:
            # built again after each skip: the skipped pick is tried now, and when it was the last one-step
            # (or favoured) move, the wider set is what is left, not nothing
            chain = self._chain(analysis, skey)  # small true gains add up: before anything else
            candidates = [chain] if chain is not None else self._ranked(analysis, self._local_first(
                analysis, self._favoured_first(self._candidates(analysis, skey))))
            if not candidates:
                self.pending.pop(str(context.round), None)
                return None
            scores = [self._score(analysis, s, level, c) for c in candidates]
            chosen = candidates[choose(scores, min(1.0, self.step / self.budget_hint), self.rng)]
            if self.resources is None or checks >= MAX_RESOURCE_CHECKS:
                break
            try:
                facts = self.resources(chosen.source)
                problem = resource_problem(facts) or self._no_change(analysis, chosen, facts)
            except CompileRefused as exc:  # it would fail its round: on L1-95 ptxas rejected a load's two hints
                facts, problem = [], f"it does not compile: {exc}"
            if problem is None:
                chosen = at_occupancy(chosen, facts)
                break
            # no round is spent on it: the compiler's facts already say it cannot be fast here
            checks += 1
            self.on_activity(f"skipped before timing: {chosen.change}: {problem}")
            self._mark_tried(skey, chosen)
            for part in chosen.parts:
                self.outcomes.setdefault(part, [0, 0])[1] += 1
        self._mark_tried(skey, chosen)
        self.pending[str(context.round)] = {"s": skey, "a": chosen.key, "parts": list(chosen.parts), "s2": chosen.after,
                                            "level": level, "round": context.round, "bottleneck": self.bottleneck,
                                            "moves": sorted(chosen.moves), "change": chosen.change}
        self.step += 1
        return Proposal(source=chosen.source, change=chosen.change, proposer=self.info)

    def feedback(self, feedback: Feedback) -> None:
        pending = self.pending.pop(str(feedback.round), None)
        if feedback.edited_source is not None:
            self.tried_sources.add(source_hash(feedback.edited_source))
        if pending is None:
            return
        if feedback.rejected_by_person:
            saved = pending.get("moves")  # None: a pending step saved before version 3
            moves = frozenset(saved) if saved is not None else legacy_moves(pending["s"], pending.get("parts") or [pending["a"]])
            self.refused.add(moves, feedback.round, str(pending.get("change") or ""), feedback.reason)
        r = _step_reward(feedback)
        if r is None:
            return
        level = float(pending["level"])
        passed = feedback.status == "ok"
        if not feedback.rejected_by_person:
            for part in pending.get("parts") or [pending["a"]]:
                counts = self.outcomes.setdefault(part, [0, 0])
                counts[0 if passed else 1] += 1
        if passed and not feedback.accepted and not feedback.rejected_by_person and feedback.edited_source is None:
            self._note_turned_down(pending)
            parts = pending.get("parts") or [pending["a"]]
            if len(parts) == 1 and is_small_gain(feedback.accepted, passed, feedback.improvement, feedback.ci_low):
                assert feedback.improvement is not None and feedback.ci_low is not None
                self.small_gains.append(SmallGain(state=pending["s"], part=parts[0],
                                                  improvement=feedback.improvement, ci_low=feedback.ci_low))
        if feedback.edited_source is not None:  # the measurement is of the person's program, not ours
            if passed:
                edited = self._analyze_source(feedback.edited_source)
                self.model.register(edited)
                self.model.add(edited.assignment, level + r)
                self.levels.setdefault(state_key(edited.assignment), level + r)
            return
        s2key = state_key(pending["s2"])
        if passed:
            self.model.add(pending["s2"], level + r)
            if feedback.accepted or s2key not in self.levels:
                self.levels[s2key] = level + r
        self.transitions.append({"s": pending["s"], "a": pending["a"], "s2": s2key, "r": level + r, "step": r})
        self.q = max_q_backup(self.transitions, self.gamma)

    def state(self) -> dict:
        version, internal, gauss = self.rng.getstate()
        state = {
            "kind": "search",
            "version": STATE_VERSION,
            "seed": self.seed,
            "gamma": self.gamma,
            "budget_hint": self.budget_hint,
            "step": self.step,
            "rng": [version, list(internal), gauss],
            "q": self.q,
            "transitions": self.transitions,
            "tried_pairs": sorted(self.tried_pairs),
            "tried_sources": sorted(self.tried_sources),
            "levels": self.levels,
            "samples": self.model.samples,  # the model's parts (ValueModel.from_state reads them back)
            "domains": self.model.domains,
            "numeric": self.model.numeric,
            "outcomes": self.outcomes,
            "refused": self.refused.state(),
            "pending": self.pending,
            "bottleneck": self.bottleneck,
            "kinds": self.model.kinds,
            "dot_knobs": sorted(self.model.dot_knobs),
            "turned_down": self.turned_down,
            "small_gains": gains_state(self.small_gains),
        }
        return json.loads(json.dumps(state))  # a snapshot: later steps do not change it

    def restore(self, state: dict) -> None:
        if not state or state.get("kind") != "search":
            return
        self.seed = int(state.get("seed", self.seed))
        self.gamma = float(state.get("gamma", self.gamma))
        self.budget_hint = max(1, int(state.get("budget_hint", self.budget_hint)))
        self.step = int(state.get("step", 0))
        rng = state.get("rng")
        if rng:
            self.rng.setstate((rng[0], tuple(rng[1]), rng[2]))
        else:
            self.rng = random.Random(self.seed)
        self.q = {s: dict(a) for s, a in (state.get("q") or {}).items()}
        self.transitions = list(state.get("transitions") or [])
        self.tried_pairs = set(state.get("tried_pairs") or [])
        self.tried_sources = set(state.get("tried_sources") or [])
        self.levels = dict(state.get("levels") or {})
        self.outcomes = {k: list(v) for k, v in (state.get("outcomes") or {}).items()}
        self.refused = Refusals.from_state(state.get("refused"), state.get("rejected"))
        saved = state.get("pending") or {}
        # a state written before batches held one step, not one per round
        self.pending = {str(saved.get("round", 0)): saved} if "s" in saved else dict(saved)
        self.bottleneck = state.get("bottleneck")
        self.turned_down = {k: list(v) for k, v in (state.get("turned_down") or {}).items()}
        self.small_gains = gains_from_state(state.get("small_gains"))
        self.model = ValueModel.from_state(state)

    def _chain(self, analysis: Analysis, skey: str) -> Candidate | None:
        """Two small gains of this state as one candidate (search_chains), where both still apply."""
        for a, b in chain_pairs(self.small_gains, skey, self.tried_pairs):
            first = action_for(analysis, a.part)
            if first is None:
                continue
            middle = self._analyze(analysis.apply(first))
            second = action_for(middle, b.part)
            if second is None or self.refused.blocking(moves_of(first, second)) is not None:
                continue
            source = middle.apply(second)
            if source_hash(source) in self.tried_sources:
                continue
            self.model.register(middle)
            return Candidate(key=f"{a.part}+{b.part}", parts=(a.part, b.part), moves=moves_of(first, second),
                             change=chain_text(first, second, a, b), source=source,
                             after=middle.assignment_after(second))
        return None

    def _ranked(self, analysis: Analysis, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates of a tl.dot kernel by the incumbent's register room (search_rank): its compile facts
        where `resources` gives them, else what its knob assignment says."""
        facts = None
        if self.resources is not None and analysis.dot_tiles(analysis.assignment):
            facts = self._incumbent_facts(analysis)
        return ranked(analysis, candidates, self._kinds_of, self.bottleneck, facts, self.output_elements, self.sm_count)

    def _incumbent_facts(self, analysis: Analysis) -> list[KernelFacts]:
        """What the compiler made of the incumbent: one compile per incumbent (`resources` is given)."""
        assert self.resources is not None
        h = source_hash(analysis.source)
        if h not in self._facts:
            try:
                self._facts = {h: self.resources(analysis.source)}  # one incumbent at a time
            except CompileRefused:  # the incumbent ran; no facts is no reason to stop
                self._facts = {h: []}
        return self._facts[h]

    def _no_change(self, analysis: Analysis, chosen: Candidate, facts: list[KernelFacts]) -> str | None:
        """Why a candidate is the incumbent's own program (same_program), or None."""
        if not same_program(analysis, lambda: self._incumbent_facts(analysis), self._analyze(chosen.source), facts):
            return None
        return "it compiled to the incumbent's own machine code (the same launches and kernels): nothing to time"

    # --- values (the candidates are SearchSteps'; the backup and the choice, search_values') ---------------
    def _penalty(self, akey: str) -> float:
        passed, failed = self.outcomes.get(akey, (0, 0))
        return FAILED_REWARD * failed / (passed + failed) if failed else 0.0

    def _score(self, analysis: Analysis, s: dict, level: float, c: Candidate) -> tuple[float, float]:
        """(Q̂(s, a), the model's standard deviation for the optimism bonus)."""
        delta, sd = self.model.predict(c.after, s)
        m = level + delta + sum(self._penalty(p) for p in c.parts) + self._bottleneck_prior(analysis, c)
        known = self.q.get(state_key(c.after))
        if known:
            v2 = max(known.values())
        else:
            changed = {p.split("=", 1)[0] for p in c.parts}
            v2 = m + max(0.0, self._best_next(analysis, c.after, changed))
        return max(m, self.gamma * v2), sd

    def _bottleneck_prior(self, analysis: Analysis, c: Candidate) -> float:
        """BOTTLENECK_PRIOR × the share of the step's knobs whose kind the bottleneck favours."""
        favoured = FAVOURED_KINDS.get(self.bottleneck or "", set())
        if not favoured:
            return 0.0
        kinds = [analysis.knobs[p.split("=", 1)[0]].kind for p in c.parts if p.split("=", 1)[0] in analysis.knobs]
        return BOTTLENECK_PRIOR * sum(k in favoured for k in kinds) / len(kinds) if kinds else 0.0

    def _best_next(self, analysis: Analysis, s2: dict, changed: set[str]) -> float:
        """The best predicted one-knob step from s2 (the lookahead of the Max-Q target), among the knobs
        the step did not change: changing those again is another action from s, valued on its own."""
        before = analysis.violations(s2)
        here = self.model.mean(s2)
        best = -math.inf
        for kid, cur in s2.items():
            if kid in changed or cur not in self.model.domains.get(kid, ()):
                continue
            if self.interpreter and self.model.kinds.get(kid) in INTERPRETER_IGNORES:
                continue
            for v in self.model.domains[kid]:
                if v == cur:
                    continue
                after = {**s2, kid: v}
                gain = self.model.mean(after) - here + self._penalty(f"{kid}={v}")
                if gain > best and analysis.allowed(after, before):
                    best = gain
        return best
