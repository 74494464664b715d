"""The one run loop (`Session.run`) that both front ends drive: pause, one round, idle, cancel; typed events;
a proposer's activity relayed through any wrapper. No evaluation runs: the person rejects every proposal."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from kernel_tui.core import events as ev
from kernel_tui.core import session as session_module
from kernel_tui.core.compare import Comparison
from kernel_tui.core.decision import Decision
from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.proposers.base import Proposal, ProposerContext
from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.records import Preflight, ProposerInfo
from kernel_tui.core.run_control import RunControl
from kernel_tui.core.session import Session
from kernel_tui.core.workspace import Workspace
from kernel_tui.tui.person import PersonProposer
from tests.conftest import FIXTURES
from tests.core.test_history import StubEvaluator
from tests.support.workspaces import ADA, CANDIDATES


class Rejects:
    def decide(self, pending, cancel):
        return Decision(action="reject", reason="not this one")


def workspace(tmp_path) -> Workspace:
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ws.write_json("preflight.json", Preflight(status="ok", reference="ok", baseline="correct", device="cpu"))
    return ws


def wait(predicate, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_the_loop_honours_pause_one_round_idle_and_cancel(tmp_path):
    ws = workspace(tmp_path)
    events: list[ev.Event] = []
    control = RunControl(paused=True, stay_when_idle=True)
    session = Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), Rejects(), max_steps=10,  # type: ignore[arg-type]
                      cancel=control.cancel, on_event=events.append)
    result: list = []
    loop = threading.Thread(target=lambda: result.append(session.run(control)))
    loop.start()
    try:
        wait(lambda: any(isinstance(e, ev.PreflightEvent) for e in events))
        time.sleep(0.3)
        assert ws.trajectory() == []  # paused: no round starts
        assert control.one_round()
        wait(lambda: len(ws.trajectory()) == 1)
        time.sleep(0.3)
        assert len(ws.trajectory()) == 1  # exactly one
        assert not control.toggle_pause()  # resume: the rest of the candidates, then idle
        wait(lambda: any(isinstance(e, ev.IdleEvent) for e in events))
        assert len(ws.trajectory()) == 4 and control.idle == "the proposer has nothing more to propose"
        assert loop.is_alive()  # the screen's loop stays when idle
    finally:
        control.stop()
        loop.join(20)
    assert not loop.is_alive() and result == [None]
    assert ws.read_json("agent-status.json") is None  # quitting the screen writes no verdict on the run
    decisions = [e for e in events if isinstance(e, ev.DecisionEvent)]
    assert [d.decision.action for d in decisions] == ["reject"] * 4 and decisions[0].decision.reason == "not this one"
    assert all(isinstance(e, ev.Event) and e.kind for e in events)


def test_headless_defaults_stop_when_idle_and_finalize(tmp_path, monkeypatch):
    monkeypatch.setattr(session_module, "compare", lambda *a, **k: Comparison(
        status="ok", reason="S = 1.000x", device="cpu", speedup=1.0, median_paired_improvement=0.0))
    ws = workspace(tmp_path)
    events: list[ev.Event] = []
    session = Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), Rejects(), max_steps=2,  # type: ignore[arg-type]
                      on_event=events.append)
    summary = session.run()
    assert summary is not None and summary.rounds == 2
    idle = [e for e in events if isinstance(e, ev.IdleEvent)]
    assert len(idle) == 1 and idle[0].budget_spent
    assert isinstance(events[-1], ev.FinishedEvent) and events[-1].summary == summary


class Talkative(ReplayProposer):
    """A proposer that says what it is doing, as the agent does (model calls, retries, budget)."""

    def propose(self, context: ProposerContext) -> Proposal | None:
        self.on_activity(f"agent: model call 1/3 for round {context.round}")
        return super().propose(context)


def test_a_proposers_activity_reaches_the_front_end_through_the_persons_wrapper(tmp_path):
    ws = workspace(tmp_path)
    events: list[ev.Event] = []
    wrapped = PersonProposer(Talkative(CANDIDATES), ADA, ws.root / ".work")
    session = Session(ws, StubEvaluator(), wrapped, Rejects(), max_steps=1, on_event=events.append)  # type: ignore[arg-type]
    session.step()
    said = [e for e in events if isinstance(e, ev.LogEvent) and e.text.startswith("agent:")]
    assert [e.text for e in said] == ["agent: model call 1/3 for round 1"] and said[0].round == 1


def test_the_persons_own_candidate_is_not_attributed_to_the_wrapped_proposer(tmp_path):
    ws = workspace(tmp_path)
    wrapped = PersonProposer(ReplayProposer(CANDIDATES), ADA, ws.root / ".work")
    wrapped.queue(ws.best_source + "\n# mine\n", "my own try")
    session = Session(ws, StubEvaluator(), wrapped, Rejects(), max_steps=1)  # type: ignore[arg-type]
    line = session.step()
    assert line is not None and line.proposer == ProposerInfo(kind="person", name=ADA.name, email=ADA.email)


def test_the_controller_refuses_an_empty_reason_and_a_copy_of_best(tmp_path):
    from kernel_tui.core.run_control import RunControl
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.options import RunOptions
    from kernel_tui.tui.person import PersonDecider

    controller = Controller(RunOptions(target=None), lambda message: None)
    decider = controller.decider = PersonDecider()
    decider._pending = object()  # a proposal is waiting  # type: ignore[assignment]
    assert controller.reject("   ") == "say why: the reason goes back to the proposer"
    assert not decider._answered.is_set()  # still waiting for a real answer
    assert controller.reject("too big a jump") is None and decider._answer.reason == "too big a jump"

    controller.proposer = PersonProposer(ReplayProposer(CANDIDATES), ADA, tmp_path / ".work")
    controller.control = RunControl()
    controller.best_source = "BLOCK_SIZE = 256\n"
    assert "identical to the current best" in controller.write_own("BLOCK_SIZE = 256\n\n", "same")
    assert not controller.proposer.has_draft
    assert controller.write_own("BLOCK_SIZE = 512\n", "bigger") is None and controller.proposer.has_draft


def test_an_edit_or_own_candidate_that_cannot_run_costs_no_round_and_is_kept_to_be_fixed(tmp_path):
    """`BLOCK_SIZE = = 128` once cost a round (and read `8192 -> =128`): now it is refused before, in one
    line, and `e` / `w` open the text again."""
    from types import SimpleNamespace

    from kernel_tui.core.run_control import RunControl
    from kernel_tui.core.workspace import Workspace
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.options import RunOptions
    from kernel_tui.tui.person import PersonDecider
    from tests.conftest import FIXTURES

    controller = Controller(RunOptions(target=None), lambda message: None)
    controller.ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    controller.evaluator = SimpleNamespace(device="cpu")  # type: ignore[assignment]
    controller.best_source = best = controller.ws.best_source
    decider = controller.decider = PersonDecider()
    decider._pending = SimpleNamespace(source=best, round=1)  # type: ignore[assignment]
    broken = best.replace("BLOCK_SIZE = ", "BLOCK_SIZE = = ", 1)
    said = controller.stage_edit(broken)
    assert said is not None and said.startswith("edit not sent, no round spent: syntax error") and "\n" not in said
    assert controller.staged is None and controller.editable_source() == broken  # kept, to be fixed

    controller.proposer = PersonProposer(ReplayProposer(CANDIDATES), ADA, tmp_path / ".work")
    controller.control = RunControl()
    said = controller.write_own(broken, "mine")
    assert said is not None and said.startswith("not queued, no round spent: syntax error")
    assert not controller.proposer.has_draft and controller.own_draft() == broken
    host_sum = best + "\n\ndef helper(x):\n    return x.sum()\n"  # torch compute in host code: a rule, named
    said = controller.write_own(host_sum, "mine")
    assert said is not None and "no round spent" in said and not controller.proposer.has_draft


def test_an_unattended_run_stops_after_its_patience_and_the_screen_does_not(tmp_path, monkeypatch):
    """`patience` (the published format's): an unattended run stops after that many rounds of its own in a row
    without an accepted version, says why, and still ends with its final re-test; on the screen the person
    decides, and the same rejections go on until the proposer is done."""
    import json
    import shutil

    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "vector_add", task)
    spec = json.loads((task / "task.json").read_text())
    spec["optimization"]["patience"] = 2
    (task / "task.json").write_text(json.dumps(spec))

    def session_on(name: str, events: list) -> tuple[Session, Workspace]:
        ws = Workspace.create(task, path=tmp_path / name)
        ws.write_json("preflight.json", Preflight(status="ok", reference="ok", baseline="correct", device="cpu"))
        return Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), Rejects(), max_steps=10,  # type: ignore[arg-type]
                       on_event=events.append), ws

    events: list[ev.Event] = []
    headless, ws = session_on("headless", events)
    ended: list = []
    monkeypatch.setattr(headless, "finalize", lambda why=None: ended.append(why))
    headless.run(RunControl())
    assert len(ws.trajectory()) == 2
    assert ended == ["patience: 2 rounds in a row without an accepted version (the task's patience is 2)"]
    assert any(isinstance(e, ev.IdleEvent) and e.text.startswith("idle: patience: 2 rounds") for e in events)

    screen_events: list[ev.Event] = []
    screen, screen_ws = session_on("screen", screen_events)
    control = RunControl(stay_when_idle=True, cancel=screen.cancel)
    loop = threading.Thread(target=lambda: screen.run(control))
    loop.start()
    try:
        wait(lambda: any(isinstance(e, ev.IdleEvent) for e in screen_events))
        assert len(screen_ws.trajectory()) > 2  # every candidate, rejected one after another
        assert not any("patience" in e.text for e in screen_events)
    finally:
        control.cancel.set()
        loop.join(timeout=20)


def test_no_re_test_when_the_best_is_still_the_baseline(tmp_path, monkeypatch):
    """Five fresh processes timing the baseline against itself say nothing: when no version was accepted the
    run ends without them, and its records and report say why S is 1."""
    from kernel_tui.core.report import write_report

    called: list = []
    monkeypatch.setattr(session_module, "compare", lambda *a, **k: called.append(a) or Comparison(
        status="ok", reason="S = 1.000x", device="cpu", speedup=1.0, median_paired_improvement=0.0))
    ws = workspace(tmp_path)
    events: list[ev.Event] = []
    summary = Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), Rejects(), max_steps=1,  # type: ignore[arg-type]
                      on_event=events.append).run()
    assert called == [] and summary is not None and summary.final_speedup == 1.0
    final = ws.read_json("final-comparison.json")
    assert final is not None and final["same_code"] and final["runs"] == [] and "by definition" in final["reason"]
    assert any("none needed, the best is the baseline" in getattr(e, "text", "") for e in events)
    write_report(ws.root)
    assert "there is nothing to re-test, and S = 1 by definition" in (ws.root / "report.md").read_text()


class StoppedInPreflight(StubEvaluator):
    """The person stops the run while the baseline is being checked: the check comes back cancelled."""

    def __init__(self, cancel: threading.Event) -> None:
        self.stop = cancel

    def check(self, source, trusted=False):
        self.stop.set()
        return SimpleNamespace(status=Status.cancelled, reason="cancelled")


def test_a_stop_during_the_preflight_records_no_verdict_on_the_baseline(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    cancel = threading.Event()
    events: list[ev.Event] = []
    session = Session(ws, StoppedInPreflight(cancel), ReplayProposer(CANDIDATES), Rejects(),  # type: ignore[arg-type]
                      max_steps=2, cancel=cancel, on_event=events.append)
    assert session.run(RunControl(cancel=cancel)) is None
    assert ws.read_json("preflight.json") is None  # a resumed run checks the baseline again
    assert ws.read_json("agent-status.json")["missing"] == "stopped during the preflight"
    assert not any(isinstance(e, ev.PreflightEvent) for e in events)  # no "preflight failed" line anywhere
    assert any("stopped before it finished" in getattr(e, "text", "") for e in events)
