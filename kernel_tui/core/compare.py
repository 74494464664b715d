"""The independent re-test: incumbent vs candidate in fresh processes, reported two ways.

S is the ratio of the medians of each side's per-run medians (a speedup, > 1 = candidate faster); the
paired figure is the median across runs of each run's median paired improvement. They answer different
questions (how fast each is, and how often and by how much the candidate wins head to head) and are
reported apart.
"""

from __future__ import annotations

import math
import statistics

from pydantic import BaseModel, ConfigDict

from kernel_tui.core import gate
from kernel_tui.core.evaluator.evaluator import Evaluator
from kernel_tui.core.evaluator.gating import to_gate_block
from kernel_tui.core.evaluator.labels import timing_label
from kernel_tui.core.evaluator.models import Environment, Status, TimingBlock
from kernel_tui.core.records import shapes_text


class RunSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    run: int
    incumbent_median: float
    candidate_median: float
    median_paired_improvement: float
    method: str
    # the run's paired samples, seconds per call: what an interval over runs and pairs resamples
    incumbent: list[float] = []
    candidate: list[float] = []


class Comparison(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: Status
    reason: str
    device: str
    timing_label: str = ""
    runs: list[RunSummary] = []
    speedup: float | None = None  # S = median(incumbent run medians) / median(candidate run medians)
    median_paired_improvement: float | None = None
    improvement_range: tuple[float, float] | None = None
    launch_overhead_seconds: float | None = None
    environment: Environment | None = None
    peak_memory_bytes: int | None = None  # the largest of its processes' (GPU only)
    memory_retries: list[str] = []  # the evaluator's own out-of-memory retries with a smaller plan
    same_code: bool = False  # both sides are one source (the best is still, or again, the baseline): S is noise
    # Every benchmark shape the gate weighs (on a GPU; the CPU times the main one): each one's runs and S, its
    # weight, and S over all of them as the gate weighs improvements (a weighted geometric mean)
    shape_runs: dict[str, list[RunSummary]] = {}
    shape_speedups: dict[str, float] = {}
    shape_weights: dict[str, float] = {}
    weighted_speedup: float | None = None

    @property
    def score(self) -> float | None:
        """The S to quote: where the gate weighed several shapes, their weighted geometric mean (the verdict was
        on all of them, so a figure of the main shape alone would overstate a kernel that loses elsewhere);
        otherwise the main shape's S."""
        several = len(self.shape_speedups) > 1 and self.weighted_speedup is not None
        return self.weighted_speedup if several else self.speedup

    def shapes_text(self) -> str:
        """' weighted over its shapes (main 1.84x, half 0.257x)' where there are several, else ''."""
        return shapes_text(self.shape_speedups)


def summarize_run(block: TimingBlock, run: int) -> RunSummary:
    return RunSummary(
        run=run,
        incumbent_median=statistics.median(block.incumbent),
        candidate_median=statistics.median(block.candidate),
        median_paired_improvement=float(statistics.median(gate.paired_improvements(to_gate_block(block)))),
        method=block.method, incumbent=list(block.incumbent), candidate=list(block.candidate),
    )


def compare(evaluator: Evaluator, incumbent: str, candidate: str, runs: int = 5, *, trusted: bool = False) -> Comparison:
    """`runs` fresh worker processes, each timing one interleaved block; correctness checked in the first.
    `trusted`: the candidate side is the task's own PyTorch code (exempt from the policy)."""
    rejected = None if trusted else evaluator.check_policy(candidate)
    if rejected is not None:
        return Comparison(status=rejected.status, reason=rejected.reason, device=evaluator.device)
    summaries: list[RunSummary] = []
    blocks: list[TimingBlock] = []
    env = None
    evaluator.reset_memory_plan()
    peaks: list[int] = []
    retries: list[str] = []
    by_shape: dict[str, list[RunSummary]] = {}
    for run in range(runs):
        res = evaluator.timing_run(candidate, incumbent, block=run, correctness=run == 0, phase="compare", trusted=trusted)
        env = env or res.environment
        peaks += [res.peak_memory_bytes] if res.peak_memory_bytes is not None else []
        retries += res.memory_retries
        if res.status is not Status.ok or res.timing is None:
            return Comparison(status=res.status, reason=f"run {run + 1}: {res.reason}", device=evaluator.device,
                              runs=summaries, environment=env, peak_memory_bytes=max(peaks, default=None),
                              memory_retries=retries)
        blocks.append(res.timing)
        summaries.append(summarize_run(res.timing, run))
        for block in [res.timing, *res.more_timings]:
            by_shape.setdefault(block.shape, []).append(summarize_run(block, run))
    inc = statistics.median(s.incumbent_median for s in summaries)
    cand = statistics.median(s.candidate_median for s in summaries)
    improvements = [s.median_paired_improvement for s in summaries]
    overheads = [b.launch_overhead_candidate for b in blocks if b.launch_overhead_candidate is not None]
    speedup = inc / cand
    paired = statistics.median(improvements)
    weights = {case.name: w for case, w in evaluator.task.spec.benchmark_shapes(evaluator.device)}
    timed = {name: r for name, r in by_shape.items() if name in weights and len(r) == runs}
    per_shape = {name: run_speedup(r) for name, r in timed.items()}
    total = sum(weights[name] for name in per_shape)
    weighted = math.exp(sum(weights[n] * math.log(v) for n, v in per_shape.items()) / total) \
        if per_shape and total > 0 else None
    result = Comparison(
        status=Status.ok, reason="",
        device=evaluator.device,
        timing_label=timing_label(blocks[0], env.device_name if env else ""),
        runs=summaries, speedup=speedup, median_paired_improvement=paired,
        improvement_range=(min(improvements), max(improvements)),
        launch_overhead_seconds=statistics.median(overheads) if overheads else None,
        environment=env, peak_memory_bytes=max(peaks, default=None), memory_retries=retries,
        same_code=candidate == incumbent, shape_runs=timed, shape_speedups=per_shape,
        shape_weights={name: weights[name] for name in per_shape}, weighted_speedup=weighted,
    )
    where = " at the main shape" if result.shapes_text() else ""
    reason = (f"S = {result.score:.3f}x{result.shapes_text()} (median of run medians), median paired improvement"
              f"{where} {paired:+.2%} over {runs} fresh processes"
              + ("; both sides are the same code, so this is noise" if candidate == incumbent else ""))
    return result.model_copy(update={"reason": reason})


def run_speedup(runs: list[RunSummary]) -> float:
    """S of a set of runs: the median of the incumbent's run medians over the candidate's."""
    return statistics.median(r.incumbent_median for r in runs) / statistics.median(r.candidate_median for r in runs)
