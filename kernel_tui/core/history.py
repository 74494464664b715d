"""The accepted lineage (first-parent `git log best`) and every proposal, from git and the records."""

from __future__ import annotations

import git
from pydantic import BaseModel, ConfigDict

from kernel_tui.core import metrics
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.verdicts import PENDING, label, verdict_category
from kernel_tui.core.workspace import Workspace

BASELINE, RESTORED, DRAFT = "baseline", "restored", "draft"


class Version(BaseModel):
    model_config = ConfigDict(frozen=True)
    commit: str
    round: int | None
    proposer: str  # "kind:name", the same in the lineage and in every proposal
    change: str
    latency: float | None
    vs_previous: float | None  # the gate's paired estimate against the incumbent it was judged against
    vs_baseline: float | None  # 1 - latency / baseline latency
    status: str = "accepted"  # a verdict category, or baseline / restored / draft (committed, never evaluated)
    reason: str = ""
    restored_from: str | None = None  # the evaluated version a restore copied


VERSION_LABELS = {BASELINE: "baseline", RESTORED: "restored", DRAFT: "unevaluated draft"}


# What the two percentages compare: kept apart because they measure different things.
GATE_HEADING, BASE_HEADING = "gate vs inc.", "lat. vs base"
FIGURES_LEGEND = ("gate vs inc. = the gate's paired estimate against the incumbent the round was judged against "
                  "(not today's best); lat. vs base = 1 - latency / baseline latency")


def version_status(v: Version) -> str:
    """Words for people: a verdict category's label, or what a lineage entry without its own verdict is."""
    return VERSION_LABELS.get(v.status) or label(v.status)


def version_label(v: Version) -> str:
    """Which version it is: "baseline", "round 3", "round 3, restored from 1a2b3c4d"."""
    name = "baseline" if v.round in (None, 0) and v.status in (BASELINE, RESTORED) else f"round {v.round if v.round is not None else '?'}"
    return f"{name}, restored from {v.restored_from[:8]}" if v.restored_from else name


def unmeasured(v: Version) -> str:
    """Why a version has no measured latency ("" when it has one): restoring it needs a warning."""
    if v.latency is not None:
        return ""
    if v.status == DRAFT:
        return "it is an unevaluated draft (committed, never evaluated itself)"
    return f"it was never measured ({version_status(v)})"


def baseline_latency(ws: Workspace) -> float | None:
    return metrics.baseline_latency(ws.read_json("baseline-evaluation.json"))


def _verdicts(ws: Workspace) -> dict[str, TrajectoryLine]:
    """The verdict of each judged commit (the latest, should a commit have been judged twice)."""
    return {ln.commit: ln for ln in ws.trajectory()}


def origin(ws: Workspace, commit: git.Commit) -> git.Commit:
    """The version a commit carries: a restore is a copy, so it is its (first) non-restore ancestor's."""
    seen = set()
    while commit.hexsha not in seen:
        seen.add(commit.hexsha)
        source = ws.proposal_info(commit)[1].get("Restored-from")
        if not source:
            return commit
        commit = ws.repo.commit(source)
    return commit


def _ratio(latency: float | None, base: float | None) -> float | None:
    return (1 - latency / base) if latency and base else None


def _describe(ws: Workspace, commit: git.Commit, verdicts: dict[str, TrajectoryLine], base: float | None) -> Version:
    """One version on the lineage, with the measurements of the evaluation it carries."""
    change, trailers = ws.proposal_info(commit)
    source = origin(ws, commit)
    line = verdicts.get(source.hexsha)
    round_text = ws.proposal_info(source)[1].get("Round", "")
    restored = source.hexsha != commit.hexsha
    if source.hexsha == ws.baseline.hexsha:
        latency, status = base, (RESTORED if restored else BASELINE)
    elif line is not None:
        latency, status = line.latency, (RESTORED if restored else verdict_category(line))
    else:  # e.g. the proposer's draft under a person's edit: on the lineage, never judged itself
        latency, status = None, DRAFT
    return Version(
        commit=commit.hexsha, round=line.round if line else (int(round_text) if round_text.isdigit() else None),
        proposer=_proposer(line, trailers, commit), change=change, latency=latency,
        vs_previous=None if restored or line is None else line.improvement, vs_baseline=_ratio(latency, base),
        status=status, reason=line.reason if line and not restored else "", restored_from=source.hexsha if restored else None,
    )


def _by(line: TrajectoryLine) -> str:
    return f"{line.proposer.kind}:{line.proposer.name}"


def _proposer(line: TrajectoryLine | None, trailers: dict[str, str], commit: git.Commit) -> str:
    # The verdict names who the judged version is by (a person, after an edit); the commit's trailer,
    # written in the same "kind:name" form, names who proposed a version never judged.
    # (GitPython types Actor.name as optional; a parsed commit's author always has a str name)
    return _by(line) if line is not None else trailers.get("Proposer", commit.author.name or "")


def accepted_versions(ws: Workspace) -> list[Version]:
    """Newest first, as `git log best --first-parent`."""
    base, verdicts = baseline_latency(ws), _verdicts(ws)
    return [_describe(ws, c, verdicts, base) for c in ws.repo.iter_commits("best", first_parent=True)]


def current_best(ws: Workspace) -> Version:
    """The incumbent as it is now (after accepts and restores), with the measurements it carries."""
    return _describe(ws, ws.best, _verdicts(ws), baseline_latency(ws))


def version_at(ws: Workspace, rev: str) -> Version:
    """Any version by commit or ref, described as on the lineage."""
    return _describe(ws, ws.repo.commit(rev), _verdicts(ws), baseline_latency(ws))


def all_proposals(ws: Workspace) -> list[Version]:
    """Every judged round, then any round committed but not yet judged (shown as pending)."""
    base = baseline_latency(ws)
    judged = [
        Version(
            commit=ln.commit, round=ln.round, proposer=_by(ln), change=ln.change,
            latency=ln.latency, vs_previous=ln.improvement, vs_baseline=_ratio(ln.latency, base),
            status=verdict_category(ln), reason=ln.reason,
        )
        for ln in ws.trajectory()
    ]
    pending = []
    for round_no, commit in ws.pending():
        change, trailers = ws.proposal_info(commit)
        pending.append(Version(
            commit=commit.hexsha, round=round_no, proposer=_proposer(None, trailers, commit),
            change=change, latency=None, vs_previous=None, vs_baseline=None, status=PENDING,
            reason="committed, not judged yet: judged when the run resumes",
        ))
    return judged + pending
