"""What the person rejected, kept by the built-in search as knob moves it never proposes again in the run.

A move is one knob changed from one value to another (`move(knob, old, new)`); a rejected proposal is the set
of its moves. A later candidate that makes every move of a rejected proposal, from the incumbent it was
rejected on or from any later one, alone or beside another step, is not proposed: the person judged the
change, not one source of it. (Keyed by state, as before, the search proposed `num_warps 4 → 1` again right
after the person had rejected it with a reason, because a block change had been accepted in between.) The
rule is simple on purpose: never again in this run, whatever the reason said; the person may still write the
change in themselves. The search says so, once per rejection, when it first leaves a candidate out for it.

The memory is the search's saved state and also the workspace's: each `rejected_by_person` line of the
trajectory names the proposal's commit and its incumbent's, and the knob moves that turn the incumbent into
the proposal, when they are the whole edit (the same program up to formatting and comments), are refused
whoever proposed it. So a run killed before its state was saved, or one the search takes over from another
proposer, keeps every rejection.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kernel_tui.core.proposers.transforms import Action, Analysis
from kernel_tui.core.records import TrajectoryLine


def move(knob: str, old: int | str | None, new: int | str) -> str:
    """One knob from `old` to `new`, as JSON text (hashable, and saved as is)."""
    return json.dumps([knob, old, new])


def moves_of(*actions: Action | None) -> frozenset[str]:
    return frozenset(move(a.knob, a.old, a.new) for a in actions if a is not None)


def legacy_moves(state_key: str, parts: Iterable[str]) -> frozenset[str]:
    """The moves of steps kept as `knob=value` from a state (search state version 2 and older pendings)."""
    assignment = json.loads(state_key)
    out = set()
    for part in parts:
        knob, _, raw = part.partition("=")
        old = assignment.get(knob)
        new: int | str = int(raw) if isinstance(old, int) and raw.lstrip("-").isdigit() else raw
        out.add(move(knob, old, new))
    return frozenset(out)


def moves_between(before: Analysis, after: Analysis, analyze: Callable[[str], Analysis]) -> frozenset[str]:
    """The knob moves that turn `before` into `after`, or nothing when `after` is more than knob moves."""
    if before.tree is None or after.tree is None:
        return frozenset()
    target, goal = after.assignment, ast.dump(after.tree)
    current, out = before, set[str]()
    for _ in range(len(target) + 1):  # one knob per pass: a launch-order change brings its GROUP_M with it
        if current.tree is not None and ast.dump(current.tree) == goal:
            return frozenset(out)
        knob = next((k for k, v in current.assignment.items() if k in target and target[k] != v), None)
        if knob is None:
            break
        step = Action(knob=knob, kind=current.knobs[knob].kind, old=current.knobs[knob].value, new=target[knob], change="")
        try:
            current = analyze(current.apply(step))
        except (ValueError, KeyError):
            break
        out.add(move(step.knob, step.old, step.new))
    return frozenset()


@dataclass(frozen=True)
class Refusal:
    moves: frozenset[str]
    round: int | None  # None: read from a state that did not keep it
    change: str  # the rejected proposal's change text, as the person saw it ("" where unknown)
    reason: str

    def skip_text(self, candidate_change: str) -> str:
        when = f" in round {self.round}" if self.round is not None else ""
        return (f"{self.change or candidate_change} is not proposed again: the person rejected it{when} "
                f"({self.reason or 'no reason given'}); a rejected change stays out for the rest of this run")


class Refusals:
    """The rejected proposals of the run, as move sets."""

    def __init__(self) -> None:
        self.items: list[Refusal] = []
        self._read: set[str] = set()  # trajectory commits already read (in this process)
        self._said: set[frozenset[str]] = set()

    def add(self, moves: frozenset[str], round_no: int | None, change: str, reason: str) -> None:
        if moves and all(r.moves != moves for r in self.items):
            self.items.append(Refusal(moves, round_no, change, reason))

    def blocking(self, moves: frozenset[str]) -> Refusal | None:
        """The rejection a candidate of these moves repeats, if any."""
        return next((r for r in self.items if r.moves <= moves), None)

    def first_time(self, refusal: Refusal) -> bool:
        """True the first time (in this process) a candidate is left out for `refusal`."""
        if refusal.moves in self._said:
            return False
        self._said.add(refusal.moves)
        return True

    def learn(self, history: Iterable[TrajectoryLine], source_at: Callable[[str], str | None],
              analyze: Callable[[str], Analysis]) -> list[str]:
        """Take the rejections of the trajectory not read yet; returns the rejected sources read."""
        sources = []
        for line in history:
            if line.status != "rejected_by_person" or line.commit in self._read:
                continue
            self._read.add(line.commit)
            proposal = source_at(line.commit)
            incumbent = source_at(line.incumbent_commit) if line.incumbent_commit else None
            if proposal is None:
                continue
            sources.append(proposal)
            if incumbent is not None:
                self.add(moves_between(analyze(incumbent), analyze(proposal), analyze), line.round, line.change, line.reason)
        return sources

    def state(self) -> list[dict]:
        return [{"moves": sorted(r.moves), "round": r.round, "change": r.change, "reason": r.reason} for r in self.items]

    @classmethod
    def from_state(cls, saved: list[dict] | None, legacy: dict[str, list[list[str]]] | None = None) -> Refusals:
        """`legacy`: a version-2 state's rejected steps (state key -> the `knob=value` steps of each proposal)."""
        out = cls()
        for r in saved or []:
            out.add(frozenset(r.get("moves") or []), r.get("round"), str(r.get("change") or ""), str(r.get("reason") or ""))
        for skey, proposals in (legacy or {}).items():
            for parts in proposals:
                out.add(legacy_moves(skey, parts), None, "", "")
        return out
