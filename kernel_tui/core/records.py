"""The records a run leaves in its workspace: one model per file or line, all pydantic.

These are the workspace's own story; the report and the history are made from them and from git alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.evaluator.models import ShapeFigure, Status

ProposerKind = Literal["llm", "search", "person", "replay", "baseline"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class ProposerInfo(_Record):
    kind: ProposerKind
    name: str  # "built-in search", "replay", a person's name, "openai/gpt-…"
    model: str | None = None
    email: str | None = None


class TrajectoryLine(_Record):
    """One verdict: what was proposed, by whom, what happened to it."""

    round: int
    change: str
    proposer: ProposerInfo
    commit: str
    status: Status | Literal["rejected_by_person"]  # how the evaluation ended, or the person's rejection
    reason: str
    accepted: bool
    latency: float | None = None  # candidate's median seconds per call
    incumbent_latency: float | None = None
    improvement: float | None = None  # the gate's estimate, fraction (+0.03 = 3% faster)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    evaluation_dir: str | None = None
    incumbent_commit: str | None = None
    device: str = ""
    timing_label: str = ""
    shapes: list[ShapeFigure] = Field(default_factory=list)  # per benchmark shape, when the task times several
    peak_memory_bytes: int | None = None  # the evaluation's peak device memory (GPU only)
    kernels: list[KernelFacts] = Field(default_factory=list)  # the candidate's compiled kernels (GPU only)
    time: str = Field(default_factory=now_iso)


class Preflight(_Record):
    status: Literal["ok", "failed"]
    reference: str
    baseline: str
    device: str
    sandbox: str = ""  # what confines the evaluation workers here, and which protection is missing
    not_confined: str = ""  # "candidates are not confined: ..." where essential protection is missing or off
    time: str = Field(default_factory=now_iso)


class AgentStatus(_Record):
    status: Literal["complete", "complete_with_warning", "incomplete"]
    warnings: list[str] = []
    missing: str | None = None
    time: str = Field(default_factory=now_iso)


class RunSummary(_Record):
    task: str
    device: str
    timing_label: str
    rounds: int
    accepted: int
    statuses: dict[str, int]  # verdicts per category (kernel_tui.core.verdicts)
    baseline_commit: str
    best_commit: str
    best_round: int | None  # None: the baseline
    best_restored_from: str | None = None  # the best is a restore: the evaluated version it copies
    baseline_latency: float | None
    best_latency: float | None
    final_speedup: float | None  # the re-test's S: over several benchmark shapes, their weighted geometric mean
    final_median_paired_improvement: float | None  # the main shape's
    final_shape_speedups: dict[str, float] = {}  # each benchmark shape's S, where the re-test timed several
    stopped_because: str
    time: str = Field(default_factory=now_iso)

    def final_s(self) -> str:
        """'S = 0.955x weighted over its shapes (main 1.84x, half 0.257x)', or '' with no re-test figure."""
        if self.final_speedup is None:
            return ""
        return f"S = {self.final_speedup:.3f}x{shapes_text(self.final_shape_speedups)}"


def shapes_text(speedups: dict[str, float]) -> str:
    """' weighted over its shapes (main 1.84x, half 0.257x)' beside an S taken over several shapes, else ''."""
    if len(speedups) < 2:
        return ""
    return " weighted over its shapes (" + ", ".join(f"{n} {v:.3g}x" for n, v in speedups.items()) + ")"
