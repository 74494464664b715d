"""The git-backed workspace, without evaluating anything."""

from __future__ import annotations

import json

import git
import pytest

from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.workspace import Workspace, WorkspaceBusy, WorkspaceError
from tests.conftest import FIXTURES

MODEL = ProposerInfo(kind="llm", name="agent", model="acme/coder-1")
ADA = ProposerInfo(kind="person", name="Ada Lovelace", email="ada@example.org")


@pytest.fixture
def ws(tmp_path):
    return Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")


def line(ws, round_no, commit, accepted, status="ok"):
    return TrajectoryLine(round=round_no, change=f"change {round_no}", proposer=MODEL, commit=commit.hexsha,
                          status=status, reason="because", accepted=accepted, latency=1e-5, improvement=0.02)


def test_create_copies_task_and_commits_baseline(ws, tmp_path):
    for f in ("task.json", "reference.py", "baseline.py", "kernel.py", "best.py"):
        assert (ws.root / f).exists()
    assert ws.best.hexsha == ws.baseline.hexsha
    assert ws.best_source == (FIXTURES / "vector_add" / "baseline.py").read_text()
    assert ws.repo.active_branch.name == "best"
    assert ws.next_round() == 1
    with pytest.raises(WorkspaceError, match="not empty"):
        Workspace.create(FIXTURES / "vector_add", path=ws.root)


def test_default_workspace_name(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", parent=tmp_path)
    assert ws.root.parent == tmp_path and ws.root.name.startswith("vector_add-")


def test_proposal_commit_has_explicit_author_trailers_and_ref(ws):
    c = ws.commit_proposal(1, "# new source\n", "block 256 → 1024", MODEL)
    assert c.author.name == "acme/coder-1" and c.committer.name == "kernel-tui"
    assert c.parents[0].hexsha == ws.baseline.hexsha
    change, trailers = ws.proposal_info(c)
    assert change == "block 256 → 1024"
    assert trailers == {"Round": "1", "Proposer": "llm:agent", "Model": "acme/coder-1"}
    assert ws.repo.commit("refs/candidates/0001") == c
    assert ws.best.hexsha == ws.baseline.hexsha  # committed, not yet accepted
    assert [r for r, _ in ws.pending()] == [1]


def test_verdict_goes_to_trajectory_and_git_notes_and_best_fast_forwards(ws):
    c = ws.commit_proposal(1, "# faster\n", "faster", MODEL)
    ws.record_verdict(line(ws, 1, c, accepted=True))
    ws.accept(c)
    assert ws.best == c and (ws.root / "best.py").read_text() == "# faster\n"
    assert ws.note_for(c)["accepted"] is True
    assert ws.trajectory()[0].commit == c.hexsha and ws.pending() == []
    notes = ws.repo.git.notes("--ref", "refs/notes/verdicts", "show", c.hexsha)
    assert json.loads(notes)["improvement"] == 0.02


def test_accept_refuses_to_rewrite_history(ws):
    a = ws.commit_proposal(1, "# a\n", "a", MODEL)
    b = ws.commit_proposal(2, "# b\n", "b", MODEL)  # also on top of the baseline
    ws.accept(a)
    with pytest.raises(WorkspaceError, match="refusing to rewrite history"):
        ws.accept(b)
    assert ws.best == a


def test_edit_is_a_new_commit_by_the_person_on_top_of_the_proposal(ws):
    c = ws.commit_proposal(1, "# proposal\n", "try this", MODEL)
    e = ws.commit_edit(1, "# edited\n", c, ADA, "fixed the mask")
    assert e.parents[0] == c and e.author.name == "Ada Lovelace" and e.author.email == "ada@example.org"
    assert ws.repo.commit("refs/candidates/0001") == e
    assert "Edited-by: Ada Lovelace" in e.message


def test_restore_adds_a_commit_and_keeps_history(ws):
    c = ws.commit_proposal(1, "# faster\n", "faster", MODEL)
    ws.accept(c)
    before = [x.hexsha for x in ws.repo.iter_commits("best")]
    r = ws.restore(ws.baseline.hexsha, ADA)
    after = [x.hexsha for x in ws.repo.iter_commits("best")]
    assert after[1:] == before and after[0] == r.hexsha
    assert ws.best_source == ws.source_at(ws.baseline) and r.author.name == "Ada Lovelace"


def test_corrupt_trajectory_line_is_one_clear_error_and_nothing_changes(ws):
    c = ws.commit_proposal(1, "# a\n", "a", MODEL)
    ws.record_verdict(line(ws, 1, c, accepted=False))
    path = ws.root / "trajectory.jsonl"
    path.write_text(path.read_text() + '{"round": "x"}\n' + path.read_text())
    before = path.read_bytes()
    with pytest.raises(WorkspaceError, match=r"trajectory.jsonl: line 2 is corrupt"):
        ws.trajectory()
    assert path.read_bytes() == before


def test_torn_last_line_is_kept_aside_and_the_rest_reads(ws):
    c = ws.commit_proposal(1, "# a\n", "a", MODEL)
    ws.record_verdict(line(ws, 1, c, accepted=False))
    path = ws.root / "trajectory.jsonl"
    with open(path, "a") as f:
        f.write('{"round": 2, "chan')  # killed mid-append
    assert [ln.round for ln in ws.trajectory()] == [1]
    torn = list(ws.root.glob("trajectory.jsonl.torn-*"))
    assert len(torn) == 1 and torn[0].read_text() == '{"round": 2, "chan'


def test_reconcile_finishes_an_interrupted_accept(ws):
    c = ws.commit_proposal(1, "# faster\n", "faster", MODEL)
    ws.record_verdict(line(ws, 1, c, accepted=True))  # killed before best moved
    assert ws.best != c
    repaired = ws.reconcile()
    assert ws.best == c and any("best moved" in r for r in repaired)


def test_second_process_is_refused_with_a_clear_message(ws):
    ws.lock()
    other = Workspace.open(ws.root)
    with pytest.raises(WorkspaceBusy, match=r"in use by another kernel-tui process \(pid \d+\)"):
        other.lock()
    ws.unlock()
    other.lock()
    other.unlock()


def test_open_rejects_what_is_not_a_workspace(tmp_path):
    with pytest.raises(WorkspaceError, match="no such directory"):
        Workspace.open(tmp_path / "nope")
    with pytest.raises(WorkspaceError, match="not a kernel-tui workspace"):
        Workspace.open(FIXTURES / "vector_add")
    git.Repo.init(tmp_path / "plain")
    with pytest.raises(WorkspaceError, match="not a kernel-tui workspace"):
        Workspace.open(tmp_path / "plain")
