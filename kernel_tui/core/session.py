"""One Session drives rounds: propose -> the person's decision -> evaluate -> gate -> record -> feedback.

Headless mode and the TUI are two front ends on this loop (`run`); they differ only in the DecisionProvider
they pass, the RunControl they steer it with, and how they render the typed events (core/events.py). Everything a round produces is on disk (git, trajectory.jsonl,
evaluations/) before the next phase starts, so a kill at any moment loses nothing and a reopened
workspace resumes where it stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal

import git
from pydantic import BaseModel

from kernel_tui.core import metrics
from kernel_tui.core.batch import INNOCENT, Batch
from kernel_tui.core.compare import Comparison, compare
from kernel_tui.core.decision import AutoApprove, Decision, DecisionProvider, PendingProposal
from kernel_tui.core.describe import describe_edit
from kernel_tui.core.evaluator import EvalResult, Evaluator, Status
from kernel_tui.core.events import (
    BestChangedEvent,
    BudgetEvent,
    DecisionEvent,
    Event,
    FinishedEvent,
    IdleEvent,
    LogEvent,
    ProfileEvent,
    ProgressEvent,
    ProposalEvent,
    RoundStartEvent,
    VerdictEvent,
)
from kernel_tui.core.gpus import cuda_health
from kernel_tui.core.history import baseline_latency, current_best
from kernel_tui.core.preflight import run_preflight
from kernel_tui.core.profile.compare import summary_lines
from kernel_tui.core.profile.store import Profiler, ProfileRecord, profiler_for
from kernel_tui.core.profile.store import stored as stored_profile
from kernel_tui.core.proposers.base import Feedback, Proposer, ProposerContext
from kernel_tui.core.records import AgentStatus, Preflight, ProposerInfo, RunSummary, TrajectoryLine
from kernel_tui.core.run_control import RunControl, budget_note
from kernel_tui.core.verdicts import counts, label, run_status_label, verdict_category
from kernel_tui.core.workspace import Workspace

__all__ = ["Event", "RunControl", "Session", "SessionState"]


class SessionState(BaseModel):
    """Saved as session.json: the budget and the proposer's state survive a restart."""

    max_steps: int
    proposer: dict = {}
    finished: bool = False


class Session:
    def __init__(
        self,
        workspace: Workspace,
        evaluator: Evaluator,
        proposer: Proposer,
        decider: DecisionProvider | None = None,
        *,
        max_steps: int | None = None,
        cancel: threading.Event | None = None,
        on_event: Callable[[Event], None] | None = None,
        retest_runs: int | None = None,
        parallel: list[Evaluator] | None = None,
    ) -> None:
        """`parallel`: evaluators for further GPUs of the pool (each pinned to its own). With any, a proposer
        that can hold several proposals proposes a batch per round, evaluated one per GPU (core/batch.py)."""
        self.ws, self.evaluator, self.proposer = workspace, evaluator, proposer
        self.decider = decider or AutoApprove()
        self.cancel = cancel or threading.Event()
        self.evaluator.cancel = self.cancel
        self.on_event = on_event or (lambda e: None)
        self.retest_runs = retest_runs or (5 if evaluator.device == "cuda" else 2)
        self._first_round = 1  # the first round of the current run (run() sets it): patience counts from there
        self.health_check: Callable[[str], str | None] = cuda_health  # asked after a failure on a GPU
        saved = workspace.read_json("session.json")
        state = SessionState.model_validate(saved) if saved else None
        total = max_steps or (state.max_steps if state else workspace.task.spec.optimization.max_rounds)
        self.state = SessionState(max_steps=total, proposer=state.proposer if state else {})
        self.budget_note = budget_note(total, len(workspace.trajectory()), state.max_steps if state else None,
                                       max_steps)
        if self.state.proposer:
            self.proposer.restore(self.state.proposer)
        self._current_round = 0
        # set when the last round could not be judged for the evaluator's own fault: it stays pending
        self.unjudged: str | None = None
        self._said_profiles_off = False
        previous = self.proposer.on_activity  # a proposer says what it is doing: relay it as log events

        def relay(text: str) -> None:
            previous(text)
            self.log(text, self._current_round)

        self.proposer.on_activity = relay
        self.batch = Batch(self, [evaluator, *parallel]) if parallel and proposer.batches else None
        for other in parallel or []:
            other.cancel = self.cancel
        self.evaluator.on_progress = lambda p: self.on_event(
            ProgressEvent(round=self._current_round, progress=p, text=f"{p.phase} {p.k}/{p.n}"))

    # --- plumbing -------------------------------------------------------------------------------
    def log(self, text: str, round_no: int = 0) -> None:
        self.on_event(LogEvent(round=round_no, text=text))

    def _save_state(self) -> None:
        self.state = self.state.model_copy(update={"proposer": self.proposer.state()})
        self.ws.write_json("session.json", self.state)

    @property
    def used(self) -> int:
        return len(self.ws.trajectory())

    @property
    def remaining(self) -> int:
        return max(0, self.state.max_steps - self.used)

    # --- preflight ------------------------------------------------------------------------------
    def preflight(self) -> Preflight:
        return run_preflight(self.ws, self.evaluator, self.cancel, self.on_event, self.profile_version)

    # --- one round ------------------------------------------------------------------------------
    def step(self) -> TrajectoryLine | None:
        """One round. None when there is nothing more to do (budget spent, proposer done, cancelled)."""
        self.unjudged = None
        if self.cancel.is_set():
            return None
        pending = self.ws.pending()
        if not pending and self.remaining <= 0:
            return None
        if not pending and self.batch is not None and self.batch.size > 1 and self.remaining > 1:
            return self.batch.round()
        # A round committed before a stop is judged whatever the budget says now: a commit never stays
        # unjudged (and invisible) because a resumed run was given a smaller --max-steps.
        if pending:
            round_no, commit = pending[0]
            best = self.ws.best
            if not self.ws.repo.is_ancestor(best, commit):
                # proposed beside another of its batch that became best meanwhile: judged, and kept if it
                # wins, on top of today's best (best only moves forward)
                commit = self.ws.commit_onto(round_no, commit, best)
            change, trailers = self.ws.proposal_info(commit)
            self.on_event(RoundStartEvent(round=round_no, resuming=True,
                                          text=f"round {round_no}: resuming {commit.hexsha[:8]} committed before a stop"))
            pending_proposal = PendingProposal(
                round=round_no, commit=commit.hexsha, change=change, proposer=self._proposer_from(trailers),
                source=self.ws.source_at(commit), best_source=self.ws.source_at(best), best_commit=best.hexsha,
            )
        else:
            proposed = self.propose(self.ws.next_round(), self.ws.best_source)
            if proposed is None:
                self.log("the proposer has nothing more to propose")
                return None
            pending_proposal = proposed
        round_no, commit = pending_proposal.round, self.ws.repo.commit(pending_proposal.commit)
        change, proposer, source = pending_proposal.change, pending_proposal.proposer, pending_proposal.source
        self._current_round = round_no
        decision = self.decide(pending_proposal)
        if decision is None:
            return None
        edited = None
        if decision.action == "reject":
            return self.reject_by_person(pending_proposal, decision.reason)
        if decision.action == "edit" and decision.source is not None:
            commit, change, proposer = self.commit_edit(pending_proposal, decision)
            source = edited = decision.source

        result = self.device_checked(self.evaluator.evaluate(source, incumbent=pending_proposal.best_source))
        if result.status is Status.cancelled or self.cancel.is_set():
            return None  # stays pending: judged again on resume
        if result.status is Status.evaluator_fault:
            self.leave_unjudged(round_no, result.reason)
            return None
        line = self.record_verdict(round_no, change, proposer, commit.hexsha, pending_proposal.best_commit, source,
                            pending_proposal.best_source, result)
        profiled = self.accept(line) if line.accepted else None
        self.finish_round(line, edited_source=edited, profiled=profiled)
        return line

    def device_checked(self, result: EvalResult) -> EvalResult:
        """A failure on a GPU is the candidate's only once the GPU passes a health check: a faulting device
        reads as a CUDA error, wrong values or a hang. If it fails, the round is the evaluator's fault (left
        pending, judged again on resume) and says why. (A batch moves the round to another device instead.)"""
        if self.evaluator.device != "cuda" or result.status in INNOCENT or result.status is Status.cancelled:
            return result
        why = self.health_check(self.evaluator.gpu or "0")
        if why is None:
            return result
        return result.model_copy(update={"status": Status.evaluator_fault, "reason": (
            f"{why}: the GPU, not the candidate, is at fault ({result.status.value}: {result.reason})")})

    # --- the steps of a round, shared with a batch (core/batch.py) --------------------------------
    def propose(self, round_no: int, best_source: str, batch: int = 1) -> PendingProposal | None:
        """Ask the proposer for round `round_no` from `best_source` and commit its proposal (on best)."""
        self._current_round = round_no  # what the proposer says while it works belongs to this round
        note = f" (batch of {batch})" if batch > 1 else ""
        self.on_event(RoundStartEvent(round=round_no, text=f"round {round_no}: asking the proposer{note}"))
        ctx = ProposerContext(
            round=round_no, best_source=best_source, baseline_source=self.ws.task.baseline_source,
            history=self.ws.trajectory(), baseline_language=self.ws.task.spec.baseline.language,
            device="cuda" if self.evaluator.device == "cuda" else "cpu",
            bottleneck=self._bottleneck(), **metrics.occupancy_facts(self.ws.task.spec, self.ws.read_json("hardware.json")),
        )
        proposal = self.proposer.propose(ctx)
        self._save_state()
        if proposal is None:
            return None
        commit = self.ws.commit_proposal(round_no, proposal.source, proposal.change, proposal.proposer)
        return PendingProposal(round=round_no, commit=commit.hexsha, change=proposal.change, proposer=proposal.proposer,
                               source=proposal.source, best_source=best_source, best_commit=commit.parents[0].hexsha)

    def decide(self, pending: PendingProposal) -> Decision | None:
        """The person's decision on a proposal (None: the run was cancelled meanwhile)."""
        more = f" — {pending.queued} more in this batch" if pending.queued else ""
        self.on_event(ProposalEvent(round=pending.round, pending=pending,
                                    text=f"round {pending.round}: {pending.change} ({pending.proposer.name}){more}"))
        decision = self.decider.decide(pending, self.cancel)
        if self.cancel.is_set():
            return None
        self.on_event(DecisionEvent(round=pending.round, decision=decision, text=f"round {pending.round}: {decision.action}"
                                    + (f" — {decision.reason}" if decision.reason else "")))
        return decision

    def commit_edit(self, pending: PendingProposal, decision: Decision) -> tuple[git.Commit, str, ProposerInfo]:
        """The person's revision committed on the proposal: (its commit, what it changes, its author)."""
        assert decision.source is not None
        person = decision.person or ProposerInfo(kind="person", name="person")
        change = describe_edit(pending.best_source, decision.source, pending.change)
        commit = self.ws.commit_edit(pending.round, decision.source, self.ws.repo.commit(pending.commit), person,
                                     decision.reason, change=change)
        return commit, change, person

    def leave_unjudged(self, round_no: int, reason: str) -> None:
        """The evaluator's own fault: nothing is known of the candidate, no verdict, the commit stays pending."""
        self.unjudged = f"round {round_no} not judged: {reason}"
        self.log(f"{self.unjudged}; it stays pending and is judged again when the run goes on", round_no)

    def accept(self, line: TrajectoryLine) -> ProfileRecord | None:
        """Best moves to an accepted verdict's commit; then its profile (None where there is none)."""
        self.ws.accept(self.ws.repo.commit(line.commit))
        self.on_event(BestChangedEvent(round=line.round, line=line, text=f"best is now {line.commit[:8]} (round {line.round})"))
        return self.profile_version(line.commit, line.round)

    def reject_by_person(self, pending: PendingProposal, reason: str | None) -> TrajectoryLine:
        """The person's rejection, recorded without an evaluation; the proposer hears the reason."""
        line = TrajectoryLine(
            round=pending.round, change=pending.change, proposer=pending.proposer, commit=pending.commit,
            status="rejected_by_person", reason=reason or "rejected without a reason", accepted=False,
            incumbent_commit=pending.best_commit, device=self.evaluator.device)
        self.ws.record_verdict(line)
        self.finish_round(line, rejected_by_person=True)
        return line

    def profile_version(self, sha: str, round_no: int = 0) -> ProfileRecord | None:
        """Profile one version with Nsight Compute (each accepted one, and on demand). Where this machine
        cannot profile, the reason is said once and None returned; the run goes on without profiles."""
        if self.profiles_off() is None:
            where = f"round {round_no}" if round_no else "the baseline" if sha == self.ws.baseline.hexsha else sha[:8]
            self.log(f"{where}: profiling with Nsight Compute (one call at the benchmark shape)", round_no)
            try:
                record = self.profiler.profile(sha)
            except Exception as exc:  # noqa: BLE001 - a profile is never worth the round it follows
                self.log(f"{where}: no profile: {type(exc).__name__}: {exc}", round_no)
                return None
            if record.status != "unavailable":
                self.on_event(ProfileEvent(round=round_no, record=record, text=f"{where}: {record.headline()}"))
        off = self.profiles_off()
        if off is not None:
            if not self._said_profiles_off:
                self._said_profiles_off = True
                self.log(off, round_no)
            return None
        return record

    @property
    def profiler(self) -> Profiler:
        """The evaluator's profiler (shared with the agent's profile_candidate tool)."""
        return profiler_for(self.ws, self.evaluator)

    def profiles_off(self) -> str | None:
        """Why this session cannot profile (no GPU, no ncu, no access to the counters), or None."""
        return self.profiler.off

    def _bottleneck(self) -> Literal["memory", "compute", "latency"] | None:
        """What holds the best version back: its profile's verdict where it has one, else its place on this
        GPU's measured roofline (None off a GPU)."""
        if self.evaluator.device != "cuda":
            return None
        record = stored_profile(self.ws, self.ws.best.hexsha)
        if record is not None and record.profile is not None and (found := record.profile.bottleneck()):
            return found
        latency = current_best(self.ws).latency or baseline_latency(self.ws)
        place = metrics.roof(self.ws.task.spec, self.ws.read_json("hardware.json")).place(latency)
        return place.bottleneck if place else None

    def _proposer_from(self, trailers: dict[str, str]) -> ProposerInfo:
        kind, _, name = trailers.get("Proposer", "replay:unknown").partition(":")
        if kind not in ("llm", "search", "person", "replay"):
            kind = "replay"
        return ProposerInfo(kind=kind, name=name or kind, model=trailers.get("Model") or None)

    def record_verdict(self, round_no, change, proposer, commit, incumbent, source, incumbent_source, result: EvalResult) -> TrajectoryLine:
        d = self.ws.evaluation_dir(round_no)
        (d / "candidate.py").write_text(source, encoding="utf-8")
        (d / "incumbent.py").write_text(incumbent_source, encoding="utf-8")
        (d / "task.json").write_text((self.ws.root / "task.json").read_text(encoding="utf-8"), encoding="utf-8")
        self.ws.write_json("request.json", {
            "round": round_no, "commit": commit, "incumbent_commit": incumbent, "device": self.evaluator.device,
            "gate": self.evaluator.policy.model_dump(), "timing": self.evaluator.plan().model_dump(),
        }, directory=d)
        self.ws.write_json("result.json", result, directory=d)
        v = result.verdict
        line = TrajectoryLine(
            round=round_no, change=change, proposer=proposer, commit=commit, status=result.status.value,
            reason=result.reason, accepted=result.accepted, latency=result.candidate_seconds,
            incumbent_latency=result.incumbent_seconds, improvement=v.improvement if v else None,
            ci_low=v.ci_low if v else None, ci_high=v.ci_high if v else None, p_value=v.p_value if v else None,
            evaluation_dir=str(d.relative_to(self.ws.root)), incumbent_commit=incumbent,
            device=self.evaluator.device, timing_label=result.timing_label, shapes=result.shapes,
            peak_memory_bytes=result.peak_memory_bytes, kernels=result.kernels,
        )
        self.ws.record_verdict(line)
        return line

    def finish_round(self, line: TrajectoryLine, *, rejected_by_person: bool = False, edited_source: str | None = None,
                      profiled: ProfileRecord | None = None, measured: EvalResult | None = None) -> None:
        """`measured`: the figures the proposer learns from when they are not the verdict's own (a batch's
        re-gated candidate: its step is measured against the incumbent it was proposed from)."""
        improvement, latency, incumbent_latency = line.improvement, line.latency, line.incumbent_latency
        ci_low = line.ci_low
        if measured is not None and measured.verdict is not None:
            improvement, latency = measured.verdict.improvement, measured.candidate_seconds
            incumbent_latency, ci_low = measured.incumbent_seconds, measured.verdict.ci_low
        self.proposer.feedback(Feedback(
            round=line.round, status=line.status, accepted=line.accepted, reason=line.reason,
            improvement=improvement, ci_low=ci_low, latency=latency, incumbent_latency=incumbent_latency,
            rejected_by_person=rejected_by_person, edited_source=edited_source,
            kernels=[k.summary() for k in line.kernels],
            profile=summary_lines(profiled.profile) if profiled is not None and profiled.profile is not None else [],
        ))
        self._save_state()
        self.on_event(VerdictEvent(round=line.round, line=line,
                                   text=f"round {line.round}: {label(verdict_category(line))}: {line.reason}"))
        used = self.used
        self.on_event(BudgetEvent(used=used, total=self.state.max_steps, text=f"budget: {used}/{self.state.max_steps} rounds used"))

    # --- the whole run --------------------------------------------------------------------------
    def run(self, control: RunControl | None = None) -> RunSummary | None:
        """The one run loop of every front end: repair after a stop, preflight, then rounds as `control`
        allows (pause, one round, cancel; each round under `control.engine`) until the budget or the
        proposer is spent. Headless (stop when idle): then the final re-test and its records. A control
        that stays when idle waits there instead (the person may write a candidate or run the final
        comparison) until it is cancelled, and returns None."""
        control = control or RunControl(cancel=self.cancel)
        self.log(self.budget_note)
        with control.engine:
            for text in self.ws.reconcile():
                self.log(f"repaired after a stop: {text}")
            pre = self.preflight()
        if pre.status != "ok":
            missing = "stopped during the preflight" if self.cancel.is_set() else f"preflight failed: {pre.baseline}"
            self.ws.write_json("agent-status.json", AgentStatus(status="incomplete", missing=missing))
            return None
        stopped: str | None = None
        self._first_round = self.ws.next_round()  # patience counts this run's rounds, not a resumed one's
        while control.wait_for_go():
            with control.engine:
                if self.cancel.is_set():
                    break
                line = self.step()
            if line is not None and not control.stay_when_idle and (stopped := self.out_of_patience()):
                self.on_event(IdleEvent(budget_spent=False, text=f"idle: {stopped}"))
                break  # unattended only: on the screen the person decides when a run has gone on long enough
            if line is None and not self.cancel.is_set():
                spent = self.remaining <= 0 and not self.unjudged
                why = self.unjudged or ("budget spent" if spent else "the proposer has nothing more to propose")
                self.on_event(IdleEvent(budget_spent=spent, text=f"idle: {why}"))
                if not control.stay_when_idle:
                    break
                control.set_idle(why)
        if control.stay_when_idle:
            return None  # the front end runs the final comparison when the person asks for it
        if self.cancel.is_set():
            self.ws.write_json("agent-status.json", AgentStatus(status="incomplete", missing="stopped before the final re-test"))
            return None
        return self.finalize(stopped or self.unjudged)

    def out_of_patience(self) -> str | None:
        """Why an unattended run stops early: the task's `patience` rounds of this run in a row, the last ones,
        without an accepted version (the published format's rule; a rejection counts, an evaluator fault is
        no round)."""
        patience = self.ws.task.spec.optimization.patience
        tail = 0
        for line in reversed(self.ws.trajectory()):
            if line.accepted or line.round < self._first_round:
                break
            tail += 1
        if tail < patience or self.remaining <= 0:
            return None  # a budget spent says so itself
        return f"patience: {tail} rounds in a row without an accepted version (the task's patience is {patience})"

    def _retest(self) -> Comparison:
        """Baseline vs best in fresh processes; nothing to time when the best is the baseline's own code (a
        re-test of one kernel against itself measures only noise and cost five processes a run)."""
        baseline, best = self.ws.task.baseline_source, self.ws.best_source
        if best == baseline:
            self.log("final re-test: none needed, the best is the baseline (S = 1 by definition)")
            return Comparison(status=Status.ok, device=self.evaluator.device, same_code=True, speedup=1.0,
                              median_paired_improvement=0.0,
                              reason="no re-test: the best is the baseline's own code, so S = 1 by definition")
        self.log(f"final re-test: baseline vs best, {self.retest_runs} fresh processes")
        return compare(self.evaluator, baseline, best, runs=self.retest_runs, trusted=self.ws.best_is_pytorch_start)

    def finalize(self, stopped_because: str | None = None) -> RunSummary | None:
        """The independent re-test of baseline vs best, run_summary.json and agent-status.json."""
        warnings: list[str] = []
        comparison = self._retest()
        if comparison.status is Status.cancelled or self.cancel.is_set():
            return None  # stopped mid re-test: keep whatever records an earlier finalize left
        self.ws.write_json("final-comparison.json", comparison)
        lines = self.ws.trajectory()
        accepted = [ln for ln in lines if ln.accepted]
        best = current_best(self.ws)  # after a restore, the restored version and its own measurements
        if comparison.status is not Status.ok:
            warnings.append(f"final re-test failed: {comparison.reason}")
        elif accepted and not comparison.same_code and comparison.score is not None and comparison.score < 1.0:
            warnings.append(f"the re-test finds the best slower than the baseline (S = {comparison.score:.3f}{comparison.shapes_text()})")
        if self.evaluator.device == "cpu":
            warnings.append("CPU interpreter run: timings are not GPU timings")
        if self.unjudged:
            warnings.append(f"{self.unjudged} (the evaluator's fault, not the candidate's; it stays pending)")
        if stopped_because is None:
            stopped_because = "budget spent" if self.remaining <= 0 else "proposer finished"
        summary = RunSummary(
            task=self.ws.task.name, device=self.evaluator.device,
            timing_label=comparison.timing_label, rounds=len(lines), accepted=len(accepted), statuses=counts(lines),
            baseline_commit=self.ws.baseline.hexsha, best_commit=best.commit,
            best_round=best.round or None, best_restored_from=best.restored_from,
            baseline_latency=baseline_latency(self.ws), best_latency=best.latency,
            final_speedup=comparison.score, final_median_paired_improvement=comparison.median_paired_improvement,
            final_shape_speedups=comparison.shape_speedups if len(comparison.shape_speedups) > 1 else {}, stopped_because=stopped_because)
        self.ws.write_json("run_summary.json", summary)
        status = (AgentStatus(status="incomplete", warnings=warnings, missing="final re-test") if comparison.status is not Status.ok
                  else AgentStatus(status="complete_with_warning" if warnings else "complete", warnings=warnings))
        self.ws.write_json("agent-status.json", status)
        self.state = self.state.model_copy(update={"finished": True})
        self._save_state()
        self.on_event(FinishedEvent(summary=summary, text=f"{run_status_label(status.status)}: {summary.accepted} accepted "
                                    f"of {summary.rounds}; {comparison.reason}"))
        return summary
