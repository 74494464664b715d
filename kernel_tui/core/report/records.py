"""The run's records: every file of a workspace read leniently into RunRecords, and the figures derived
from them (the baseline's latency and where it came from, the roofline's inputs, the accepted record).

Nothing here may fail on a partial workspace: what is absent or broken is listed, never raised.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from kernel_tui.core import metrics
from kernel_tui.core.compare import Comparison
from kernel_tui.core.errors import TaskError
from kernel_tui.core.profile.store import ProfileRecord
from kernel_tui.core.records import AgentStatus, Preflight, RunSummary, TrajectoryLine
from kernel_tui.core.task import TaskSpec, load_spec
from kernel_tui.core.verdicts import counts, verdict_category

if TYPE_CHECKING:
    from kernel_tui.core.history import Restore, Version

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
    restores: list[Restore] = field(default_factory=list)  # the person's restores on best, oldest first (git)
    # commit -> its Nsight Compute profile: evaluations/*/profile.json (rounds) and profiles/*.json (others)
    profiles: dict[str, ProfileRecord] = field(default_factory=dict)

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
        return merged_labels([lab for lab in found if lab])

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
        seconds = metrics.baseline_latency(self.baseline_eval)
        if seconds is not None:
            return seconds, "baseline-evaluation.json"
        first = next((ln for ln in self.lines if ln.incumbent_latency is not None), None)
        if first is not None and not any(ln.accepted for ln in self.lines if ln.round < first.round):
            return first.incumbent_latency, f"incumbent latency measured in round {first.round}"
        return None, ""

    def roofline_inputs(self) -> metrics.Roof:
        """The task's roofline: cost-model bytes and FLOPs against the measured bandwidth and matmul peak."""
        if self.interpreter:
            return metrics.Roof(why="CPU interpreter timings: no roofline applies")
        return metrics.roof(self.spec, self.hardware)


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

    best, restores = _from_git(ws, problems)
    return RunRecords(
        workspace=ws, spec=spec, lines=lines, skipped_lines=skipped,
        summary=_model(RunSummary, read("run_summary.json"), "run_summary.json", problems),
        agent=_model(AgentStatus, read("agent-status.json"), "agent-status.json", problems),
        comparison=_model(Comparison, read("final-comparison.json"), "final-comparison.json", problems),
        environment=_dict(read("environment.json"), "environment.json", problems),
        hardware=_dict(read("hardware.json"), "hardware.json", problems),
        preflight=_model(Preflight, read("preflight.json"), "preflight.json", problems),
        baseline_eval=_dict(read("baseline-evaluation.json"), "baseline-evaluation.json", problems),
        missing=missing, problems=problems, best=best, restores=restores, profiles=_profiles(ws, problems),
    )


def _profiles(ws: Path, problems: list[str]) -> dict[str, ProfileRecord]:
    out: dict[str, ProfileRecord] = {}
    for path in sorted([*ws.glob("evaluations/*/profile.json"), *ws.glob("profiles/*.json")]):
        record = _model(ProfileRecord, _read_json(path, problems, []), str(path.relative_to(ws)), problems)
        if record is not None:
            out[record.commit] = record
    return out


def _from_git(workspace: Path, problems: list[str]) -> tuple[Version | None, list[Restore]]:
    """The best version as git has it now (accepts and restores made after run_summary.json count), and
    the restores on its lineage."""
    from kernel_tui.core.history import current_best, restores
    from kernel_tui.core.workspace import Workspace

    if not Workspace.is_workspace(workspace):
        return None, []
    try:
        ws = Workspace.open(workspace)
        return current_best(ws), restores(ws)
    # Deliberately broad: a damaged repository fails in many ways (GitPython, gitdb, the task loader), and
    # the report must still be written: the failure is reported, and the summary used instead.
    except Exception as exc:  # noqa: BLE001
        problems.append(f"git history: unreadable ({type(exc).__name__}: {exc})")
        return None, []


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def merged_labels(labels: list[str]) -> list[str]:
    """One label per timing method: labels that differ only in their measured numbers (the handoff each
    judge measured: "259 µs handoff subtracted", "267 µs ...") are one method, shown with the numbers' range."""
    groups: dict[str, list[str]] = {}
    for lab in labels:
        groups.setdefault(_NUMBER.sub("#", lab), []).append(lab)
    out = []
    for members in groups.values():
        columns = zip(*(_NUMBER.findall(m) for m in members))
        spans = [c[0] if len(set(c)) == 1 else f"{min(c, key=float)}–{max(c, key=float)}" for c in columns]
        pieces = _NUMBER.split(members[0])  # the text around the numbers, then the numbers' spans between
        out.append("".join(p + (spans[i] if i < len(spans) else "") for i, p in enumerate(pieces)))
    return out


def is_interpreter(device: str, *timing_labels: str) -> bool:
    """True when timings come from Triton's CPU interpreter, not from a GPU."""
    return device.strip().lower() == "cpu" or any("interpreter" in lab.lower() for lab in timing_labels)


def accepted_record(lines: Sequence[TrajectoryLine], restores: Sequence[Restore] = ()) -> tuple[list[int], list[float]]:
    """The accepted version's latency after each verdict, in the given order: (rounds, seconds).

    NaN before the first accept; afterwards it changes only on an accept or a restore (from the first verdict
    after it: the restored version's recorded latency), and is NaN (a gap in the line) while the accepted
    version's latency is unknown.
    """
    current = math.nan
    rounds: list[int] = []
    values: list[float] = []
    waiting = sorted((r for r in restores if r.after_round is not None), key=lambda r: r.after_round or 0)
    for line in lines:
        while waiting and (waiting[0].after_round or 0) < line.round:
            restored = waiting.pop(0).latency
            current = float(restored) if restored is not None else math.nan
        if line.accepted:
            current = float(line.latency) if line.latency is not None else math.nan
        rounds.append(line.round)
        values.append(current)
    return rounds, values


category = verdict_category
status_counts = counts
