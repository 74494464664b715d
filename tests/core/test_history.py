"""The history, the best version and the run summary after accepts, edits and restores: git-backed
workspaces built from records, no evaluation is run."""

from __future__ import annotations

import json
import threading

import pytest

from kernel_tui.core import session as session_module
from kernel_tui.core.compare import Comparison
from kernel_tui.core.history import accepted_versions, all_proposals
from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.records import ProposerInfo
from kernel_tui.core.report import load_records, write_report
from kernel_tui.core.session import Session
from kernel_tui.core.workspace import Workspace
from tests.support.workspaces import ADA, CANDIDATES, fixed_git_dates, fixed_workspace, line

SEARCH = ProposerInfo(kind="search", name="built-in search")


class StubEvaluator:
    """What Session needs of an evaluator to finalize, without worker processes."""

    device = "cpu"
    cancel = None
    on_progress = None


@pytest.fixture
def fake_compare(monkeypatch):
    """The final re-test, replaced by a fixed comparison; records which best it was asked to measure."""
    measured: list[str] = []

    def compare(evaluator, incumbent, candidate, runs=5, **kw):
        measured.append(candidate)
        return Comparison(status="ok", reason="S = 1.200x", device="cpu", speedup=1.2, median_paired_improvement=0.15)

    monkeypatch.setattr(session_module, "compare", compare)
    return measured


def finalize(ws: Workspace, cancel: threading.Event | None = None):
    session = Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), cancel=cancel)  # type: ignore[arg-type]
    return session.finalize("test")


def with_round_5(ws: Workspace) -> str:
    """A fifth round accepted on top of round 1: the best moves on, so round 1 can be restored."""
    with fixed_git_dates():
        source = ws.best_source + "\n# round 5\n"
        c5 = ws.commit_proposal(5, source, "Round five", SEARCH)
        ws.record_verdict(line(5, c5.hexsha, "Round five", "ok", True, SEARCH, reason="accepted: +8%",
                               latency=1.5e-3, incumbent_latency=1.64e-3, improvement=0.08, incumbent_commit=ws.best.hexsha))
        ws.accept(c5)
    return c5.hexsha


def report_text(ws: Workspace) -> str:
    write_report(ws.root)
    return (ws.root / "report.md").read_text()


def round_commit(ws: Workspace, round_no: int) -> str:
    return next(ln.commit for ln in ws.trajectory() if ln.round == round_no)


# --- item: a restored version is the current best ----------------------------------------------------

def test_summary_after_a_restore_names_the_restored_round_and_its_latency(tmp_path, fake_compare):
    ws = fixed_workspace(tmp_path / "ws")
    with_round_5(ws)
    c1 = round_commit(ws, 1)
    ws.restore(c1, ADA)
    summary = finalize(ws)
    assert summary.best_commit == ws.best.hexsha
    assert summary.best_round == 1 and summary.best_latency == pytest.approx(1.64e-3)
    assert summary.best_restored_from == c1
    saved = json.loads((ws.root / "run_summary.json").read_text())
    assert saved["best_round"] == 1 and saved["best_restored_from"] == c1


def test_report_after_a_restore_names_the_restored_version(tmp_path, fake_compare):
    ws = fixed_workspace(tmp_path / "ws")
    with_round_5(ws)
    c1 = round_commit(ws, 1)
    ws.restore(c1, ADA)
    finalize(ws)
    md = report_text(ws)
    assert "nothing accepted" not in md
    assert f"Best version: round 1, **restored** from `{c1[:12]}`" in md
    assert "latency 1.64 ms (from round 1's recorded evaluation)" in md
    assert "stale" not in md.lower()


# --- item: the report describes the workspace as it is now ---------------------------------------------

def test_report_recomputes_a_stale_summary_and_marks_the_old_retest(tmp_path, fake_compare):
    ws = fixed_workspace(tmp_path / "ws")
    finalize(ws)  # the summary and re-test describe round 1 as the best, after 4 rounds
    old_best = ws.best.hexsha
    c5 = with_round_5(ws)
    md = report_text(ws)
    assert "- Rounds: 5, accepted: 2" in md
    assert f"Best version: round 5, commit `{c5[:12]}`, latency 1.50 ms" in md
    assert f"**run_summary.json is stale**: written when the best was `{old_best[:12]}`; written after 4 round(s), " \
           "5 judged now" in md
    assert f"**Stale:** this re-test measured the best of its time, `{old_best[:12]}` (round 1), not the current " \
           f"best `{c5[:12]}`" in md
    assert "The final re-test is stale" in md


def test_report_after_a_cli_restore_recomputes_the_best(tmp_path, fake_compare):
    from kernel_tui.cli import entry as cli

    ws = fixed_workspace(tmp_path / "ws")
    c5 = with_round_5(ws)
    finalize(ws)
    c1 = round_commit(ws, 1)
    assert cli.main(["restore", str(ws.root), c1[:10], "--name", "Ada", "--email", "ada@example.org"]) == 0
    records = load_records(ws.root)
    assert records.best is not None and records.best.restored_from == c1
    md = report_text(ws)
    assert f"written when the best was `{c5[:12]}`" in md
    assert f"`{c5[:12]}` (round 5), not the current best" in md


# --- item: drafts, proposers and restores in the history -------------------------------------------------

def with_edited_round_5(ws: Workspace) -> tuple[str, str]:
    """Round 5: the search proposes, a person edits, the edit is judged and accepted. (draft, edit)"""
    with fixed_git_dates():
        draft = ws.commit_proposal(5, ws.best_source + "\n# draft\n", "Round five", SEARCH)
        edit = ws.commit_edit(5, ws.best_source + "\n# edited\n", draft, ADA, "tidied")
        ws.record_verdict(line(5, edit.hexsha, "Round five (edited: tidied)", "ok", True, ADA, reason="accepted: +8%",
                               latency=1.5e-3, incumbent_latency=1.64e-3, improvement=0.08, incumbent_commit=ws.best.hexsha))
        ws.accept(edit)
    return draft.hexsha, edit.hexsha


def test_an_edited_proposals_draft_is_a_draft_not_a_restore(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    draft, edit = with_edited_round_5(ws)
    lineage = {v.commit: v for v in accepted_versions(ws)}
    assert lineage[draft].status == "draft" and lineage[draft].latency is None
    assert lineage[edit].status == "accepted"


def test_the_proposer_of_a_version_is_the_same_in_both_views(tmp_path):
    ws = fixed_workspace(tmp_path / "ws")
    _, edit = with_edited_round_5(ws)
    lineage = {v.commit: v.proposer for v in accepted_versions(ws)}
    every = {v.commit: v.proposer for v in all_proposals(ws)}
    assert lineage[edit] == every[edit] == "person:Ada Lovelace"
    assert all(lineage[c] == every[c] for c in lineage.keys() & every.keys())


def test_a_restored_version_keeps_its_latency_in_the_history(tmp_path, capsys):
    from kernel_tui.cli import entry as cli

    ws = fixed_workspace(tmp_path / "ws")
    with_round_5(ws)
    ws.restore(round_commit(ws, 1), ADA)
    capsys.readouterr()
    assert cli.main(["history", str(ws.root), "--json"]) == 0
    newest = json.loads(capsys.readouterr().out)[0]
    assert newest["status"] == "restored" and newest["latency"] == pytest.approx(1.64e-3)
    assert newest["round"] == 1


def test_restoring_an_unevaluated_draft_needs_force_and_warns(tmp_path, capsys):
    from kernel_tui.cli import entry as cli

    ws = fixed_workspace(tmp_path / "ws")
    draft, edit = with_edited_round_5(ws)
    args = ["restore", str(ws.root), draft[:10], "--name", "Ada", "--email", "ada@example.org"]
    assert cli.main(args) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "warning" in err and "unevaluated draft" in err and "--force" in err
    assert Workspace.open(ws.root).best.hexsha == edit
    assert cli.main([*args, "--force"]) == 0
    assert "unevaluated draft" in capsys.readouterr().err
    assert Workspace.open(ws.root).best.hexsha != edit


def test_restoring_an_evaluated_version_asks_without_a_warning(tmp_path, capsys):
    from kernel_tui.cli import entry as cli

    ws = fixed_workspace(tmp_path / "ws")
    with_round_5(ws)
    assert cli.main(["restore", str(ws.root), round_commit(ws, 1)[:10], "--name", "Ada", "--email", "a@b.c"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_restore_question_on_the_screen_warns_for_an_unmeasured_version():
    from kernel_tui.tui.screens.history import restore_question
    from kernel_tui.tui.view import NA, VersionRow

    def row(latency: str, status: str) -> VersionRow:
        return VersionRow(commit="a" * 40, parent=None, round=5, proposer="search:x", change="Round five",
                          latency=latency, vs_previous=NA, vs_baseline=NA, status=status, reason="")

    assert "never measured (unevaluated draft)" in restore_question(row(NA, "unevaluated draft"))
    assert "never measured" not in restore_question(row("1.64 ms", "accepted"))


# --- item: one vocabulary for verdicts ------------------------------------------------------------------

def test_a_gate_rejection_is_never_shown_as_ok(tmp_path, fake_compare, capsys):
    from kernel_tui.cli import entry as cli
    from kernel_tui.tui.present import history, rows

    ws = fixed_workspace(tmp_path / "ws")  # round 2 was measured ("ok") and rejected by the gate
    summary = finalize(ws)
    assert summary.statuses == {"accepted": 1, "rejected_by_gate": 1, "rejected_by_person": 1, "incorrect": 1}
    assert {v.round: v.status for v in all_proposals(ws)}[2] == "rejected_by_gate"
    assert rows(ws.trajectory())[1].status == "rejected by the gate"
    assert {r.round: r.status for r in history(ws).proposals}[3] == "rejected by the person"
    capsys.readouterr()
    cli.main(["history", str(ws.root), "--all"])
    out = capsys.readouterr().out
    assert "rejected by the gate" in out and " ok " not in out and "rejected_by_person" not in out
    md = report_text(ws)
    assert "- Verdicts: accepted: 1, rejected by the gate: 1, rejected by the person: 1, incorrect: 1" in md
    assert "| ok |" not in md and "rejected_by_person" not in md


# --- item: quitting during the final comparison ------------------------------------------------------------

def test_a_final_comparison_cut_short_is_not_dereferenced(tmp_path, fake_compare):
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.options import RunOptions

    ws = fixed_workspace(tmp_path / "ws")
    cancel = threading.Event()
    session = Session(ws, StubEvaluator(), ReplayProposer(CANDIDATES), cancel=cancel)  # type: ignore[arg-type]
    cancel.set()  # as a quit does, while the re-test runs
    posted: list = []
    controller = Controller(RunOptions(target=None), posted.append)
    from kernel_tui.core.run_control import RunControl

    controller.ws, controller.session, controller.control = ws, session, RunControl(cancel=cancel)
    controller.ready.set()
    controller.finalize()  # raised AttributeError on the None summary
    assert any("stopped before it finished" in getattr(m, "text", "") for m in posted)
    assert not (ws.root / "run_summary.json").exists()


# --- item: every figure says what it compares ----------------------------------------------------------------

def test_history_and_report_say_what_each_percentage_compares(tmp_path, capsys):
    from kernel_tui.cli import entry as cli

    ws = fixed_workspace(tmp_path / "ws")
    capsys.readouterr()
    cli.main(["history", str(ws.root), "--all"])
    out = capsys.readouterr().out
    assert "vs prev" not in out and "gate vs inc." in out and "lat. vs base" in out
    assert "against the incumbent the round was judged against" in out
    md = report_text(ws)
    assert "| gate vs inc. [CI] |" in md and "| incumbent latency |" in md
    assert "against the incumbent the round was judged against" in md


def test_a_re_test_over_several_shapes_summarises_their_weighted_s(tmp_path, monkeypatch):
    """The run's summary and its warning quote the S the gate's verdict stood on (all its shapes), not the
    main shape's 1.3x, which would hide the loss at the second."""
    monkeypatch.setattr(session_module, "compare", lambda *a, **k: Comparison(
        status="ok", reason="S = 0.872x weighted", device="cuda", speedup=1.3, median_paired_improvement=0.2,
        shape_speedups={"main": 1.3, "half": 0.4}, shape_weights={"main": 1.0, "half": 0.5}, weighted_speedup=0.872))
    ws = fixed_workspace(tmp_path / "ws")
    summary = finalize(ws)
    assert summary.final_speedup == pytest.approx(0.872)
    assert summary.final_shape_speedups == {"main": 1.3, "half": 0.4}
    status = json.loads((ws.root / "agent-status.json").read_text())
    assert any("slower than the baseline (S = 0.872 weighted over its shapes (main 1.3x, half 0.4x))" in w
               for w in status["warnings"])
