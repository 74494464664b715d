"""The run report: report.md and three PNG figures, made from one workspace's own records only.

Nothing here may fail on a partial workspace: an interrupted run still gets a report, which says which
records are missing or unreadable. Three quantities are kept apart everywhere, as the method requires:
each candidate's own latency, the accepted version's latency (the record, which changes only on an
accept) and the gate's paired improvement estimate. matplotlib is imported lazily with the Agg backend.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from kernel_tui.core.compare import Comparison
from kernel_tui.core.errors import KernelTuiError, TaskError
from kernel_tui.core.records import AgentStatus, Preflight, RunSummary, TrajectoryLine
from kernel_tui.core.task import TaskSpec, load_spec
from kernel_tui.core.verdicts import (
    ACCEPTED,
    REJECTED_BY_GATE,
    REJECTED_BY_PERSON,
    counts,
    label,
    run_status_label,
    verdict_category,
)

if TYPE_CHECKING:
    from kernel_tui.core.history import Version

__all__ = [
    "FIGURES",
    "ReportError",
    "RunRecords",
    "accepted_record",
    "format_latency",
    "is_interpreter",
    "load_records",
    "render_markdown",
    "status_counts",
    "write_report",
]

FIGURES = ("rounds_overview.png", "process_timeline.png", "status_breakdown.png")
REJECTED = REJECTED_BY_GATE
# What each record is, said when it is missing.
RECORD_FILES = {
    "task.json": "the task spec (name, shape, cost model, threshold)",
    "trajectory.jsonl": "the verdicts, one per round",
    "run_summary.json": "the run summary (written when the run ends)",
    "agent-status.json": "the run status (complete / incomplete)",
    "final-comparison.json": "the final re-test of the best version against the baseline",
    "environment.json": "the software and device environment",
    "hardware.json": "the hardware figures (bandwidth) used for % of roofline",
    "preflight.json": "the preflight check of reference and baseline",
    "baseline-evaluation.json": "the baseline's own evaluation",
}


class ReportError(KernelTuiError):
    """A report that cannot be written at all (no such workspace directory)."""


@dataclass(frozen=True)
class RunRecords:
    """Everything a workspace holds, read leniently: what is absent or broken is listed, never raised."""

    workspace: Path
    spec: TaskSpec | None = None
    lines: list[TrajectoryLine] = field(default_factory=list)  # sorted by round, file order kept on ties
    skipped_lines: list[str] = field(default_factory=list)  # "line 3: invalid JSON ..."
    summary: RunSummary | None = None
    agent: AgentStatus | None = None
    comparison: Comparison | None = None
    preflight: Preflight | None = None
    environment: dict[str, Any] | None = None
    hardware: dict[str, Any] | None = None
    baseline_eval: dict[str, Any] | None = None
    missing: list[str] = field(default_factory=list)  # file names
    problems: list[str] = field(default_factory=list)  # "run_summary.json: ..." for unreadable files
    best: Version | None = None  # the best version now, from git (None: no readable git history)

    @property
    def summary_best_is_current(self) -> bool:
        """Whether run_summary.json (and the final re-test written with it) is about today's best."""
        return self.summary is None or self.best is None or self.summary.best_commit == self.best.commit

    @property
    def task_name(self) -> str:
        if self.spec is not None:
            return self.spec.name
        return self.summary.task if self.summary is not None else self.workspace.name

    @property
    def timing_labels(self) -> list[str]:
        found = [ln.timing_label for ln in self.lines]
        found += [r.timing_label for r in (self.summary, self.comparison) if r is not None]
        return list(dict.fromkeys(lab for lab in found if lab))

    @property
    def timing_warnings(self) -> list[str]:
        """What the baseline's timing worker could not do as designed (same machine, same torch as every round)."""
        timing = (self.baseline_eval or {}).get("timing")
        found = timing.get("warnings") if isinstance(timing, dict) else None
        return [str(w) for w in found] if isinstance(found, list) else []

    @property
    def device(self) -> str:
        for candidate in (self.summary and self.summary.device, (self.environment or {}).get("device"),
                          self.comparison and self.comparison.device, self.lines and self.lines[-1].device):
            if candidate:
                return str(candidate)
        return ""

    @property
    def interpreter(self) -> bool:
        return is_interpreter(self.device, *self.timing_labels)

    @property
    def min_improvement(self) -> float | None:
        return self.spec.optimization.min_improvement_fraction if self.spec is not None else None

    def baseline_latency(self) -> tuple[float | None, str]:
        """The baseline's latency and where it came from."""
        if self.summary is not None and self.summary.baseline_latency is not None:
            return self.summary.baseline_latency, "run_summary.json"
        seconds = _baseline_eval_seconds(self.baseline_eval or {})
        if seconds is not None:
            return seconds, "baseline-evaluation.json"
        first = next((ln for ln in self.lines if ln.incumbent_latency is not None), None)
        if first is not None and not any(ln.accepted for ln in self.lines if ln.round < first.round):
            return first.incumbent_latency, f"incumbent latency measured in round {first.round}"
        return None, ""


def _baseline_eval_seconds(data: dict[str, Any]) -> float | None:
    """The baseline's median from its evaluation: a worker result's timing block (baseline vs itself)."""
    timing = data.get("timing") if isinstance(data.get("timing"), dict) else {}
    samples = [v for v in timing.get("candidate") or [] if isinstance(v, (int, float)) and v > 0]
    if samples:
        return float(statistics.median(samples))
    seconds = data.get("candidate_seconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _read_json(path: Path, problems: list[str], missing: list[str]) -> Any:
    if not path.exists():
        missing.append(path.name)
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return None


def _model(cls: type[BaseModel], data: Any, name: str, problems: list[str]) -> Any:
    if data is None:
        return None
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        problems.append(f"{name}: does not match {cls.__name__} (field {where}: {err['msg']})")
        return None


def _dict(data: Any, name: str, problems: list[str]) -> dict[str, Any] | None:
    if data is None or isinstance(data, dict):
        return data
    problems.append(f"{name}: expected a JSON object, found {type(data).__name__}")
    return None


def _read_trajectory(path: Path, missing: list[str], problems: list[str]) -> tuple[list[TrajectoryLine], list[str]]:
    if not path.exists():
        missing.append(path.name)
        return [], []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return [], []
    lines: list[TrajectoryLine] = []
    skipped: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            lines.append(TrajectoryLine.model_validate_json(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            what = "invalid JSON" if err["type"] == "json_invalid" else f"field {where or '(top level)'}"
            skipped.append(f"line {number}: {what}: {err['msg']}")
    lines.sort(key=lambda ln: ln.round)  # stable: file order kept within a round
    return lines, skipped


def load_records(workspace: Path) -> RunRecords:
    """Read every record of a workspace; never raises for missing or corrupt files."""
    ws = Path(workspace)
    missing: list[str] = []
    problems: list[str] = []
    spec = None
    if (ws / "task.json").exists():
        try:
            spec = load_spec(ws / "task.json")
        except TaskError as exc:
            problems.append(f"task.json: {exc}")
    else:
        missing.append("task.json")
    lines, skipped = _read_trajectory(ws / "trajectory.jsonl", missing, problems)

    def read(name: str) -> Any:
        return _read_json(ws / name, problems, missing)

    return RunRecords(
        workspace=ws, spec=spec, lines=lines, skipped_lines=skipped,
        summary=_model(RunSummary, read("run_summary.json"), "run_summary.json", problems),
        agent=_model(AgentStatus, read("agent-status.json"), "agent-status.json", problems),
        comparison=_model(Comparison, read("final-comparison.json"), "final-comparison.json", problems),
        environment=_dict(read("environment.json"), "environment.json", problems),
        hardware=_dict(read("hardware.json"), "hardware.json", problems),
        preflight=_model(Preflight, read("preflight.json"), "preflight.json", problems),
        baseline_eval=_dict(read("baseline-evaluation.json"), "baseline-evaluation.json", problems),
        missing=missing, problems=problems, best=_current_best(ws, problems),
    )


def _current_best(workspace: Path, problems: list[str]) -> Version | None:
    """The best version as git has it now: accepts and restores made after run_summary.json count."""
    from kernel_tui.core.history import current_best
    from kernel_tui.core.workspace import Workspace

    if not Workspace.is_workspace(workspace):
        return None
    try:
        return current_best(Workspace.open(workspace))
    except Exception as exc:  # a damaged repository is reported, and the summary used instead
        problems.append(f"git history: unreadable ({type(exc).__name__}: {exc})")
        return None


# --------------------------------------------------------------------------------------------
# Pure helpers (the figures and the text share them)
# --------------------------------------------------------------------------------------------


def is_interpreter(device: str, *timing_labels: str) -> bool:
    """True when timings come from Triton's CPU interpreter, not from a GPU."""
    return device.strip().lower() == "cpu" or any("interpreter" in lab.lower() for lab in timing_labels)


def accepted_record(lines: Sequence[TrajectoryLine]) -> tuple[list[int], list[float]]:
    """The accepted version's latency after each verdict, in the given order: (rounds, seconds).

    NaN before the first accept; afterwards it changes only on an accept, and is NaN (a gap in the line)
    while the accepted version's latency is unknown.
    """
    current = math.nan
    rounds: list[int] = []
    values: list[float] = []
    for line in lines:
        if line.accepted:
            current = float(line.latency) if line.latency is not None else math.nan
        rounds.append(line.round)
        values.append(current)
    return rounds, values


category = verdict_category
status_counts = counts


def x_positions(lines: Sequence[TrajectoryLine]) -> list[float]:
    """x = round; verdicts sharing a round are spread a little so that none hides another."""
    by_round: dict[int, int] = {}
    for line in lines:
        by_round[line.round] = by_round.get(line.round, 0) + 1
    seen: dict[int, int] = {}
    xs = []
    for line in lines:
        n, i = by_round[line.round], seen.get(line.round, 0)
        seen[line.round] = i + 1
        xs.append(line.round + (0.0 if n == 1 else -0.3 + 0.6 * i / (n - 1)))
    return xs


def format_latency(seconds: float | None) -> str:
    """µs, or ms from 1 ms on."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    value, unit = (seconds * 1e3, "ms") if seconds >= 1e-3 else (seconds * 1e6, "µs")
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {unit}"


def _pct(fraction: float | None) -> str:
    return "—" if fraction is None or not math.isfinite(fraction) else f"{fraction:+.2%}"


def _cell(text: Any, limit: int = 0) -> str:
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if not limit or len(s) <= limit else s[: limit - 1] + "…"


def _parse_time(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def _roofline(records: RunRecords) -> tuple[float | None, float | None, str]:
    """(bytes per call, bandwidth bytes/s, why not) for % of roofline = bytes / latency / bandwidth."""
    if records.interpreter:
        return None, None, "CPU interpreter timings: no roofline applies"
    bw = (records.hardware or {}).get("copy_bandwidth_bytes_per_s")
    if not isinstance(bw, (int, float)) or bw <= 0:
        return None, None, "no measured bandwidth in hardware.json"
    if records.spec is None:
        return None, None, "no task spec, so no cost-model bytes"
    try:
        nbytes = records.spec.benchmark_bytes()
    except Exception as exc:  # a cost model that cannot be evaluated is reported, not raised
        return None, None, f"cost model bytes cannot be evaluated ({exc})"
    if nbytes <= 0:
        return None, None, "the cost model gives no bytes"
    return nbytes, float(bw), ""


def _roof_pct(latency: float | None, nbytes: float | None, bw: float | None) -> str:
    if latency is None or nbytes is None or bw is None or latency <= 0:
        return "—"
    return f"{100 * nbytes / latency / bw:.1f}%"


# --------------------------------------------------------------------------------------------
# report.md
# --------------------------------------------------------------------------------------------

INTERPRETER_BANNER = ("> **⚠ CPU INTERPRETER — THESE TIMINGS ARE NOT GPU TIMINGS.** Every latency, improvement and "
                      "speedup below was measured on Triton's CPU interpreter at a small shape. They show the "
                      "pipeline ran; they say nothing about performance on a GPU.")


def _section_missing(r: RunRecords) -> list[str]:
    if not (r.missing or r.problems or r.skipped_lines):
        return []
    out = ["## Missing or unreadable records", ""]
    out += [f"- **missing** `{name}`: {RECORD_FILES.get(name, '')}" for name in r.missing]
    out += [f"- **unreadable** {_cell(p)}" for p in r.problems]
    if r.skipped_lines:
        out.append(f"- **skipped {len(r.skipped_lines)} corrupt line(s)** in `trajectory.jsonl`:")
        out += [f"  - {_cell(s, 200)}" for s in r.skipped_lines]
    return out + [""]


def _section_task(r: RunRecords, roof: tuple[float | None, float | None, str]) -> list[str]:
    out = ["## Task and baseline", ""]
    if r.spec is None:
        out += [f"- Task: **{r.task_name}** (no readable task.json: shape, cost model and threshold unknown)"]
    else:
        s = r.spec
        shape = ", ".join(f"{k}={v}" for k, v in s.shape.items())
        out += [f"- Task: **{s.name}**", f"- Description: {_cell(s.description) or '—'}", f"- Shape: {shape}"]
        try:
            flops, nbytes = s.cost_at(s.shape)
            label = f" ({_cell(s.cost_model.label)})" if s.cost_model.label else ""
            out.append(f"- Cost model at this shape: {flops:.4g} FLOP, {nbytes:.4g} bytes per call{label}")
        except Exception as exc:  # reported, not raised
            out.append(f"- Cost model: cannot be evaluated ({_cell(exc)})")
        if r.interpreter:
            t = s.timing_shape("cpu")
            out.append(f"- Timed on the CPU interpreter at shape `{t.name}` "
                       f"({', '.join(f'{k}={v}' for k, v in t.dims.items())}), not at the shape above")
        out.append(f"- Accept threshold: min improvement {s.optimization.min_improvement_fraction:.1%}")
    latency, source = r.baseline_latency()
    nbytes, bw, why = roof
    if latency is not None:
        roof_text = f", {_roof_pct(latency, nbytes, bw)} of roofline" if nbytes else ""
        out.append(f"- Baseline latency: {format_latency(latency)}{roof_text} (from {source})")
    else:
        out.append("- Baseline latency: unknown")
    if r.baseline_eval is not None:
        out.append(f"- Baseline evaluation: {r.baseline_eval.get('status', '?')}: "
                   f"{_cell(r.baseline_eval.get('reason', ''), 160)}")
    if r.summary is not None:
        out.append(f"- Baseline commit: `{r.summary.baseline_commit[:12]}`")
    if not nbytes:
        out.append(f"- % of roofline: not given ({why})")
    return out + [""]


def _section_environment(r: RunRecords) -> list[str]:
    out = ["## Environment", ""]
    env = r.environment
    if env is None and r.comparison is not None and r.comparison.environment is not None:
        env = r.comparison.environment.model_dump()
        out.append("(environment.json missing; taken from the final comparison)")
    if env:
        out += [f"- {k}: {_cell(v if isinstance(v, (str, int, float)) else json.dumps(v), 160)}"
                for k, v in env.items()]
    else:
        out.append("- environment: not recorded")
    hw = r.hardware or {}
    bw = hw.get("copy_bandwidth_bytes_per_s")
    if isinstance(bw, (int, float)):
        out.append(f"- measured copy bandwidth: {bw / 1e9:.1f} GB/s")
    for key in ("statement", "error"):
        if hw.get(key):
            out.append(f"- hardware: {_cell(hw[key], 200)}")
    for label in r.timing_labels:
        out.append(f"- timing: {_cell(label)}")
    out += [f"- timing warning: {_cell(w)}" for w in r.timing_warnings]
    if r.preflight is not None:
        p = r.preflight
        out.append(f"- preflight: **{p.status}** on {p.device} (reference: {_cell(p.reference, 100)}; "
                   f"baseline: {_cell(p.baseline, 100)})")
        out.append(f"- {_cell(p.sandbox, 400)}" if p.sandbox else "- sandbox: not recorded (an older preflight)")
    return out + [""]


def _section_status(r: RunRecords) -> list[str]:
    out = ["## Run status", ""]
    if r.agent is not None:
        out.append(f"- Status: **{run_status_label(r.agent.status)}** ({r.agent.time})")
        if r.agent.missing:
            out.append(f"- Missing: {_cell(r.agent.missing)}")
        out += [f"- Warning: {_cell(w)}" for w in r.agent.warnings]
    else:
        out.append("- Status: unknown (no agent-status.json)")
    s = r.summary
    # Counts come from trajectory.jsonl and the best from git: both move after run_summary.json is written.
    stopped = f"; stopped because: {_cell(s.stopped_because)}" if s is not None else ""
    out.append(f"- Rounds: {len(r.lines)}, accepted: {sum(ln.accepted for ln in r.lines)}{stopped}")
    out.append(f"- Best version: {_best_text(r)} (baseline {format_latency(r.baseline_latency()[0])})")
    stale = _summary_staleness(r)
    if stale:
        out.append(f"- **run_summary.json is stale**: {stale}; the figures above are recomputed from "
                   "trajectory.jsonl and git")
    if s is None:
        out.append(f"- No run_summary.json; {len(r.lines)} verdict(s) in trajectory.jsonl")
    by = status_counts(r.lines)
    if by:
        out.append("- Verdicts: " + ", ".join(f"{label(k)}: {v}" for k, v in by.items()))
    return out + [""]


def _best_text(r: RunRecords) -> str:
    """The best version now: which one, its commit, and its latency from its own recorded evaluation."""
    b = r.best
    if b is None:  # no git history to read: the summary is all there is
        s = r.summary
        if s is None:
            return "unknown (no git history and no run summary)"
        which = f"round {s.best_round}" if s.best_round is not None else "the baseline (nothing accepted)"
        return f"{which}, commit `{s.best_commit[:12]}`, latency {format_latency(s.best_latency)}"
    if b.restored_from:
        origin = f"round {b.round}" if b.round else "the baseline"
        return (f"{origin}, **restored** from `{b.restored_from[:12]}` as commit `{b.commit[:12]}`, latency "
                f"{format_latency(b.latency)} (from {origin}'s recorded evaluation)")
    if not b.round:
        return f"the baseline (nothing accepted), commit `{b.commit[:12]}`, latency {format_latency(b.latency)}"
    return (f"round {b.round}, commit `{b.commit[:12]}`, latency {format_latency(b.latency)} "
            f"(from round {b.round}'s recorded evaluation)")


def _summary_staleness(r: RunRecords) -> str:
    """Why run_summary.json no longer describes the workspace, or "" when it still does."""
    s = r.summary
    if s is None:
        return ""
    why = []
    if not r.summary_best_is_current:
        why.append(f"written when the best was `{s.best_commit[:12]}`")
    if s.rounds != len(r.lines):
        why.append(f"written after {s.rounds} round(s), {len(r.lines)} judged now")
    return "; ".join(why)


def _section_attempts(r: RunRecords, roof: tuple[float | None, float | None, str], cap: int = 60) -> list[str]:
    out = ["## Key attempts", ""]
    if not r.lines:
        return out + ["No verdicts yet.", ""]
    nbytes, bw, _ = roof
    shown = r.lines
    if len(shown) > cap:  # every accept, then the latest of the others
        others = [ln for ln in r.lines if not ln.accepted]
        keep = {id(ln) for ln in r.lines if ln.accepted} | {id(ln) for ln in others[len(others) - cap:]}
        shown = [ln for ln in r.lines if id(ln) in keep]
    roof_head, roof_sep = (" % roofline |", "---|") if nbytes else ("", "")
    out += ["`gate vs inc.` is the gate's paired estimate against the incumbent the round was judged against "
            "(its latency in `incumbent latency`), not against today's best or the baseline.", "",
            f"| round | change | proposer | verdict | latency | incumbent latency |{roof_head} "
            f"gate vs inc. [CI] | p | reason |",
            f"|---|---|---|---|---|---|{roof_sep}---|---|---|"]
    for ln in shown:
        prop = ln.proposer.name + (f" ({ln.proposer.model})" if ln.proposer.model else "") + f" [{ln.proposer.kind}]"
        verdict = f"**{label(ACCEPTED)}**" if ln.accepted else label(category(ln))
        ci = f" [{_pct(ln.ci_low)}, {_pct(ln.ci_high)}]" if ln.ci_low is not None and ln.ci_high is not None else ""
        p = f"{ln.p_value:.3g}" if ln.p_value is not None else "—"
        roof_cell = f" {_roof_pct(ln.latency, nbytes, bw)} |" if nbytes else ""
        out.append(f"| {ln.round} | {_cell(ln.change, 60)} | {_cell(prop, 40)} | {verdict} | "
                   f"{format_latency(ln.latency)} | {format_latency(ln.incumbent_latency)} |{roof_cell} "
                   f"{_pct(ln.improvement)}{ci} | {p} | {_cell(ln.reason, 120)} |")
    if len(shown) < len(r.lines):
        out.append(f"\n{len(r.lines) - len(shown)} more verdict(s) in trajectory.jsonl.")
    return out + [""]


def _section_retest(r: RunRecords, roof: tuple[float | None, float | None, str]) -> list[str]:
    out = ["## Final re-test", ""]
    c = r.comparison
    if c is None:
        return out + ["No final re-test was recorded (final-comparison.json is missing or unreadable).", ""]
    if r.summary is not None:
        out.append(f"Best version `{r.summary.best_commit[:12]}` against the baseline "
                   f"`{r.summary.baseline_commit[:12]}`, each run a fresh process.\n")
    if not r.summary_best_is_current:
        out.append(f"**Stale:** {_retest_staleness(r)}\n")
    out.append(f"- Status: {c.status.value}: {_cell(c.reason, 200)}")
    out.append(f"- Speedup **S = {c.speedup:.3f}×**" if c.speedup is not None else "- Speedup S: not measured")
    out.append("  (median of the baseline's per-run medians / median of the candidate's)")
    out.append(f"- Median paired improvement: **{_pct(c.median_paired_improvement)}** "
               "(median across runs of each run's median paired improvement)")
    if c.runs:
        inc = statistics.median(s.incumbent_median for s in c.runs)
        cand = statistics.median(s.candidate_median for s in c.runs)
        nbytes, bw, _ = roof
        parts = [f"{who} {format_latency(v)}" + (f" ({_roof_pct(v, nbytes, bw)} of roofline)" if nbytes else "")
                 for who, v in (("baseline", inc), ("best version", cand))]
        out.append(f"- Median of run medians: {', '.join(parts)}")
    if c.improvement_range is not None:
        out.append(f"- Spread across runs: {_pct(c.improvement_range[0])} to {_pct(c.improvement_range[1])}")
    if c.launch_overhead_seconds is not None:
        out.append(f"- Host launch overhead (apart from kernel time): {format_latency(c.launch_overhead_seconds)}")
    if c.timing_label:
        out.append(f"- Timing: {_cell(c.timing_label)}")
    if c.runs:
        out += ["", "| run | baseline median | candidate median | median paired improvement | method |",
                "|---|---|---|---|---|"]
        out += [f"| {s.run + 1} | {format_latency(s.incumbent_median)} | {format_latency(s.candidate_median)} | "
                f"{_pct(s.median_paired_improvement)} | {s.method} |" for s in c.runs]
    return out + [""]


def _retest_staleness(r: RunRecords) -> str:
    s, b = r.summary, r.best
    assert s is not None and b is not None
    then = f"round {s.best_round}" if s.best_round is not None else "the baseline"
    return (f"this re-test measured the best of its time, `{s.best_commit[:12]}` ({then}), not the current best "
            f"`{b.commit[:12]}`; its figures do not describe the current best (run the final comparison again).")


def _limits(r: RunRecords, roof: tuple[float | None, float | None, str]) -> list[str]:
    notes = []
    if not r.summary_best_is_current and r.comparison is not None:
        notes.append(f"The final re-test is stale: {_retest_staleness(r)}")
    if r.interpreter:
        notes.append("**Timings are CPU-interpreter timings, NOT GPU timings.** No conclusion about GPU "
                     "performance can be drawn from this run.")
    c = r.comparison
    if c is not None and c.speedup is not None and c.speedup < 1:
        notes.append(f"The final re-test found the best version **slower** than the baseline (S = {c.speedup:.3f}× < 1).")
    if c is not None and c.status.value != "ok":
        notes.append(f"The final re-test did not complete: {c.status.value}.")
    if c is not None and c.speedup is not None and c.median_paired_improvement is not None \
            and (c.speedup > 1) != (c.median_paired_improvement > 0):
        notes.append("S and the median paired improvement disagree in direction: the difference is within noise.")
    failed = [ln for ln in r.lines if category(ln) not in (ACCEPTED, REJECTED_BY_GATE, REJECTED_BY_PERSON)]
    if r.lines:
        by = status_counts(failed)
        detail = f" ({', '.join(f'{label(k)}: {v}' for k, v in by.items())})" if by else ""
        notes.append(f"{len(failed)} of {len(r.lines)} verdicts failed before or during evaluation{detail}.")
    vetoed = sum(category(ln) == REJECTED_BY_PERSON for ln in r.lines)
    if vetoed:
        notes.append(f"{vetoed} candidate(s) were rejected by a person and never evaluated.")
    no_latency = [ln.round for ln in r.lines if ln.accepted and ln.latency is None]
    if no_latency:
        notes.append(f"Accepted round(s) {', '.join(map(str, no_latency))} have no recorded latency (gap in the record line).")
    if r.lines and not any(ln.accepted for ln in r.lines):
        notes.append("Nothing was accepted: the baseline is still the best version.")
    if len(set(r.timing_labels)) > 1:
        notes.append("Verdicts carry different timing labels; their latencies are not comparable with each other.")
    if r.summary is None:
        notes.append("There is no run summary: the run was interrupted or has not finished; this report is partial.")
    if c is None:
        notes.append("There is no final re-test: improvements are the gate's estimates only.")
    if r.agent is not None and r.agent.status != "complete":
        notes.append(f"The run is marked **{run_status_label(r.agent.status)}**.")
    if r.skipped_lines:
        notes.append(f"{len(r.skipped_lines)} corrupt line(s) of trajectory.jsonl were skipped.")
    if r.missing:
        notes.append(f"Missing records: {', '.join(r.missing)}.")
    if not roof[0] and not r.interpreter:
        notes.append(f"No % of roofline: {roof[2]}.")
    return ["## Limits", ""] + [f"- {n}" for n in notes or ["None noted."]] + [""]


def render_markdown(records: RunRecords, figure_notes: Sequence[str] = ()) -> str:
    r = records
    roof = _roofline(r)
    out = [f"# Run report: {r.task_name}", "",
           f"Workspace `{r.workspace}`, written {datetime.now(timezone.utc).isoformat(timespec='seconds')}.", ""]
    if r.interpreter:
        out += [INTERPRETER_BANNER, ""]
    out += _section_missing(r) + _section_task(r, roof) + _section_environment(r) + _section_status(r)
    out += ["## Figures", "",
            "Rounds overview: top, each candidate's own latency (filled star = accepted, open circle = rejected) "
            "and the accepted version's record line, which moves only on an accept; bottom, the gate's paired "
            "improvement per verdict (hatched = accepted) against the task's threshold.", "",
            "![rounds overview](rounds_overview.png)", "",
            "Process timeline: every verdict at its wall time, by outcome.", "",
            "![process timeline](process_timeline.png)", "",
            "Status breakdown: verdicts per outcome, accepted apart from rejected by the gate.", "",
            "![status breakdown](status_breakdown.png)", ""]
    out += [f"- figure problem: {_cell(n)}" for n in figure_notes]
    out += _section_attempts(r, roof) + _section_retest(r, roof) + _limits(r, roof)
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _suptitle(fig, r: RunRecords, what: str) -> float:
    """Title, and the interpreter banner under it; returns the top of the room left for the axes."""
    height = fig.get_figheight()
    fig.text(0.5, 1 - 0.12 / height, f"{r.task_name}: {what}", ha="center", va="top", fontsize=13)
    if not r.interpreter:
        return 1 - 0.5 / height
    fig.text(0.5, 1 - 0.5 / height, "CPU INTERPRETER — timings are not GPU timings", ha="center", va="top",
             color="darkred", fontsize=11, fontweight="bold", bbox=dict(facecolor="#fff0f0", edgecolor="darkred"))
    return 1 - 0.9 / height


def _note_figure(path: Path, r: RunRecords, what: str, note: str) -> None:
    plt = _pyplot()
    fig = plt.figure(figsize=(8, 4))
    _suptitle(fig, r, what)
    fig.text(0.5, 0.45, note, ha="center", va="center", fontsize=14, color="dimgray")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_rounds(path: Path, r: RunRecords) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    lines = r.lines
    xs = x_positions(lines)
    _, record = accepted_record(lines)
    baseline, _ = r.baseline_latency()
    known = [v for v in [ln.latency for ln in lines] + record + [baseline] if v is not None and math.isfinite(v)]
    scale, unit = (1e3, "ms") if known and max(known) >= 1e-3 else (1e6, "µs")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 8), height_ratios=[3, 2])
    room = _suptitle(fig, r, "rounds overview")

    for accepted in (False, True):
        pts = [(x, ln.latency * scale) for x, ln in zip(xs, lines) if ln.latency is not None and ln.accepted == accepted]
        if not pts:
            continue
        px, py = zip(*pts)
        if accepted:
            top.scatter(px, py, marker="*", s=260, color="tab:green", edgecolors="black", zorder=4,
                        label="candidate latency — accepted (filled star)")
        else:
            top.scatter(px, py, marker="o", s=55, facecolors="none", edgecolors="dimgray", linewidths=1.5,
                        zorder=3, label="candidate latency — rejected (open circle)")
    if any(math.isfinite(v) for v in record):
        rx = xs + [max(xs) + 0.5]
        ry = [v * scale for v in record] + [record[-1] * scale]
        top.plot(rx, ry, drawstyle="steps-post", color="tab:blue", lw=2.2, zorder=2,
                 label="accepted version (record: changes only on accept)")
    lost = [x for x, ln in zip(xs, lines) if ln.accepted and ln.latency is None]
    for i, x in enumerate(lost):
        top.axvline(x, color="tab:blue", ls=(0, (2, 3)), lw=1.2,
                    label="accepted, latency not recorded (gap in the record)" if i == 0 else None)
    if baseline is not None:
        top.axhline(baseline * scale, color="gray", ls=":", lw=1.5, label=f"baseline {format_latency(baseline)}")
    if not any(ln.latency is not None for ln in lines):
        top.text(0.5, 0.5, "no verdict has a latency", transform=top.transAxes, ha="center", color="dimgray")
    top.set_ylabel(f"median latency per call ({unit})")
    top.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=8, loc="best")

    imp = [(x, ln) for x, ln in zip(xs, lines) if ln.improvement is not None]
    for x, ln in imp:
        h = ln.improvement * 100
        if ln.accepted:
            bottom.bar(x, h, width=0.6, color="#9fd89f", edgecolor="black", hatch="///", zorder=2)
            tip = max(h, ln.ci_high * 100) if h >= 0 and ln.ci_high is not None else \
                min(h, ln.ci_low * 100) if ln.ci_low is not None else h
            bottom.annotate("accepted", (x, tip), xytext=(0, 4 if h >= 0 else -11), textcoords="offset points",
                            ha="center", fontsize=7, fontweight="bold")
        else:
            bottom.bar(x, h, width=0.6, color="lightgray", edgecolor="dimgray", zorder=2)
        if ln.ci_low is not None and ln.ci_high is not None:
            lo, hi = ln.ci_low * 100, ln.ci_high * 100
            bottom.errorbar(x, h, yerr=[[max(h - lo, 0)], [max(hi - h, 0)]], color="black", capsize=3, lw=1, zorder=3)
    none_x = [x for x, ln in zip(xs, lines) if ln.improvement is None]
    if none_x:
        bottom.scatter(none_x, [0] * len(none_x), marker="x", color="firebrick", zorder=3)
    bottom.axhline(0, color="black", lw=0.8)
    handles = [Patch(facecolor="#9fd89f", edgecolor="black", hatch="///", label="paired improvement — accepted (hatched)"),
               Patch(facecolor="lightgray", edgecolor="dimgray", label="paired improvement — rejected (plain)")]
    if r.min_improvement is not None:
        bottom.axhline(r.min_improvement * 100, color="tab:red", ls="--", lw=1.5)
        handles.append(Line2D([], [], color="tab:red", ls="--", label=f"threshold: min improvement {r.min_improvement:.1%}"))
    if none_x:
        handles.append(Line2D([], [], marker="x", ls="", color="firebrick", label="no estimate (failed or not timed)"))
    bottom.legend(handles=handles, fontsize=8, loc="best")
    if not imp:
        bottom.text(0.5, 0.6, "no verdict has an improvement estimate", transform=bottom.transAxes,
                    ha="center", color="dimgray")
    bottom.set_ylabel("gate's paired improvement (%)\nbars: estimate, whiskers: CI")
    bottom.set_xlabel("round")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.grid(axis="y", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_timeline(path: Path, r: RunRecords) -> None:
    import matplotlib.dates as mdates

    plt = _pyplot()
    timed = [(t, ln) for ln in r.lines if (t := _parse_time(ln.time)) is not None]
    if not timed:
        _note_figure(path, r, "process timeline", "no verdict has a readable time")
        return
    cats = list(status_counts([ln for _, ln in timed]))
    fig, ax = plt.subplots(figsize=(11, max(3.5, 1.2 + 0.55 * len(cats))))
    room = _suptitle(fig, r, "process timeline (verdicts over wall time)")
    styles = {ACCEPTED: dict(marker="*", s=260, color="tab:green", edgecolors="black"),
              REJECTED: dict(marker="o", s=60, facecolors="none", edgecolors="dimgray", linewidths=1.5),
              REJECTED_BY_PERSON: dict(marker="s", s=50, color="#bcd4ec", edgecolors="steelblue")}
    for cat in cats:
        pts = [t for t, ln in timed if category(ln) == cat]
        ax.scatter(pts, [cats.index(cat)] * len(pts), zorder=3, label=label(cat),
                   **styles.get(cat, dict(marker="X", s=60, color="firebrick")))
    times = [t for t, _ in timed]
    span = (max(times) - min(times)).total_seconds()
    middle = min(times) + (max(times) - min(times)) / 2
    for t, ln in timed:
        text = f"r{ln.round} accepted: {_cell(ln.change, 32)}" if ln.accepted else f"r{ln.round}"
        right = t <= middle
        ax.annotate(text, (mdates.date2num(t), cats.index(category(ln))), xytext=(7 if right else -7, 7),
                    textcoords="offset points", ha="left" if right else "right",
                    fontsize=8 if ln.accepted else 7, fontweight="bold" if ln.accepted else "normal")
    if span < 60:
        pad = (60 - span) / 2 / 86400
        ax.set_xlim(mdates.date2num(min(times)) - pad, mdates.date2num(max(times)) + pad)
    ax.set_yticks(range(len(cats)), [label(c) for c in cats])
    ax.set_ylim(-0.7, len(cats) - 0.3)
    ax.invert_yaxis()
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    skipped = len(r.lines) - len(timed)
    ax.set_xlabel(f"wall time (UTC); {len(timed)} verdicts over {span / 60:.1f} min"
                  + (f"; {skipped} without a readable time not shown" if skipped else ""))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


BAR_STYLES = {ACCEPTED: dict(color="#9fd89f", edgecolor="black", hatch="///"),
              REJECTED: dict(color="lightgray", edgecolor="dimgray"),
              REJECTED_BY_PERSON: dict(color="#bcd4ec", edgecolor="steelblue", hatch="..")}


def _plot_statuses(path: Path, r: RunRecords) -> None:
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    by = status_counts(r.lines)
    fig, ax = plt.subplots(figsize=(9, max(3.0, 1.2 + 0.5 * len(by))))
    failed = sum(v for k, v in by.items() if k not in (ACCEPTED, REJECTED))
    room = _suptitle(fig, r, f"{len(r.lines)} verdicts: {by.get(ACCEPTED, 0)} accepted, "
                      f"{by.get(REJECTED, 0)} rejected by the gate, {failed} other")
    names = list(by)
    for i, name in enumerate(names):
        style = BAR_STYLES.get(name, dict(color="#f2b8b8", edgecolor="firebrick"))
        ax.barh(i, by[name], **style)
        ax.text(by[name], i, f" {by[name]}", va="center", fontsize=10, fontweight="bold")
    ax.set_yticks(range(len(names)), [label(n) for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, max(by.values()) * 1.15 + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("verdicts")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 1, room))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def write_report(workspace: Path) -> list[Path]:
    """Write report.md and the three figures into the workspace; returns the written paths."""
    ws = Path(workspace)
    if not ws.is_dir():
        raise ReportError(f"{ws}: no such workspace directory")
    records = load_records(ws)
    plotters = {"rounds_overview.png": (_plot_rounds, "rounds overview"),
                "process_timeline.png": (_plot_timeline, "process timeline"),
                "status_breakdown.png": (_plot_statuses, "status breakdown")}
    written: list[Path] = []
    notes: list[str] = []
    for name in FIGURES:
        plot, what = plotters[name]
        path = ws / name
        try:
            if records.lines:
                plot(path, records)
            else:
                _note_figure(path, records, what, "no verdicts yet")
            written.append(path)
        except Exception as exc:  # a figure must never stop the report; say what went wrong instead
            notes.append(f"{name} could not be drawn: {type(exc).__name__}: {exc}")
            try:
                _pyplot().close("all")
                _note_figure(path, records, what, f"figure failed: {type(exc).__name__}")
                written.append(path)
            except Exception as exc2:  # noqa: BLE001 - nothing more to try
                notes.append(f"{name}: placeholder failed too ({type(exc2).__name__})")
    report = ws / "report.md"
    report.write_text(render_markdown(records, notes), encoding="utf-8")
    return [report, *written]
