"""The accepted lineage (first-parent `git log best`) and every proposal, from git and the records."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.workspace import Workspace


class Version(BaseModel):
    model_config = ConfigDict(frozen=True)
    commit: str
    round: int | None
    proposer: str
    change: str
    latency: float | None
    vs_previous: float | None  # the gate's paired estimate against the version it replaced
    vs_baseline: float | None  # 1 - latency / baseline latency
    status: str = "accepted"
    reason: str = ""


def baseline_latency(ws: Workspace) -> float | None:
    timing = (ws.read_json("baseline-evaluation.json") or {}).get("timing") or {}
    return statistics.median(timing["candidate"]) if timing.get("candidate") else None


def accepted_versions(ws: Workspace) -> list[Version]:
    """Newest first, as `git log best --first-parent`."""
    base = baseline_latency(ws)
    out = []
    for commit in ws.repo.iter_commits("best", first_parent=True):
        change, trailers = ws.proposal_info(commit)
        note = ws.note_for(commit) or {}
        latency = note.get("latency") if note else None
        if commit.hexsha == ws.baseline.hexsha:
            latency = base
        out.append(Version(
            commit=commit.hexsha, round=int(trailers["Round"]) if trailers.get("Round", "").isdigit() else None,
            proposer=trailers.get("Proposer", commit.author.name), change=change, latency=latency,
            vs_previous=note.get("improvement"),
            vs_baseline=(1 - latency / base) if latency and base else None,
            status="baseline" if commit.hexsha == ws.baseline.hexsha else ("accepted" if note else "restored"),
            reason=note.get("reason", ""),
        ))
    return out


def all_proposals(ws: Workspace) -> list[Version]:
    """Every judged round, then any round committed but not yet judged (shown as pending)."""
    base = baseline_latency(ws)
    judged = [
        Version(
            commit=ln.commit, round=ln.round, proposer=f"{ln.proposer.kind}:{ln.proposer.name}", change=ln.change,
            latency=ln.latency, vs_previous=ln.improvement,
            vs_baseline=(1 - ln.latency / base) if ln.latency and base else None,
            status="accepted" if ln.accepted else ("rejected" if ln.status == "ok" else ln.status), reason=ln.reason,
        )
        for ln in ws.trajectory()
    ]
    pending = []
    for round_no, commit in ws.pending():
        change, trailers = ws.proposal_info(commit)
        pending.append(Version(
            commit=commit.hexsha, round=round_no, proposer=trailers.get("Proposer", commit.author.name),
            change=change, latency=None, vs_previous=None, vs_baseline=None, status="pending",
            reason="committed, not judged yet: judged when the run resumes",
        ))
    return judged + pending
