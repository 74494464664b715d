"""The Session loop end to end on the CPU interpreter: headless replay, kill -9 and resume, decisions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import git
import pytest

from kernel_tui.core.decision import Decision, PendingProposal
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.proposers.base import ProposerContext
from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.records import ProposerInfo
from kernel_tui.core.session import Session
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES, ROOT

CANDIDATES = ROOT / "tests" / "candidates"


def kt(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def run_args(task: str, ws: Path) -> list[str]:
    return ["run", str(FIXTURES / task), "--headless", "--proposer", "replay", "--candidates",
            str(CANDIDATES / task), "--device", "cpu", "--workspace", str(ws)]


def wait_for(predicate, timeout: float, proc: subprocess.Popen, poll: float = 0.2) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended early: {proc.stdout.read() if proc.stdout else ''}")
        time.sleep(poll)
    pytest.fail("timed out waiting")


def check_artifacts_agree(ws_dir: Path, rounds: int) -> list[dict]:
    lines = [json.loads(x) for x in (ws_dir / "trajectory.jsonl").read_text().splitlines()]
    assert sorted(ln["round"] for ln in lines) == list(range(1, rounds + 1))  # each round judged once
    repo = git.Repo(ws_dir)
    for ln in lines:
        assert repo.commit(f"refs/candidates/{ln['round']:04d}").hexsha == ln["commit"]
        note = json.loads(repo.git.notes("--ref", "refs/notes/verdicts", "show", ln["commit"]))
        assert note["status"] == ln["status"] and note["accepted"] == ln["accepted"]
        if ln["status"] != "rejected_by_person":
            d = ws_dir / ln["evaluation_dir"]
            result = json.loads((d / "result.json").read_text())
            assert result["status"] == ln["status"] and (d / "candidate.py").read_text() == repo.commit(ln["commit"]).tree["kernel.py"].data_stream.read().decode()
            assert {"candidate.py", "incumbent.py", "task.json", "request.json", "result.json"} <= {p.name for p in d.iterdir()}
    accepted = [ln for ln in lines if ln["accepted"]]
    best = repo.commit("best")
    if accepted:
        assert best.hexsha == accepted[-1]["commit"]
    assert (ws_dir / "best.py").read_text() == best.tree["kernel.py"].data_stream.read().decode()
    for name in ("environment.json", "hardware.json", "preflight.json", "baseline-evaluation.json",
                 "final-comparison.json", "run_summary.json", "agent-status.json", "report.md",
                 "rounds_overview.png", "process_timeline.png", "status_breakdown.png"):
        assert (ws_dir / name).stat().st_size > 0, name
    summary = json.loads((ws_dir / "run_summary.json").read_text())
    assert summary["rounds"] == rounds and summary["accepted"] == len(accepted) and summary["best_commit"] == best.hexsha
    assert json.loads((ws_dir / "agent-status.json").read_text())["status"] in ("complete", "complete_with_warning")
    assert "not GPU timings" in json.loads((ws_dir / "hardware.json").read_text())["statement"]
    sandbox = json.loads((ws_dir / "preflight.json").read_text())["sandbox"]
    assert sandbox.startswith("sandbox: ") and "Landlock" in sandbox  # what confined the workers, or what is missing
    assert sandbox in (ws_dir / "report.md").read_text()
    return lines


def test_headless_replay_killed_mid_evaluation_resumes_with_nothing_lost(tmp_path):
    ws_dir = tmp_path / "ws"
    proc = subprocess.Popen([sys.executable, "-m", "kernel_tui", *run_args("vector_add", ws_dir)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: (ws_dir / "preflight.json").exists(), 600, proc)
        second = kt("run", str(ws_dir), "--headless", "--device", "cpu")
        assert second.returncode == 2 and "in use by another kernel-tui process" in second.stderr
        # kill as soon as round 2 is committed: its evaluation (a worker, correctness, a timing block)
        # takes seconds, the poll a few milliseconds
        wait_for(lambda: (ws_dir / ".git/refs/candidates/0002").exists(), 600, proc, poll=0.02)
        os.kill(proc.pid, signal.SIGKILL)
        pending_commit = git.Repo(ws_dir).commit("refs/candidates/0002").hexsha
    finally:
        proc.kill()
        proc.wait()
    judged_before = (ws_dir / "trajectory.jsonl").read_text().splitlines()
    assert len(judged_before) == 1

    resumed = kt("run", str(ws_dir), "--headless", "--device", "cpu")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming" in resumed.stdout
    lines = check_artifacts_agree(ws_dir, rounds=4)
    assert lines[0] == json.loads(judged_before[0])  # nothing rewritten
    assert lines[1]["commit"] == pending_commit  # the interrupted round was judged, not re-proposed
    by_round = {ln["round"]: ln for ln in lines}
    assert by_round[4]["status"] == "incorrect" and not by_round[3]["accepted"]
    report = kt("report", str(ws_dir))
    assert report.returncode == 0 and "report.md" in report.stdout
    if not by_round[1]["accepted"]:  # a gate verdict on interpreter timings, once rejected under CI's load: the
        # resume is what this test is about; the history and restore below need round 1's accept
        assert by_round[1]["status"] == "ok" and by_round[1]["reason"].startswith("rejected"), by_round[1]["reason"]
        return

    log = git.Repo(ws_dir).git.log("--format=%an|%s", "best").splitlines()
    assert log[-1].startswith("kernel-tui|Baseline") and "Block size 256 -> 1024" in log[0]

    history = kt("history", str(ws_dir), "--json")
    versions = json.loads(history.stdout)
    assert [v["round"] for v in versions] == [1, 0]
    everything = json.loads(kt("history", str(ws_dir), "--all", "--json").stdout)
    assert [v["status"] for v in everything][3] == "incorrect" and len(everything) == 4

    restored = kt("restore", str(ws_dir), versions[-1]["commit"][:8], "--name", "Ada", "--email", "ada@example.org")
    assert restored.returncode == 0, restored.stderr
    repo = git.Repo(ws_dir)
    assert repo.commit("best").author.name == "Ada" and repo.commit("best").parents[0].hexsha == versions[0]["commit"]
    assert (ws_dir / "best.py").read_text() == (FIXTURES / "vector_add" / "baseline.py").read_text()
    assert kt("report", str(ws_dir)).returncode == 0  # after the restore too


def test_headless_replay_on_a_second_fixture(tmp_path):
    out = kt(*run_args("silu_mul", tmp_path / "ws"))
    assert out.returncode == 0, out.stdout + out.stderr
    check_artifacts_agree(tmp_path / "ws", rounds=2)
    assert "final re-test" in out.stdout and "summary:" in out.stdout


def test_run_rejects_a_directory_that_is_neither_task_nor_workspace(tmp_path):
    out = kt("run", str(tmp_path), "--headless", "--device", "cpu")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "neither a task directory" in out.stderr and "Traceback" not in out.stderr


class RecordingReplay(ReplayProposer):
    def __init__(self, directory):
        super().__init__(directory)
        self.feedbacks = []

    def feedback(self, feedback):
        self.feedbacks.append(feedback)


class Scripted:
    """A person: rejects round 1 with a reason, edits round 2 into block size 512."""

    def __init__(self):
        self.seen: list[PendingProposal] = []

    def decide(self, pending, cancel):
        self.seen.append(pending)
        if pending.round == 1:
            return Decision(action="reject", reason="too big a jump, try 512 first")
        return Decision(action="edit", source=pending.best_source.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512"),
                        reason="512 instead", person=ProposerInfo(kind="person", name="Ada", email="ada@example.org"))


def test_person_rejects_with_a_reason_and_edits_in_place(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    proposer = RecordingReplay(CANDIDATES / "vector_add")
    person = Scripted()
    events = []
    ev = Evaluator(ws.task, device="cpu", workdir=ws.root / ".work")
    session = Session(ws, ev, proposer, person, max_steps=2, cancel=threading.Event(), on_event=events.append)
    first = session.step()
    assert first.status == "rejected_by_person" and first.reason == "too big a jump, try 512 first"
    assert proposer.feedbacks[0].rejected_by_person and proposer.feedbacks[0].reason == first.reason
    assert "BLOCK_SIZE = 1024" in person.seen[0].diff and "-BLOCK_SIZE = 256" in person.seen[0].diff

    second = session.step()
    edit = ws.repo.commit("refs/candidates/0002")
    assert edit.author.name == "Ada" and edit.parents[0].author.name.startswith("kernel-tui")
    assert second.commit == edit.hexsha and second.status == "ok" and second.proposer.kind == "person"
    assert "BLOCK_SIZE = 512" in ws.source_at(edit)
    # the record says what was evaluated (512), then what the proposer had proposed
    assert second.change == f"edited: BLOCK_SIZE: 256 -> 512 (proposed: {person.seen[1].change})"
    assert edit.message.splitlines()[0].startswith(second.change)
    assert proposer.feedbacks[1].edited_source and "BLOCK_SIZE = 512" in proposer.feedbacks[1].edited_source
    assert session.step() is None  # budget of 2 spent
    kinds = [e.kind for e in events]
    assert kinds.count("verdict") == 2 and "progress" in kinds and "proposal" in kinds
    assert json.loads((ws.root / "session.json").read_text())["proposer"]["next"] == 2


class Rejects:
    """A person who rejects everything: rounds are judged without spending an evaluation."""

    def decide(self, pending, cancel):
        return Decision(action="reject", reason="not now")


def test_a_committed_unjudged_round_is_judged_on_resume_even_with_a_smaller_budget(tmp_path):
    from kernel_tui.core.history import all_proposals

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    proposer = ReplayProposer(CANDIDATES / "vector_add")
    ev = Evaluator(ws.task, device="cpu", workdir=ws.root / ".work")
    first = Session(ws, ev, proposer, Rejects(), max_steps=3).step()
    assert first is not None and first.round == 1
    # a stop right after round 2 was committed: it has no verdict yet
    proposal = proposer.propose(ProposerContext(round=2, best_source=ws.best_source,
                                                baseline_source=ws.task.baseline_source, history=ws.trajectory()))
    commit = ws.commit_proposal(2, proposal.source, proposal.change, proposal.proposer)
    shown = {v.round: v for v in all_proposals(ws)}
    assert shown[2].status == "pending" and shown[2].commit == commit.hexsha

    resumed = Session(ws, ev, ReplayProposer(CANDIDATES / "vector_add"), Rejects(), max_steps=1)
    assert resumed.remaining == 0
    line = resumed.step()
    assert line is not None and line.round == 2 and line.commit == commit.hexsha
    assert ws.pending() == [] and resumed.step() is None
    assert [v.status for v in all_proposals(ws)] == ["rejected_by_person", "rejected_by_person"]


def test_the_budget_line_says_max_steps_is_a_total_and_how_to_ask_for_more():
    from kernel_tui.core.run_control import budget_note

    assert budget_note(4, 0, None, None) == "budget: 4 rounds in total for this workspace, 0 run, 4 to go"
    cut = budget_note(1, 2, 4, 1)  # resumed with --max-steps 1 after 2 of 4 rounds
    assert cut.startswith("budget: 1 rounds in total for this workspace, 2 run, 0 to go")
    assert "replaced the budget of 4" in cut and "--max-steps 2+K" in cut and "\n" not in cut
    assert "replaced" not in budget_note(4, 2, 4, 4)
