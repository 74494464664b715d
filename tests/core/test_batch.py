"""Batches for idle GPUs: several proposals from one incumbent, evaluated in parallel (one per evaluator),
each gated against the incumbent it was proposed from, and re-gated against a new best before it can be
accepted. The evaluators here judge by a latency written in each candidate (no processes), so every
verdict is known in advance; one test runs real interpreter evaluations on two CPU slots."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from kernel_tui.core.decision import Decision
from kernel_tui.core.evaluator import EvalResult, Evaluator, Status
from kernel_tui.core.gate import Verdict
from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.session import Session
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES

BASELINE_LATENCY = 100.0


def latency_of(source: str) -> float:
    found = re.search(r"# latency: ([0-9.]+)", source)
    return float(found.group(1)) if found else BASELINE_LATENCY


class LatencyEvaluator(Evaluator):
    """Accepts a candidate at least 1% faster than its incumbent, by the latency its source declares."""

    def __init__(self, task, tmp: Path, name: str, calls: list, active: list, estimates: dict | None = None) -> None:
        super().__init__(task, device="cpu", workdir=tmp / name)
        self.name, self.calls, self.active = name, calls, active
        self.estimates = estimates or {}  # true latency -> what a first pass against the baseline measures

    def evaluate(self, candidate, incumbent=None, *, seed=0, timeout=None):
        self.active.append(self.name)
        time.sleep(0.2)  # long enough for a second evaluator to start meanwhile
        cand, inc = latency_of(candidate), latency_of(incumbent or "")
        self.calls.append((self.name, cand, inc, max(len(set(self.active)), 1)))
        self.active.remove(self.name)
        measured = self.estimates.get(cand, cand) if inc == BASELINE_LATENCY else cand
        improvement = 1 - measured / inc
        accepted = improvement > 0.01
        verdict = Verdict(decision="accept" if accepted else "reject", accepted=accepted,
                          reason=f"{'accepted' if accepted else 'not faster'}: {improvement:+.1%}", improvement=improvement,
                          ci_low=improvement - 0.005, ci_high=improvement + 0.005, confidence=0.95, p_value=0.01, pairs=25,
                          blocks=1, confirmation_blocks=0, positive_fraction=1.0, published_rule=accepted)
        return EvalResult(status=Status.ok, reason=verdict.reason, device="cpu", verdict=verdict,
                          candidate_seconds=cand * 1e-6, incumbent_seconds=inc * 1e-6)


def candidates(tmp: Path, latencies: list[float]) -> Path:
    """Replay files: the baseline with a latency comment each (and a comment that makes each source new)."""
    base = (FIXTURES / "vector_add" / "baseline.py").read_text()
    d = tmp / "candidates"
    d.mkdir()
    for k, lat in enumerate(latencies):
        (d / f"{k:02d}.py").write_text(f"# latency: {lat}\n# candidate {k}\n{base}")
    return d


def session_for(tmp: Path, latencies: list[float], evaluators: int = 3, decider=None, estimates=None):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp / "ws")
    calls: list = []
    active: list = []
    evs = [LatencyEvaluator(ws.task, tmp, f"gpu{k}", calls, active, estimates) for k in range(evaluators)]
    session = Session(ws, evs[0], ReplayProposer(candidates(tmp, latencies)), decider, max_steps=len(latencies),
                      cancel=threading.Event(), parallel=evs[1:])
    return ws, session, calls


def test_a_batch_is_evaluated_in_parallel_and_only_the_best_of_it_is_accepted_without_a_re_gate(tmp_path):
    # three candidates, all faster than the baseline (100): 90, 80 and 95
    ws, session, calls = session_for(tmp_path, [90, 80, 95])
    assert session.batch is not None and session.batch.size == 3
    session.step()
    first = calls[:3]
    assert sorted(c[1] for c in first) == [80, 90, 95] and all(c[2] == BASELINE_LATENCY for c in first)
    assert max(c[3] for c in first) >= 2  # evaluated at once, not one after another
    lines = {ln.round: ln for ln in ws.trajectory()}
    # 80 is the best estimate: accepted against the baseline; 90 and 95 were re-gated against it and lost
    assert lines[2].accepted and lines[2].incumbent_commit == ws.baseline.hexsha
    assert ws.best.hexsha == lines[2].commit
    for r in (1, 3):
        assert not lines[r].accepted and lines[r].incumbent_commit == lines[2].commit
        assert lines[r].reason.startswith(f"re-gated against {lines[2].commit[:8]}")
        before = ws.root / lines[r].evaluation_dir / "result-before-regate.json"  # type: ignore[operator]
        assert '"accepted": true' in before.read_text() or '"accepted":true' in before.read_text()
    regates = calls[3:]
    assert sorted(c[1] for c in regates) == [90, 95] and all(c[2] == 80 for c in regates)


def test_a_candidate_faster_than_the_new_best_is_accepted_after_its_re_gate(tmp_path):
    # round 1 (true latency 50) is estimated against the baseline at only +20% (noise); round 2 (60) at +40%:
    # round 2 wins the first pass, then round 1, re-gated against it, is 17% faster and becomes the best
    ws, session, calls = session_for(tmp_path, [50, 60], evaluators=2, estimates={50: 80})
    session.step()
    lines = {ln.round: ln for ln in ws.trajectory()}
    assert lines[2].accepted and lines[2].incumbent_commit == ws.baseline.hexsha
    assert lines[1].accepted and lines[1].incumbent_commit == lines[2].commit
    # best moved forward twice: round 1 was committed again on top of round 2's version before its re-gate
    assert ws.best.hexsha == lines[1].commit and ws.repo.is_ancestor(lines[2].commit, lines[1].commit)
    _, trailers = ws.proposal_info(ws.repo.commit(lines[1].commit))
    assert trailers["Re-gated-from"] != lines[1].commit and ws.repo.commit("refs/candidates/0001").hexsha == lines[1].commit
    assert [c[1:3] for c in calls[2:]] == [(50, 60)]


def test_each_re_gate_round_can_accept_again_until_none_is_better_than_the_best(tmp_path):
    """Three accepted against the baseline, ranked 50, 60, 70: 50 wins; 60 and 70 are re-gated against 50
    and both lose. The chain only continues while a re-gated candidate beats the new best."""
    ws, session, calls = session_for(tmp_path, [60, 50, 70])
    session.step()
    lines = {ln.round: ln for ln in ws.trajectory()}
    assert [r for r, ln in sorted(lines.items()) if ln.accepted] == [2]
    assert len(calls) == 5  # 3 first, 2 re-gates


class RejectsSecond:
    def __init__(self) -> None:
        self.seen: list = []
        self.queues: list = []

    def decide(self, pending, cancel):
        self.seen.append((pending.round, pending.queued))
        self.queues.append(pending.queue)
        if pending.round == 2:
            return Decision(action="reject", reason="not this one")
        return Decision(action="approve")


def test_decisions_come_one_by_one_with_the_rest_of_the_batch_counted_and_a_rejection_costs_no_evaluation(tmp_path):
    decider = RejectsSecond()
    ws, session, calls = session_for(tmp_path, [90, 80, 95], decider=decider)
    session.step()
    assert decider.seen == [(1, 2), (2, 1), (3, 0)]
    assert [len(q) for q in decider.queues] == [2, 1, 0] and decider.queues[0][1].startswith("round 3: ")
    lines = {ln.round: ln for ln in ws.trajectory()}
    assert lines[2].status == "rejected_by_person" and lines[2].reason == "not this one"
    assert sorted(c[1] for c in calls[:2]) == [90, 95]
    assert ws.best.hexsha == lines[1].commit  # 90 beats 95's estimate: accepted, 95 re-gated and lost


def test_one_device_or_a_proposer_of_one_proposal_at_a_time_keeps_one_proposal_per_round(tmp_path):
    from kernel_tui.core.proposers.base import Proposer

    _, single, _ = session_for(tmp_path / "one", [90, 80], evaluators=1)
    assert single.batch is None
    assert not Proposer.batches  # the agent's conversation proposes one candidate at a time

    class OneAtATime(ReplayProposer):
        batches = False

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    evs = [LatencyEvaluator(ws.task, tmp_path, f"g{k}", [], []) for k in range(2)]
    conversation = Session(ws, evs[0], OneAtATime(candidates(tmp_path, [90])), parallel=evs[1:])
    assert conversation.batch is None


def test_the_search_holds_one_step_per_round_of_a_batch(tmp_path):
    from kernel_tui.core.proposers.base import Feedback, ProposerContext
    from kernel_tui.core.proposers.search import SearchProposer

    base = (FIXTURES / "vector_add" / "baseline.py").read_text()
    p = SearchProposer(seed=1)
    proposals = [p.propose(ProposerContext(round=r, best_source=base, baseline_source=base, history=[])) for r in (1, 2, 3)]
    assert all(proposals) and len({x.source for x in proposals if x}) == 3  # three different steps
    assert set(p.pending) == {"1", "2", "3"}
    p.feedback(Feedback(round=2, status="ok", accepted=True, reason="", improvement=0.1, latency=0.9, incumbent_latency=1.0))
    assert set(p.pending) == {"1", "3"} and len(p.transitions) == 1
    p2 = SearchProposer(seed=1)
    p2.restore(p.state())
    assert set(p2.pending) == {"1", "3"}
    old_style = {**p.state(), "pending": {**p.pending["1"]}}  # a state saved before batches: one step
    p3 = SearchProposer(seed=1)
    p3.restore(old_style)
    assert set(p3.pending) == {"1"}


@pytest.mark.slow
def test_a_headless_run_on_two_interpreter_slots_judges_every_round_and_agrees_with_its_records(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = subprocess.run(
        [sys.executable, "-m", "kernel_tui", "run", str(FIXTURES / "vector_add"), "--headless", "--proposer", "replay",
         "--candidates", str(ROOT / "tests" / "candidates" / "vector_add"), "--device", "cpu", "--gpus", "2",
         "--workspace", str(tmp_path / "ws"), "--max-steps", "4"],
        capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "batches of 2" in out.stdout
    lines = [json.loads(x) for x in (tmp_path / "ws" / "trajectory.jsonl").read_text().splitlines()]
    assert sorted(ln["round"] for ln in lines) == [1, 2, 3, 4]
    best = Workspace.open(tmp_path / "ws").best.hexsha
    accepted = [ln for ln in lines if ln["accepted"]]
    assert not accepted or accepted[-1]["commit"] == best
    for ln in lines:  # each verdict names the version it was judged against, and that version was best then
        assert ln["incumbent_commit"]


class Faulty(LatencyEvaluator):
    """Says evaluator_fault for the sources it is told to, once each."""

    def __init__(self, *args, faults: set[float], **kw) -> None:
        super().__init__(*args, **kw)
        self.faults = faults

    def evaluate(self, candidate, incumbent=None, *, seed=0, timeout=None):
        lat = latency_of(candidate)
        if lat in self.faults:
            self.faults.discard(lat)
            return EvalResult(status=Status.evaluator_fault, reason="out of device memory in the flush buffer", device="cpu")
        return super().evaluate(candidate, incumbent, seed=seed, timeout=timeout)


def test_a_round_left_pending_by_a_fault_is_judged_on_the_new_best_and_can_still_win(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    calls: list = []
    faults = {50.0}
    evs = [Faulty(ws.task, tmp_path, f"gpu{k}", calls, [], faults=faults) for k in range(2)]
    session = Session(ws, evs[0], ReplayProposer(candidates(tmp_path, [50, 80])), max_steps=2,
                      cancel=threading.Event(), parallel=evs[1:])
    session.step()  # round 1 not judged (the evaluator's fault), round 2 accepted
    assert session.unjudged and [r for r, _ in ws.pending()] == [1]
    round2 = next(ln for ln in ws.trajectory() if ln.round == 2)
    assert round2.accepted and ws.best.hexsha == round2.commit
    line = session.step()  # round 1 again, alone, against today's best: committed on top of it first
    assert line is not None and line.round == 1 and line.accepted and line.incumbent_commit == round2.commit
    assert ws.best.hexsha == line.commit and ws.repo.is_ancestor(round2.commit, line.commit)
    assert [ln.round for ln in ws.trajectory() if ln.accepted] == [2, 1]


class Listening(ReplayProposer):
    def __init__(self, directory) -> None:
        super().__init__(directory)
        self.heard: dict = {}

    def feedback(self, feedback) -> None:
        self.heard[feedback.round] = feedback
        super().feedback(feedback)


def test_a_re_gated_round_is_learned_from_against_the_incumbent_it_was_proposed_from(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    evs = [LatencyEvaluator(ws.task, tmp_path, f"gpu{k}", [], []) for k in range(2)]
    proposer = Listening(candidates(tmp_path, [90, 80]))
    Session(ws, evs[0], proposer, max_steps=2, cancel=threading.Event(), parallel=evs[1:]).step()
    lines = {ln.round: ln for ln in ws.trajectory()}
    assert not lines[1].accepted and lines[1].improvement == pytest.approx(1 - 90 / 80)  # the verdict: against 80
    heard = proposer.heard[1]
    assert not heard.accepted and heard.improvement == pytest.approx(0.10)  # the step: 100 -> 90
    assert heard.incumbent_latency == pytest.approx(100e-6) and heard.latency == pytest.approx(90e-6)
    assert proposer.heard[2].improvement == pytest.approx(0.20) and set(proposer.heard) == {1, 2}


class Crashes(LatencyEvaluator):
    def evaluate(self, candidate, incumbent=None, *, seed=0, timeout=None):
        if self.name == "gpu0":
            return EvalResult(status=Status.crashed, reason="the worker process died (signal SIGSEGV)", device="cpu")
        return super().evaluate(candidate, incumbent, seed=seed, timeout=timeout)


def test_a_device_that_fails_its_health_check_leaves_and_its_work_runs_on_another(tmp_path):
    from kernel_tui.core.events import LogEvent

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    calls: list = []
    evs = [Crashes(ws.task, tmp_path, f"gpu{k}", calls, []) for k in range(3)]
    events: list = []
    session = Session(ws, evs[0], ReplayProposer(candidates(tmp_path, [90, 80, 70, 60])), max_steps=4,
                      cancel=threading.Event(), parallel=evs[1:], on_event=events.append)
    assert session.batch is not None
    session.batch._health = lambda device: "GPU 0: a tiny CUDA op failed" if device == "0" else None  # type: ignore[method-assign]
    session.step()
    lines = {ln.round: ln for ln in ws.trajectory()}
    assert len(lines) == 3 and all(ln.status != "crashed" for ln in lines.values())  # re-run elsewhere, not blamed
    assert {c[0] for c in calls} <= {"gpu1", "gpu2"}
    assert session.batch.pool.out == {"0": "GPU 0: a tiny CUDA op failed"} and session.batch.size == 2
    assert session.evaluator is not evs[0]  # the session's own evaluator moved to a healthy device
    said = [e.text for e in events if isinstance(e, LogEvent) and "left the pool" in e.text]
    session.step()  # the last round, alone, on the device that took over
    said_after = [e.text for e in events if isinstance(e, LogEvent) and "left the pool" in e.text]
    assert len(said) == 1 and said_after == said  # said once
    assert len(ws.trajectory()) == 4


@pytest.mark.parametrize("status", [Status.incorrect, Status.runtime_error])
def test_any_failure_on_a_device_that_then_fails_its_health_check_is_the_devices(tmp_path, status):
    """A faulting GPU reads as wrong values or a CUDA error as often as a crash: the device's health decides."""

    class FailsOnGpu0(LatencyEvaluator):
        def evaluate(self, candidate, incumbent=None, *, seed=0, timeout=None):
            if self.name == "gpu0":
                return EvalResult(status=status, reason="an illegal memory access was encountered", device="cpu")
            return super().evaluate(candidate, incumbent, seed=seed, timeout=timeout)

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    calls: list = []
    evs = [FailsOnGpu0(ws.task, tmp_path, f"gpu{k}", calls, []) for k in range(2)]
    session = Session(ws, evs[0], ReplayProposer(candidates(tmp_path, [90, 80])), max_steps=2,
                      cancel=threading.Event(), parallel=evs[1:])
    assert session.batch is not None
    session.batch._health = lambda device: "GPU 0: a tiny CUDA op failed" if device == "0" else None  # type: ignore[method-assign]
    session.step()
    assert all(ln.status is not status for ln in ws.trajectory())  # judged again elsewhere, not charged
    assert session.batch.pool.out == {"0": "GPU 0: a tiny CUDA op failed"}


def test_on_one_gpu_a_failure_the_gpu_caused_leaves_the_round_pending_instead_of_charging_it(tmp_path):
    class WrongOnAFaultyGpu(LatencyEvaluator):
        def evaluate(self, candidate, incumbent=None, *, seed=0, timeout=None):
            return EvalResult(status=Status.incorrect, reason="max abs error 3e38 at (0, 0)", device="cuda")

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = WrongOnAFaultyGpu(ws.task, tmp_path, "gpu0", [], [])
    ev.device = "cuda"
    session = Session(ws, ev, ReplayProposer(candidates(tmp_path, [90])), max_steps=1, cancel=threading.Event())
    asked: list[str] = []
    session.health_check = lambda gpu: asked.append(gpu) or "GPU 0 failed a tiny CUDA op: Xid 79"
    assert session.step() is None
    assert ws.trajectory() == [] and asked == ["0"]  # not charged: pending, judged again when the run goes on
    assert session.unjudged is not None and "the GPU, not the candidate, is at fault" in session.unjudged
    session.health_check = lambda gpu: None  # a healthy GPU: the verdict is the candidate's
    assert session.step() is not None and ws.trajectory()[0].status is Status.incorrect
