"""Core records -> display state (view.py). Runs in thread workers only: it imports the core and git."""

from __future__ import annotations

import difflib

from kernel_tui.core import metrics
from kernel_tui.core.decision import PendingProposal
from kernel_tui.core.describe import describe_edit
from kernel_tui.core.evaluator.labels import INTERPRETER_LABEL
from kernel_tui.core.format import percent, percents
from kernel_tui.core.history import (
    accepted_versions,
    all_proposals,
    baseline_latency,
    chosen_start_note,
    current_best,
    origin,
    restores,
    start_candidates,
    start_refusal,
    version_label,
    version_status,
)
from kernel_tui.core.profile.compare import compare_profiles, summary_lines
from kernel_tui.core.profile.store import stored as stored_profile
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.report import accepted_record, status_counts
from kernel_tui.core.verdicts import label, verdict_category
from kernel_tui.core.workspace import Workspace
from kernel_tui.tui.view import (
    NA,
    BestView,
    ChartData,
    HistoryData,
    PendingView,
    ProfileView,
    StatusView,
    VerdictRow,
    VersionDetail,
    VersionRow,
    fmt_latency,
    fmt_memory,
    fmt_pct,
)


def proposer_label(p: ProposerInfo) -> str:
    return p.name + (f" ({p.model})" if p.model else "") + f" [{p.kind}]"


def unified(old: str, new: str, old_label: str, new_label: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=old_label, tofile=new_label))


# --- the best version --------------------------------------------------------------------------------

def roofline(ws: Workspace, device: str, latency: float | None) -> str:
    """The latency's share of the task's roofline (metrics.Roof) and what bounds it, or why there is none."""
    if device == "cpu":
        return "roofline n/a on the CPU interpreter"
    roof = metrics.roof(ws.task.spec, ws.read_json("hardware.json"))
    place = roof.place(latency)
    if place is None:
        return f"roofline n/a ({roof.why or 'no latency yet'})"
    return f"{percent(place.fraction, digits=1, signed=False)} of roofline, {place.words}"


def best_view(ws: Workspace, device: str) -> BestView:
    best = current_best(ws)
    label = version_label(best)
    if label == "baseline" and ws.task.spec.baseline.label:  # what the start is, where it is the best
        label = f"baseline: {ws.task.spec.baseline.label}"
    return BestView(commit=best.commit, label=label, latency=fmt_latency(best.latency),
                    roofline=roofline(ws, device, best.latency), source=ws.source_at(best.commit))


# --- verdicts, charts, status line ---------------------------------------------------------------------

def verdict_word(ln: TrajectoryLine) -> str:
    return label(verdict_category(ln))


def rows(lines: list[TrajectoryLine]) -> tuple[VerdictRow, ...]:
    out = []
    for ln in lines:
        ci = f"[{', '.join(percents(ln.ci_low, ln.ci_high))}]" if ln.ci_low is not None and ln.ci_high is not None else NA
        out.append(VerdictRow(
            round=ln.round, change=ln.change, proposer=proposer_label(ln.proposer), status=verdict_word(ln),
            accepted=ln.accepted, latency=fmt_latency(ln.latency), improvement=fmt_pct(ln.improvement), ci=ci,
            p=f"{ln.p_value:.3g}" if ln.p_value is not None else NA, reason=" ".join(ln.reason.split()),
            memory=fmt_memory(ln.peak_memory_bytes), kernels=tuple(k.summary() for k in ln.kernels),
            incumbent_latency=fmt_latency(ln.incumbent_latency),
        ))
    return tuple(out)


def charts(ws: Workspace, lines: list[TrajectoryLine], device: str) -> ChartData:
    ordered = sorted(lines, key=lambda ln: ln.round)
    _, record = accepted_record(ordered, restores(ws))
    return ChartData(
        rounds=tuple(ln.round for ln in ordered), latencies=tuple(ln.latency for ln in ordered),
        accepted=tuple(ln.accepted for ln in ordered), record=tuple(record),
        improvements=tuple(ln.improvement for ln in ordered),
        threshold=ws.task.spec.optimization.min_improvement_fraction, baseline=baseline_latency(ws),
        statuses=tuple((label(k), n) for k, n in status_counts(ordered).items()), interpreter=device == "cpu",
    )


def device_label(ws: Workspace, device: str) -> str:
    if device == "cpu":
        return INTERPRETER_LABEL
    env = ws.read_json("environment.json") or {}
    return str(env.get("device_name") or "GPU (cuda)")


def status_view(ws: Workspace, device: str, info: ProposerInfo, used: int, total: int, **kw) -> StatusView:
    preflight = ws.read_json("preflight.json") or {}
    return StatusView(device=device_label(ws, device), proposer=f"{info.name} [{info.kind}]",
                      model=info.model or NA, used=used, total=total,
                      not_confined=str(preflight.get("not_confined") or ""), **kw)


# --- the candidate pane --------------------------------------------------------------------------------

AFTER_RESTORE = "the run is paused — n runs one round, space resumes"
SPENT_AFTER_RESTORE = "the budget is spent — c runs the final comparison against it, p writes the report"


def idle_hint(ws: Workspace, info: ProposerInfo, why: str, budget_spent: bool) -> str:
    """The candidate pane when nothing is proposed: why, and what the person can do, in one line."""
    if budget_spent:
        return ("nothing proposed: the budget is spent — c runs the final comparison, p writes the report (more "
                "rounds: reopen with a larger --max-steps)")
    if info.kind == "search" and ws.best_is_pytorch_start:
        starts = start_candidates(ws)
        if starts:
            r = starts[0].round
            return (f"nothing proposed: the search starts from a Triton version — round {r} is one (correct, not "
                    f"faster than eager): h, v, select round {r}, b starts from it · or w writes one")
        return ("nothing proposed: the search starts from a Triton version — w writes one (once judged correct, b "
                "in the history starts from it), or import with --baseline FILE")
    return f"nothing proposed: {why} — w writes your own · c final comparison · p report"


def restored_words(ws: Workspace, commit: str, rounds_left: bool = True) -> tuple[str, str, str]:
    """A restore just made, in words: (the log line, the notification, the candidate pane's line)."""
    done = next((r for r in reversed(restores(ws)) if r.commit == commit), None)
    short, then = commit[:8], AFTER_RESTORE if rounds_left else SPENT_AFTER_RESTORE
    if done is None:  # not on best's lineage: cannot happen right after a restore; said plainly all the same
        return f"best is now {short}; {then}", f"best is now {short}", f"best is now {short}; {then}"
    which = f"round {done.round}" if done.round is not None else \
        "the baseline" if done.verdict == "baseline" else done.restored_from[:8]
    if done.chosen_start:
        return (f"{done.note}: best is now {short} (a new commit by you; nothing rewritten); {then}"
                + (" (the search starts from it)" if rounds_left else ""),
                f"best is now {short}: {which}, your chosen start; {then}",
                f"best is now {which}, your chosen start (not faster than eager by the gate); {then}")
    return (f"restored {which} ({done.restored_from[:8]}, {done.verdict} when judged) as the incumbent: best is now "
            f"{short}, a new commit (history kept); later rounds are judged against it; {then}",
            f"best is now {short}: {which} restored; {then}",
            f"best is now {which}, restored ({done.verdict} when judged); {then}")


def pending_view(p: PendingProposal, state: str, *, waiting: bool = True) -> PendingView:
    return PendingView(round=p.round, commit=p.commit, change=p.change, proposer=proposer_label(p.proposer),
                       diff=p.diff or "(identical to best)\n", source=p.source, state=state, waiting=waiting,
                       queue=p.queue)


def edited_view(p: PendingProposal, source: str) -> PendingView:
    diff = unified(p.best_source, source, f"best ({p.best_commit[:8]})", f"round {p.round}, your edit")
    return PendingView(round=p.round, commit=p.commit, change=describe_edit(p.best_source, source, p.change),
                       proposer=proposer_label(p.proposer), diff=diff or "(identical to best)\n", source=source, edited=True,
                       state="your edit, not sent yet — a: evaluate it as your revision · e/E: edit again · r: reject")


# --- history -------------------------------------------------------------------------------------------

def peaks(ws: Workspace) -> dict[tuple[str, int | None], int | None]:
    """Peak device memory by (judged commit, round), the baseline's under (baseline, None).

    A Version does not carry it: it is looked up from the verdicts by the commit and round a version
    reports, the round keeping apart a commit judged twice."""
    out: dict[tuple[str, int | None], int | None] = {(ln.commit, ln.round): ln.peak_memory_bytes for ln in ws.trajectory()}
    data = ws.read_json("baseline-evaluation.json")
    peak = data.get("peak_memory_bytes") if isinstance(data, dict) else None
    out[(ws.baseline.hexsha, None)] = peak if isinstance(peak, int) and not isinstance(peak, bool) else None
    return out


def history(ws: Workspace) -> HistoryData:
    def parent(commit: str) -> str | None:
        c = ws.repo.commit(commit)
        return c.parents[0].hexsha if c.parents else None

    peak = peaks(ws)
    verdicts = {ln.commit: ln for ln in ws.trajectory()}

    def start(commit: str) -> tuple[bool, str]:
        why = start_refusal(ws, commit, verdicts)
        if why is not None:
            return False, why
        return True, chosen_start_note(ws, verdicts[origin(ws, ws.repo.commit(commit)).hexsha])

    def row(v) -> VersionRow:
        # a restore carries the measurements of the version it copied; the baseline has no round
        source = v.restored_from or v.commit
        memory = peak.get((source, None if source == ws.baseline.hexsha else v.round))
        startable, note = start(v.commit)
        return VersionRow(commit=v.commit, parent=parent(v.commit), round=v.round, proposer=v.proposer,
                          change=v.change, latency=fmt_latency(v.latency), vs_previous=fmt_pct(v.vs_previous),
                          vs_baseline=fmt_pct(v.vs_baseline), status=version_status(v), reason=" ".join(v.reason.split()),
                          memory=fmt_memory(memory), startable=startable, start_note=note)

    return HistoryData(lineage=tuple(row(v) for v in accepted_versions(ws)),
                       proposals=tuple(row(v) for v in all_proposals(ws)),
                       baseline=ws.baseline.hexsha, best=ws.best.hexsha)


def detail(ws: Workspace, commit: str, against: str | None, label: str) -> VersionDetail:
    source = ws.source_at(commit)
    profile = tuple(profile_comparison(ws, commit, against))
    if against is None:
        return VersionDetail(commit=commit, source=source, diff="(no earlier version)\n", against=label, profile=profile)
    if against == commit:
        return VersionDetail(commit=commit, source=source, diff=f"(this is the {label} itself)\n", against=label,
                             profile=profile)
    diff = unified(ws.source_at(against), source, f"{label}", f"{commit[:8]}")
    return VersionDetail(commit=commit, source=source, diff=diff or "(identical)\n", against=label, profile=profile)


def profile_comparison(ws: Workspace, commit: str, against: str | None) -> list[str]:
    """The version's profile headline and, when the other version was profiled too, what changed."""
    mine = stored_profile(ws, commit)
    if mine is None:
        return []
    lines = [mine.headline()]
    if not against or against == commit or mine.profile is None:  # nothing to compare it with
        return lines
    other = stored_profile(ws, against)
    if other is None or other.profile is None:
        lines.append(f"against {against[:8]}: not compared, " + ("it was not profiled" if other is None
                                                                 else f"it has no profile ({other.reason})"))
    else:
        changes = compare_profiles(other.profile, mine.profile)
        lines.append(f"against {against[:8]}: " + ("; ".join(changes) if changes else "no change that matters"))
    return lines


def profile_view(ws: Workspace, commit: str, against: str | None, off: str | None = None) -> ProfileView:
    """What the profile screen shows of one version: its profile, each kernel, and the comparison; `off`:
    why this session cannot profile (then r would do nothing, and the screen says why)."""
    record = stored_profile(ws, commit)
    title = f"profile of {commit[:8]}"
    if record is None and off is not None:
        return ProfileView(commit=commit, title=title, profiled=False, lines=(f"not profiled: {off}",), off=off)
    if record is None:
        return ProfileView(commit=commit, title=title, profiled=False, lines=(
            "not profiled yet — r profiles it now: one call at the benchmark shape under Nsight Compute (~10 s "
            "on a GPU; rounds pause meanwhile)",))
    if record.profile is None:
        again = f"no profile can be taken here: {off}" if off is not None else "r tries again"
        return ProfileView(commit=commit, title=title, profiled=False, lines=(f"no profile: {record.reason}", again),
                           off=off)
    p = record.profile
    lines = [f"{record.headline()} · {record.device_name or 'GPU'} · taken {record.created}", "", *summary_lines(p)]
    if len(p.kernels) > 1:
        lines += ["", "kernels:"] + [f"  {k.name}: {fmt_latency(k.duration_s)}" for k in p.kernels]
    lines += ["", *profile_comparison(ws, commit, against)[1:]]
    return ProfileView(commit=commit, title=f"{title} at shape {record.shape}", profiled=True, lines=tuple(lines),
                       off=off)


# --- the picker ----------------------------------------------------------------------------------------

