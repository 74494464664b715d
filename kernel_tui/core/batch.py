"""A batch of rounds for idle GPUs: several proposals from the same incumbent, decided one after another (a
person may approve the rest of a batch at once), evaluated in parallel, one per GPU of the pool, each gated
against the incumbent it was proposed from.

Only one of them can become the best. The batch's accepted candidates are taken in order of the gate's
estimate: the first is accepted; every other was judged against the old incumbent, so it is gated again,
against the new best, before it can be accepted (those re-gates run in parallel too), and so on until no
candidate of the batch is accepted against the current best. A re-gated candidate is first committed again on
top of the new best (same source and author, a Re-gated-from trailer): best only ever moves forward. A verdict's incumbent_commit always names
the version it was finally judged against; a superseded verdict stays beside it (result-before-regate.json).

A kill at any moment leaves each undecided or unjudged round committed and pending: a resumed run judges
it alone, against the best of that moment, like any pending round.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import git

from kernel_tui.core.decision import Decision, PendingProposal
from kernel_tui.core.evaluator import EvalResult, Evaluator, Status
from kernel_tui.core.events import Event, ProgressEvent
from kernel_tui.core.gpus import DeviceFault, GpuPool, cuda_health
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.workspace import Workspace


class RoundHost(Protocol):
    """The round's steps a batch drives, as a session offers them (core/session.py): the batch needs their
    order, not the session, so it knows them by this interface alone."""

    ws: Workspace
    evaluator: Evaluator
    cancel: threading.Event
    on_event: Callable[[Event], None]

    @property
    def remaining(self) -> int: ...

    def log(self, text: str, round_no: int = 0) -> None: ...

    def propose(self, round_no: int, best_source: str, batch: int = 1) -> PendingProposal | None: ...

    def decide(self, pending: PendingProposal) -> Decision | None: ...

    def commit_edit(self, pending: PendingProposal, decision: Decision) -> tuple[git.Commit, str, ProposerInfo]: ...

    def leave_unjudged(self, round_no: int, reason: str) -> None: ...

    def accept(self, line: TrajectoryLine) -> Any: ...

    def reject_by_person(self, pending: PendingProposal, reason: str | None) -> TrajectoryLine: ...

    def record_verdict(self, round_no: int, change: str, proposer: ProposerInfo, commit: str, incumbent: str,
                       source: str, incumbent_source: str, result: EvalResult) -> TrajectoryLine: ...

    def finish_round(self, line: TrajectoryLine, *, rejected_by_person: bool = False,
                     edited_source: str | None = None, profiled: Any = None,
                     measured: EvalResult | None = None) -> None: ...

# Any result but a pass, or a refusal before the device ran anything, may be the device's failure rather than
# the candidate's (a faulting GPU reads as a CUDA error, wrong values or a hang): its health decides
INNOCENT = (Status.ok, Status.policy_violation)


@dataclass
class _Job:
    round: int
    commit: str
    change: str
    proposer: ProposerInfo
    source: str
    edited: str | None
    incumbent: str  # the commit it is judged against
    incumbent_source: str
    result: EvalResult | None = None
    superseded: EvalResult | None = None  # its verdict against an earlier incumbent of the batch


class Batch:
    """The session's parallel side: its evaluators (one per GPU of the pool) and the batch round."""

    def __init__(self, session: RoundHost, evaluators: list[Evaluator]) -> None:
        self.session = session
        self.evaluators = evaluators
        self.pool = GpuPool([str(i) for i in range(len(evaluators))], health_check=self._health)
        self._said_out: set[str] = set()

    @property
    def size(self) -> int:
        return len(self.pool.devices)

    def _health(self, index: str) -> str | None:
        gpu = self.evaluators[int(index)].gpu
        return cuda_health(gpu) if gpu is not None else None

    # --- one batch ---------------------------------------------------------------------------------
    def round(self) -> TrajectoryLine | None:
        """Propose up to `size` candidates, decide, evaluate in parallel, judge. The last verdict, or None."""
        s = self.session
        ws = s.ws
        best = ws.best
        best_source = ws.source_at(best)
        n = min(self.size, s.remaining)
        proposals: list[PendingProposal] = []
        for _ in range(n):
            proposed = s.propose(ws.next_round(), best_source, batch=n)
            if proposed is None:
                break
            proposals.append(proposed)
        if not proposals:
            s.log("the proposer has nothing more to propose")
            return None
        last: TrajectoryLine | None = None
        jobs: list[_Job] = []
        for k, pending in enumerate(proposals):
            later = proposals[k + 1:]
            pending = pending.model_copy(update={"queued": len(later),
                                                 "queue": tuple(f"round {p.round}: {p.change}" for p in later)})
            decision = s.decide(pending)
            if decision is None:
                return last
            if decision.action == "reject":
                last = s.reject_by_person(pending, decision.reason)
                continue
            job = _Job(round=pending.round, commit=pending.commit, change=pending.change, proposer=pending.proposer,
                       source=pending.source, edited=None, incumbent=best.hexsha, incumbent_source=best_source)
            if decision.action == "edit" and decision.source is not None:
                edit, job.change, job.proposer = s.commit_edit(pending, decision)
                job.commit, job.source, job.edited = edit.hexsha, decision.source, decision.source
            jobs.append(job)
        if not jobs:
            return last
        s.log(f"evaluating {len(jobs)} candidate(s) in parallel on {self.size} device(s)")
        if not self._evaluate(jobs):
            return last
        return self._judge(jobs) or last

    def _evaluate(self, jobs: list[_Job]) -> bool:
        """Each job against its incumbent, one per device at a time. False when cancelled (all stay pending)."""
        s = self.session

        def run(job: _Job, device: str) -> EvalResult:
            ev = self.evaluators[int(device)]
            ev.on_progress = lambda p, r=job.round: s.on_event(
                ProgressEvent(round=r, progress=p, text=f"round {r}: {p.phase} {p.k}/{p.n}"))
            result = ev.evaluate(job.source, incumbent=job.incumbent_source)
            if result.status not in INNOCENT and (why := self._health(device)) is not None:
                raise DeviceFault(why)  # the device, not the candidate: the pool runs it on another
            return result

        saved = [ev.on_progress for ev in self.evaluators]
        try:
            outcomes = self.pool.run(jobs, run)
        finally:
            for ev, on_progress in zip(self.evaluators, saved):
                ev.on_progress = on_progress
        self._after_faults()
        if s.cancel.is_set():
            return False
        for job, outcome in zip(jobs, outcomes):
            job.result = outcome.value if outcome.ok else EvalResult(
                status=Status.evaluator_fault, reason=f"not evaluated: {outcome.error}", device=s.evaluator.device)
        return True

    def _after_faults(self) -> None:
        """Say once which devices left the pool; if the session's own did, a healthy one takes its place (it
        also runs resumed rounds, profiles and the final re-test)."""
        s = self.session
        for device, why in self.pool.out.items():
            if device in self._said_out:
                continue
            self._said_out.add(device)
            s.log(f"{self._name(device)} left the pool: {why}")
        if s.evaluator not in [self.evaluators[int(d)] for d in self.pool.devices] and self.pool.devices:
            spare = self.evaluators[int(self.pool.devices[0])]
            spare.on_progress, s.evaluator = s.evaluator.on_progress, spare
            s.log(f"the session goes on on {self._name(self.pool.devices[0])}")

    def _name(self, device: str) -> str:
        gpu = self.evaluators[int(device)].gpu
        return f"GPU {gpu}" if gpu is not None else f"interpreter slot {device}"

    def _judge(self, jobs: list[_Job]) -> TrajectoryLine | None:
        s, ws = self.session, self.session.ws
        last: TrajectoryLine | None = None
        open_jobs = list(jobs)
        while open_jobs:
            for job in [j for j in open_jobs if j.result is not None and j.result.status is Status.evaluator_fault]:
                s.leave_unjudged(job.round, job.result.reason)  # type: ignore[union-attr]
                open_jobs.remove(job)
            winners = sorted((j for j in open_jobs if j.result is not None and j.result.accepted),
                             key=lambda j: j.result.verdict.improvement, reverse=True)  # type: ignore[union-attr]
            for job in [j for j in open_jobs if j not in winners]:
                last = self.record_verdict(job)
            if not winners:
                return last
            first, rest = winners[0], winners[1:]
            last = self.record_verdict(first)
            s.finish_round(last, edited_source=first.edited, profiled=s.accept(last), measured=first.superseded)
            if not rest:
                return last
            s.log(f"re-gating {len(rest)} candidate(s) of this batch against round {first.round}'s version, "
                   "the new best: each was accepted against the old incumbent")
            for job in rest:
                job.superseded, job.result = job.result, None
                job.incumbent, job.incumbent_source = first.commit, first.source
                # best only moves forward: the candidate is judged, and may be kept, on top of the new best
                job.commit = ws.commit_onto(job.round, ws.repo.commit(job.commit), ws.repo.commit(first.commit)).hexsha
            if not self._evaluate(rest):
                return last
            open_jobs = rest
        return last

    def record_verdict(self, job: _Job) -> TrajectoryLine:
        """The job's verdict on disk (and the superseded one beside it); feedback for all but an accept,
        whose feedback waits for its profile."""
        s = self.session
        result = job.result
        assert result is not None
        if job.superseded is not None:
            result = result.model_copy(update={"reason": f"re-gated against {job.incumbent[:8]}, accepted earlier in "
                                                         f"this batch: {result.reason}"})
        line = s.record_verdict(job.round, job.change, job.proposer, job.commit, job.incumbent, job.source,
                         job.incumbent_source, result)
        if job.superseded is not None:
            s.ws.write_json("result-before-regate.json", job.superseded, directory=s.ws.evaluation_dir(job.round))
        if not line.accepted:
            s.finish_round(line, edited_source=job.edited, measured=job.superseded)
        return line
