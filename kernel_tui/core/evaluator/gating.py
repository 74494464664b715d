"""From an evaluation's timing blocks to the gate's verdict and the result.

The gate's policy for a task (capped on the CPU interpreter), one gate block per process (several benchmark
shapes combined by weight), the per-shape veto, each shape's own figures, and `Evaluation`: the blocks of one
evaluation as its workers return them, decided on after each, and the EvalResult they make.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from kernel_tui.core import gate
from kernel_tui.core.evaluator.labels import timing_label
from kernel_tui.core.evaluator.models import EvalResult, ShapeFigure, Status, TimingBlock, WorkerResult
from kernel_tui.core.format import shape_figures as format_shapes
from kernel_tui.core.task import Task

# On the CPU interpreter timings carry no GPU meaning, so the sequential design is kept short: the
# pipeline and the statistics run as on a GPU, with fewer processes. Caps, not defaults: each block count
# is at most this whatever the task asks, min_blocks included, so that a gate valid on a GPU (checked when
# the task loaded) stays valid here (min ≤ 2 ≤ max ≤ 3) instead of failing.
INTERPRETER_GATE = {"min_blocks": 2, "max_blocks": 3, "confirm_blocks": 1}


def gate_policy_for(task: Task, device: str = "cuda") -> gate.GatePolicy:
    """The task's gate: its overrides of the gate's defaults, on the CPU capped by INTERPRETER_GATE (the
    capped policy is what each evaluation's request.json records as its gate)."""
    settings = {"min_improvement": task.spec.optimization.min_improvement_fraction, **task.spec.gate.overrides()}
    if device == "cpu":
        for name, cap in INTERPRETER_GATE.items():
            settings[name] = min(settings.get(name, getattr(gate.DEFAULT_POLICY, name)), cap)
    return gate.GatePolicy(**settings)


def to_gate_block(block: TimingBlock) -> gate.Block:
    return gate.Block(incumbent=block.incumbent, candidate=block.candidate, process=str(block.block))


@dataclass
class Evaluation:
    """One evaluation's blocks as its workers return them: the gate decides after each, and at the end they make
    the result. Every block is a separate process (see `evaluator`)."""

    policy: gate.GatePolicy
    weights: dict[str, float]  # benchmark shape -> its weight in the gate's geometric mean
    device: str
    started: float  # time.monotonic() when the evaluation began
    blocks: list[TimingBlock] = field(default_factory=list)  # stage 1's, of the main shape
    confirmation: list[TimingBlock] = field(default_factory=list)
    more: list[TimingBlock] = field(default_factory=list)  # the further benchmark shapes' blocks, every process
    first: WorkerResult | None = None  # the first worker's: correctness, the environment, the kernels
    verdict: gate.Verdict | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    peaks: list[int] = field(default_factory=list)
    retries: list[str] = field(default_factory=list)

    def record(self, res: WorkerResult) -> None:
        """What every worker adds, whatever its status: its time per phase, other shapes' blocks, memory."""
        if self.first is None:
            self.first = res
        for k, v in res.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v
        self.more.extend(res.more_timings)
        self.peaks.extend([res.peak_memory_bytes] if res.peak_memory_bytes is not None else [])
        self.retries.extend(res.memory_retries)

    def decide(self) -> gate.Verdict:
        """Stage 1 on the blocks so far."""
        self.verdict = self._vetoed(gate.decide(self._for_gate(self.blocks), self.policy))
        return self.verdict

    def confirm(self) -> gate.Verdict:
        """Stage 2: the winner of stage 1 on its fresh confirmation blocks."""
        self.verdict = self._vetoed(gate.decide(self._for_gate(self.blocks), self.policy,
                                                confirmation=self._for_gate(self.confirmation)))
        return self.verdict

    def _for_gate(self, main: list[TimingBlock]) -> list[gate.Block]:
        """One gate block per process: the main shape's, or with several shapes their weighted
        geometric mean of paired improvements."""
        if len(self.weights) == 1:
            return [to_gate_block(b) for b in main]
        out = []
        for b in main:
            same = [b, *(m for m in self.more if m.block == b.block)]
            out.append(gate.combine_shapes([to_gate_block(x) for x in same], [self.weights[x.shape] for x in same]))
        return out

    def _vetoed(self, v: gate.Verdict) -> gate.Verdict:
        if len(self.weights) == 1:
            return v
        per_shape: dict[str, list[gate.Block]] = {}
        for b in self.blocks + self.confirmation + self.more:
            per_shape.setdefault(b.shape, []).append(to_gate_block(b))
        return gate.veto_regressions(v, per_shape, self.policy.regression_tolerance)

    def result(self, status: Status, reason: str) -> EvalResult:
        """The evaluation's result, ended here: `status` and `reason` are the failing worker's, or ok and the verdict's."""
        self.seconds["wall"] = time.monotonic() - self.started
        first = self.first
        env = first.environment if first else None
        figures = shape_figures(self.blocks + self.confirmation + self.more, self.weights) if len(self.weights) > 1 else []
        if figures and status is Status.ok:  # the verdict is on the weighted mean: each shape's own beside it
            reason = f"{reason} · per shape: {format_shapes(figures)}"
        all_blocks = self.blocks + self.confirmation
        cand = [t for b in all_blocks for t in b.candidate]
        inc = [t for b in all_blocks for t in b.incumbent]
        overheads = [b.launch_overhead_candidate for b in all_blocks if b.launch_overhead_candidate is not None]
        name = env.device_name if env else ""
        return EvalResult(
            status=status, reason=reason, device=self.device,
            timing_label=timing_label(all_blocks[0] if all_blocks else None, name),
            cases=first.cases if first else [], blocks=self.blocks, confirmation=self.confirmation,
            verdict=self.verdict if status is Status.ok else None,
            candidate_seconds=statistics.median(cand) if cand else None,
            incumbent_seconds=statistics.median(inc) if inc else None,
            launch_overhead_seconds=statistics.median(overheads) if overheads else None,
            environment=env, seconds=self.seconds, sandbox=first.sandbox if first else None,
            more_blocks=self.more, shapes=figures,
        ).model_copy(update={"peak_memory_bytes": max(self.peaks) if self.peaks else None,
                             "memory_retries": self.retries, "kernels": first.kernels if first else []})


def shape_figures(blocks: list[TimingBlock], weights: dict[str, float]) -> list[ShapeFigure]:
    """Each benchmark shape's own figures from its blocks (in the task's order of benchmark shapes)."""
    figures = []
    for name, weight in weights.items():
        mine = [b for b in blocks if b.shape == name]
        if not mine:
            continue
        figures.append(ShapeFigure(
            shape=name, weight=weight, improvement=gate.shape_improvement([to_gate_block(b) for b in mine]),
            incumbent_seconds=statistics.median(t for b in mine for t in b.incumbent),
            candidate_seconds=statistics.median(t for b in mine for t in b.candidate),
        ))
    return figures
