"""The accepted lineage (first-parent `git log best`) and every proposal, from git and the records."""

from __future__ import annotations

import git
from pydantic import BaseModel, ConfigDict

from kernel_tui.core import metrics
from kernel_tui.core.format import percent
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.verdicts import PENDING, REJECTED_BY_GATE, label, verdict_category
from kernel_tui.core.workspace import AFTER_ROUND, CHOSEN_START, RESTORED_FROM, Workspace, WorkspaceError

# STARTED: a restore of a correct Triton version the gate did not find faster than the PyTorch starting
# point, made the starting point by the person's choice (start_from)
BASELINE, RESTORED, STARTED, DRAFT = "baseline", "restored", "started", "draft"


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


VERSION_LABELS = {BASELINE: "baseline", RESTORED: "restored", STARTED: "chosen start", DRAFT: "unevaluated draft"}


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
    if v.status == STARTED:
        return f"{name}, chosen start"
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
    kind = (STARTED if CHOSEN_START in trailers else RESTORED) if restored else None
    if source.hexsha == ws.baseline.hexsha:
        latency, status = base, (kind or BASELINE)
    elif line is not None:
        latency, status = line.latency, (kind or verdict_category(line))
    else:  # e.g. the proposer's draft under a person's edit: on the lineage, never judged itself
        latency, status = None, DRAFT
    if restored:
        reason = _restore_words(ws, commit, trailers, line)
    else:
        reason = line.reason if line else ""
    return Version(
        commit=commit.hexsha, round=line.round if line else (int(round_text) if round_text.isdigit() else None),
        proposer=_proposer(line, trailers, commit), change=change, latency=latency,
        vs_previous=None if restored or line is None else line.improvement, vs_baseline=_ratio(latency, base),
        status=status, reason=reason, restored_from=source.hexsha if restored else None,
    )


def _restore_words(ws: Workspace, commit: git.Commit, trailers: dict[str, str], line: TrajectoryLine | None) -> str:
    """What a restore commit did, in words: a chosen start's note, or "restored by Ada after round 5; …"."""
    if CHOSEN_START in trailers and line is not None:
        return chosen_start_note(ws, line)
    after = trailers.get(AFTER_ROUND, "")
    when = f" after round {after}" if after.isdigit() and int(after) > 0 else ""
    judged = f"; it was {label(verdict_category(line))} when judged" if line is not None else ""
    return f"restored by {commit.author.name}{when}{judged}"


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


# --- restores and a chosen start ------------------------------------------------------------------------

class Restore(BaseModel):
    """A restore on the accepted lineage: a person made an earlier version the incumbent again (a new commit
    on best). No verdict changes; later rounds are judged against it."""

    model_config = ConfigDict(frozen=True)
    commit: str  # the restore's own commit on best
    restored_from: str  # the version it copies
    round: int | None  # that version's round (None: the baseline)
    after_round: int | None  # the last round judged when it was made (None: not recorded, an older restore)
    by: str
    time: str
    chosen_start: bool  # a correct Triton version made the starting point by the person's choice
    verdict: str  # how the copied version was judged, in words ("rejected by the gate", "baseline", …)
    latency: float | None  # the copied version's recorded latency
    note: str  # what it was, in one line (the history's reason column, the report's list)


def restores(ws: Workspace) -> list[Restore]:
    """Every restore on best's first-parent lineage, oldest first."""
    verdicts, base, found = _verdicts(ws), baseline_latency(ws), []
    for commit in ws.repo.iter_commits("best", first_parent=True):
        trailers = ws.proposal_info(commit)[1]
        if RESTORED_FROM not in trailers:
            continue
        v = _describe(ws, commit, verdicts, base)
        copied = _describe(ws, origin(ws, commit), verdicts, base)
        after = trailers.get(AFTER_ROUND, "")
        found.append(Restore(
            commit=commit.hexsha, restored_from=copied.commit, round=v.round or None,
            after_round=int(after) if after.isdigit() else None, by=commit.author.name or "",
            time=commit.authored_datetime.isoformat(timespec="seconds"), chosen_start=v.status == STARTED,
            verdict=version_status(copied), latency=v.latency, note=v.reason,
        ))
    return found[::-1]


def chosen_start_note(ws: Workspace, line: TrajectoryLine) -> str:
    """What a chosen start is, said wherever it shows: the person's choice, and the gate's estimate."""
    against = "PyTorch eager" if _judged_against_start(ws, line) else "its incumbent"
    gate = f" ({percent(line.improvement, digits=1)})" if line.improvement is not None else ""
    return f"started from round {line.round} by the person's choice, not faster than {against} by the gate{gate}"


def _judged_against_start(ws: Workspace, line: TrajectoryLine) -> bool:
    """Whether the round was judged against the task's PyTorch starting point."""
    if not ws.task.baseline_is_pytorch:
        return False
    try:
        incumbent = ws.source_at(line.incumbent_commit) if line.incumbent_commit else ws.task.baseline_source
    except (ValueError, git.BadName, WorkspaceError):
        return False
    return incumbent == ws.task.baseline_source


def start_refusal(ws: Workspace, rev: str, verdicts: dict[str, TrajectoryLine] | None = None) -> str | None:
    """Why the version at `rev` cannot be made the starting point (start_from), or None when it can: a task
    that starts from PyTorch eager whose best is still that, and a round that passed correctness."""
    if not ws.task.baseline_is_pytorch:
        return "the task starts from a Triton baseline, which the search starts from (r restores a version)"
    if not ws.best_is_pytorch_start:
        return "best is already a Triton version, which the search starts from (r restores this one instead)"
    source = origin(ws, ws.repo.commit(rev))
    if source.hexsha == ws.baseline.hexsha or ws.source_at(source) == ws.task.baseline_source:
        return "this is the PyTorch starting point itself: pick a Triton version that passed correctness (v lists every round)"
    line = (verdicts if verdicts is not None else _verdicts(ws)).get(source.hexsha)
    if line is None:
        return f"{source.hexsha[:8]} was never judged: only a version that passed correctness can be the start"
    if line.accepted:
        return f"round {line.round} was accepted by the gate: r restores it as the incumbent"
    if verdict_category(line) != REJECTED_BY_GATE:
        return (f"round {line.round} is {label(verdict_category(line))}: only a version that passed correctness "
                "can be the start")
    return None


def start_candidates(ws: Workspace) -> list[TrajectoryLine]:
    """The rounds a person may start from now (start_refusal), newest first."""
    if not (ws.task.baseline_is_pytorch and ws.best_is_pytorch_start):
        return []
    lines = ws.trajectory()
    verdicts = {ln.commit: ln for ln in lines}  # a commit judged twice: its latest verdict
    return [ln for ln in reversed(lines) if verdicts[ln.commit] is ln and start_refusal(ws, ln.commit, verdicts) is None]


def start_from(ws: Workspace, rev: str, person: ProposerInfo) -> git.Commit:
    """Make a correct Triton version the starting point by the person's choice, without a gate verdict
    against PyTorch eager (on the CPU interpreter a Triton kernel cannot beat eager, and the built-in search
    starts only from Triton): a restore commit on best by the person, whose message says so."""
    why = start_refusal(ws, rev)
    if why is not None:
        raise WorkspaceError(f"cannot start from {rev[:8]}: {why}")
    source = origin(ws, ws.repo.commit(rev))
    line = _verdicts(ws)[source.hexsha]
    note = chosen_start_note(ws, line)
    return ws.restore(source.hexsha, person, subject=f"Start from round {line.round} by the person's choice",
                      body=note[:1].upper() + note[1:] + ".", trailers={CHOSEN_START: f"round {line.round}"})


def restore_version(ws: Workspace, rev: str, person: ProposerInfo) -> git.Commit:
    """Restore a version as the incumbent (Workspace.restore), its message naming what it was."""
    source = origin(ws, ws.repo.commit(rev))  # a restore of a restore copies the same version
    v = version_at(ws, source.hexsha)
    which = "the baseline" if v.status == BASELINE else f"round {v.round}" if v.round is not None else "version"
    status = "" if v.status == BASELINE else f", {version_status(v)}"
    return ws.restore(source.hexsha, person, subject=f"Restore {which} ({source.hexsha[:8]}{status}) as incumbent")
