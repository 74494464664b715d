"""What a suite leaves on disk: one TaskResult per task (results/<task>.json), and suite.json; while a task
is being scored, the sides measured so far (its workspace's scoring.json).

All frozen pydantic models: they cross from the runner to the report and to the disk, and a resumed
suite reads them back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel_tui.core.compare import Comparison
from kernel_tui.core.evaluator.models import Environment
from kernel_tui.core.records import now_iso
from kernel_tui.core.task.parts import INDUCTOR_START

Side = Literal["eager", "compile"]
SIDES: tuple[Side, ...] = ("eager", "compile")
SIDE_LABELS = {"eager": "PyTorch eager", "compile": "torch.compile"}
# The p of KernelBench's fast_p reported in the table (the figure draws the whole curve).
THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
FLAG_SPEEDUP = 10.0  # a speedup above this is more often a measuring or checking fault than a kernel
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 4000
INTERVAL_METHOD = (
    f"{CONFIDENCE:.0%} percentile bootstrap of S over the timing blocks of all runs, {BOOTSTRAP_RESAMPLES} "
    "resamples: the fresh-process runs drawn with replacement, then each drawn run's pairs drawn with "
    "replacement, and S computed from them as the point estimate is (the median of the PyTorch side's run "
    "medians over the kernel's); resampling runs first keeps the process-to-process variance in the interval"
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class SideScore(_Frozen):
    """The best kernel timed against one PyTorch side in fresh processes."""

    side: Side
    available: bool  # False: this side could not be measured (the reason says why)
    # with available False: the kernel failed in this comparison (incorrect, say): counted, as not fast
    kernel_failed: bool = False
    reason: str = ""
    # S = PyTorch time / kernel time (compare()'s definition); over several benchmark shapes, their weighted
    # geometric mean (the gate's weights), with each shape's own in `shape_speedups`
    speedup: float | None = None
    shape_speedups: dict[str, float] = Field(default_factory=dict)
    ci_low: float | None = None
    ci_high: float | None = None
    run_ratios: list[float] = Field(default_factory=list)  # per run: PyTorch run median / kernel run median
    timing_label: str = ""
    comparison: Comparison | None = None  # compare()'s own record, every run


SCORING_FILE = "scoring.json"  # in the task's workspace, beside session.json


class ScoringProgress(_Frozen):
    """The sides of one scoring measured so far, so that a suite cut off between them resumes at the next:
    `key` (runner.scoring_key) names the kernel, the PyTorch sources, the device and the runs they were
    measured with."""

    key: str
    sides: dict[Side, SideScore] = Field(default_factory=dict)


class TaskResult(_Frozen):
    """One task of the suite, final once `complete` (its workspace finished and its best was scored)."""

    task: str  # the task's directory name under TASKS_DIR, also its workspace's name
    name: str = ""  # the task's own name (task.json)
    status: Literal["solved", "failed"]
    reason: str = ""  # why it failed, or what was measured
    complete: bool  # False: re-tried when the suite runs again (a failed preflight, an error opening it)
    device: str
    runs: int
    max_steps: int
    proposer: str
    workspace: str = ""
    rounds: int = 0
    accepted: int = 0
    best_commit: str = ""
    best_is_baseline: bool = False  # no Triton version was accepted over the PyTorch starting point
    scored_round: int | None = None  # then: the round of the fastest correct candidate, scored instead
    scored_verdict: str = ""  # and the gate's verdict on it, which names the shape where it lost
    start: str = ""  # what the task started from, as task.json labels it ("" an unlabelled Triton baseline)
    # the run's final re-test of its start against its best (RunSummary.final_speedup), where it is about the
    # best that was scored: how far the proposer moved past its start
    over_start: float | None = None
    over_start_shapes: dict[str, float] = Field(default_factory=dict)
    eager: SideScore | None = None
    compile: SideScore | None = None
    environment: Environment | None = None
    time: str = Field(default_factory=now_iso)

    @property
    def correct(self) -> bool:
        """A kernel of the proposer's, correct in the scoring's own fresh check (run 1 against eager)."""
        return self.status == "solved"

    @property
    def gate_rejected(self) -> bool:
        """Correct, but the kernel scored is a candidate the gate turned down: no Triton version was accepted
        over the PyTorch starting point, so the fastest correct one stands in (fast_p counts it, as
        KernelBench's fast_0 counts any correct kernel)."""
        return self.correct and self.best_is_baseline

    @property
    def baseline_scored(self) -> bool:
        """Correct, but the kernel scored is the task's own Triton baseline: no candidate was accepted over it."""
        return self.correct and not self.best_is_baseline and self.accepted == 0

    def outcome(self, verdict: bool = False) -> str:
        """What became of the task, in one line: the wording of the suite's lines, its summary and its report.
        `verdict`: a gate-rejected candidate's line ends with the gate's verdict on it."""
        if not self.correct:
            return f"failed: {self.reason}"
        if self.gate_rejected:
            why = f": {self.scored_verdict}" if verdict and self.scored_verdict else ""
            where = f"round {self.scored_round}, " if self.scored_round is not None else ""
            return (f"correct, but not faster than eager through the gate: the fastest correct candidate is scored "
                    f"({where}gate-rejected{why})")
        if self.baseline_scored:
            return "correct, but no candidate was accepted: the task's own Triton baseline is scored"
        return "solved"

    def side(self, side: Side) -> SideScore | None:
        return self.eager if side == "eager" else self.compile

    @property
    def from_inductor(self) -> bool:
        """The task started from torch.compile's own kernels (`kernel-tui start-from-inductor` wrote its start)."""
        return self.start.startswith(INDUCTOR_START)


class FastP(_Frozen):
    p: float
    plain: float  # share of the tasks that are correct with S > p
    strict: float  # share of the tasks that are correct with the interval's lower bound > p
    plain_count: int
    strict_count: int


class SideSummary(_Frozen):
    """fast_p and the geometric mean of S against one PyTorch side."""

    side: Side
    total: int  # the denominator of fast_p: every task, failed and unmeasured ones included
    unmeasured: list[str] = Field(default_factory=list)  # correct tasks whose PyTorch side could not run (not fast)
    fast_p: list[FastP] = Field(default_factory=list)
    geomean: float | None = None  # of S over the correct tasks measured on this side
    geomean_over: int = 0
    flagged: list[str] = Field(default_factory=list)  # tasks with S above FLAG_SPEEDUP

    @property
    def available(self) -> bool:
        """False when every correct task's side went unmeasured: its fast_p would count failures only."""
        return self.geomean_over > 0 or not self.unmeasured


class InductorSummary(_Frozen):
    """The tasks that started from torch.compile's own kernels: how many the proposer took past torch.compile.
    Past: a version was accepted over the start, and the scoring's S against torch.compile is above 1 (strict:
    its interval's lower bound is)."""

    started: int  # tasks whose start is torch.compile's kernels (the denominator)
    moved: int  # of them, with a version accepted over that start
    past: int  # moved, and S against torch.compile above 1
    past_strict: int  # moved, and the interval of S against torch.compile above 1
    median_past: float | None = None  # the median S against torch.compile over the `past` tasks
    median_over_start: float | None = None  # the median re-test S over the start, over the `moved` tasks


class SuiteResult(_Frozen):
    tasks_dir: str
    out: str
    device: str
    proposer: str
    max_steps: int
    runs: int
    tasks: list[TaskResult]
    summaries: list[SideSummary]
    timing_labels: list[str]
    inductor: InductorSummary | None = None  # None: no task started from torch.compile's kernels
    environment: Environment | None = None
    interval_method: str = INTERVAL_METHOD
    thresholds: list[float] = Field(default_factory=lambda: list(THRESHOLDS))
    time: str = Field(default_factory=now_iso)

    def summary(self, side: Side) -> SideSummary:
        return next(s for s in self.summaries if s.side == side)
