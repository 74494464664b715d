"""The suite's scores, pure functions of the task results: KernelBench's fast_p and the geometric mean of S.

fast_p = the share of ALL tasks whose kernel is correct and faster than PyTorch by more than p (S > p); a
failed task stays in the denominator, and so does a correct one whose PyTorch side could not be measured
(torch.compile unavailable, say): it counts as not faster, as KernelBench counts it, and is named in the
report with the reason. The strict variant counts a task only when the lower bound of the interval of S
exceeds p, so that a speedup the runs cannot tell from noise is not counted.

The interval: a bootstrap over the timing blocks of all runs (each run is one fresh process timing both
sides, one block of paired samples). Runs are drawn with replacement, then each drawn run's pairs, and S is
computed from the draw as the point estimate is. Drawing runs first keeps the process-to-process variance
(the larger part on a GPU) in the interval; drawing pairs adds the variance within a run, which a t-interval
over 3 run ratios (2 degrees of freedom) ignored. scipy.stats.bootstrap draws from flat samples only, so the
two-level draw is written out here.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
from scipy import stats

from kernel_tui.core.compare import Comparison, RunSummary
from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.records import shapes_text
from kernel_tui.core.suite.models import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    FLAG_SPEEDUP,
    SIDE_LABELS,
    SIDES,
    THRESHOLDS,
    FastP,
    InductorSummary,
    Side,
    SideScore,
    SideSummary,
    SuiteResult,
    TaskResult,
)


def run_ratios(comparison: Comparison) -> list[float]:
    """Per run, the PyTorch side's run median over the kernel's (the incumbent is the PyTorch side)."""
    return [r.incumbent_median / r.candidate_median for r in comparison.runs if r.candidate_median > 0]


def log_t_interval(ratios: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A t-interval on the mean log ratio, mapped back with exp; None with fewer than two runs."""
    if len(ratios) < 2 or any(not (r > 0 and math.isfinite(r)) for r in ratios):
        return None
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    sem = statistics.stdev(logs) / math.sqrt(len(logs))
    if sem == 0:  # identical runs: scipy gives NaN for a zero scale
        return math.exp(mean), math.exp(mean)
    low, high = stats.t.interval(confidence, len(logs) - 1, loc=mean, scale=sem)
    return math.exp(low), math.exp(high)


def bootstrap_interval(runs: list[RunSummary], confidence: float = CONFIDENCE,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, *,
                       shapes: list[tuple[list[RunSummary], float]] | None = None) -> tuple[float, float] | None:
    """A percentile interval of S = median(PyTorch run medians) / median(kernel run medians), drawing runs
    and then each drawn run's pairs with replacement; None with fewer than two runs or without samples.
    With `shapes` ((runs, weight) per benchmark shape, run i of each from process i), S is their weighted
    geometric mean and one draw of processes serves every shape, as one process timed them all."""
    groups = shapes or [(runs, 1.0)]
    n = len(groups[0][0])
    if n < 2 or any(len(g) != n for g, _ in groups):
        return None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    rows, slots = np.arange(resamples)[:, None], np.arange(n)[None, :]
    log_s = np.zeros(resamples)
    for group, weight in groups:
        blocks = [(np.asarray(r.incumbent, float), np.asarray(r.candidate, float)) for r in group]
        if any(len(a) == 0 or len(a) != len(b) for a, b in blocks):
            return None
        # per run, and per slot of a draw it may fill: the medians of `resamples` draws of its pairs
        inc, cand = np.empty((n, resamples, n)), np.empty((n, resamples, n))
        for i, (a, b) in enumerate(blocks):
            idx = rng.integers(0, len(a), size=(resamples, n, len(a)))  # pairs drawn together: they are paired
            inc[i], cand[i] = np.median(a[idx], axis=-1), np.median(b[idx], axis=-1)
        ratios = np.median(inc[picks, rows, slots], axis=1) / np.median(cand[picks, rows, slots], axis=1)
        log_s += weight * np.log(ratios)
    alpha = 1.0 - confidence
    low, high = np.exp(np.quantile(log_s / sum(w for _, w in groups), [alpha / 2, 1 - alpha / 2]))
    return float(low), float(high)


# What only the kernel (compare()'s candidate) can cause: the PyTorch side is loaded apart, never checked,
# and exempt from the policy. A runtime error is the kernel's unless the PyTorch side's launch named itself.
KERNEL_FAULTS = {Status.incorrect, Status.compile_error, Status.policy_violation, Status.sandbox_violation,
                 Status.tampering}


def side_score(side: Side, comparison: Comparison) -> SideScore:
    """A finished compare() of PyTorch (incumbent) against the best kernel (candidate)."""
    if comparison.status is not Status.ok or comparison.speedup is None:
        kernel = comparison.status in KERNEL_FAULTS or (
            comparison.status is Status.runtime_error and f"{SIDE_LABELS[side]} failed" not in comparison.reason)
        return SideScore(side=side, available=False, kernel_failed=kernel, comparison=comparison,
                         reason=one_line(f"{comparison.status}: {comparison.reason}"))
    ratios = run_ratios(comparison)
    shapes = [(comparison.shape_runs[name], w) for name, w in comparison.shape_weights.items()] or None
    # recordings made before runs kept their samples fall back to the t-interval on the run ratios
    ci = bootstrap_interval(comparison.runs, shapes=shapes) or log_t_interval(ratios)
    return SideScore(
        side=side, available=True, reason=comparison.reason, speedup=comparison.score,
        shape_speedups=comparison.shape_speedups if len(comparison.shape_speedups) > 1 else {},
        ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None, run_ratios=ratios,
        timing_label=comparison.timing_label, comparison=comparison,
    )


def describe_score(score: SideScore) -> str:
    """One line: S with its interval, or why the side is unavailable."""
    if not score.available or score.speedup is None:
        return f"unavailable: {score.reason}"
    ci = f" ({CONFIDENCE:.0%} CI {score.ci_low:.3g}x–{score.ci_high:.3g}x)" if score.ci_low is not None else ""
    return f"S = {score.speedup:.3g}x{ci}{shapes_text(score.shape_speedups)} over {len(score.run_ratios)} fresh-process runs"


def one_line(text: str, limit: int = 300) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def measured(results: list[TaskResult], side: Side) -> tuple[list[tuple[float, float | None] | None], list[str]]:
    """Per task, all in the denominator: (S, lower bound) for a correct one measured on this side, None for a
    failed one or one this side could not be measured for (not fast); and the correct tasks of the latter."""
    values: list[tuple[float, float | None] | None] = []
    unmeasured: list[str] = []
    for r in results:
        score = r.side(side)
        if not r.correct or (score is not None and score.kernel_failed):
            values.append(None)  # in the denominator, not fast
        elif score is None or not score.available or score.speedup is None:
            unmeasured.append(r.task)
            values.append(None)  # KernelBench's denominator: every task; unmeasured is not faster
        else:
            values.append((score.speedup, score.ci_low))
    return values, unmeasured


def fast_p(values: list[tuple[float, float | None] | None], p: float) -> FastP:
    plain = sum(1 for v in values if v is not None and v[0] > p)
    strict = sum(1 for v in values if v is not None and v[1] is not None and v[1] > p)
    n = len(values)
    return FastP(p=p, plain=plain / n if n else 0.0, strict=strict / n if n else 0.0,
                 plain_count=plain, strict_count=strict)


def geomean(speedups: list[float]) -> float | None:
    return statistics.geometric_mean(speedups) if speedups else None


def summarize(results: list[TaskResult], side: Side, thresholds: tuple[float, ...] = THRESHOLDS) -> SideSummary:
    values, unmeasured = measured(results, side)
    speedups = [v[0] for v in values if v is not None]
    flagged = [r.task for r in results if r.correct and (s := r.side(side)) is not None
               and s.speedup is not None and s.speedup > FLAG_SPEEDUP]
    return SideSummary(
        side=side, total=len(values), unmeasured=unmeasured, fast_p=[fast_p(values, p) for p in thresholds],
        geomean=geomean(speedups), geomean_over=len(speedups), flagged=flagged,
    )


def summarize_inductor(results: list[TaskResult]) -> InductorSummary | None:
    """How far the proposer took the tasks that started from torch.compile's own kernels; None without any.
    A task counts as past torch.compile only when a version was accepted over that start: a start that scores
    above torch.compile unmoved says something of the two launch paths, not of the search."""
    started = [r for r in results if r.from_inductor]
    if not started:
        return None
    moved = [r for r in started if r.correct and r.accepted > 0 and not r.best_is_baseline]
    values, _ = measured(moved, "compile")
    past = [v for v in values if v is not None and v[0] > 1]
    strict = [v for v in past if v[1] is not None and v[1] > 1]
    over = [r.over_start for r in moved if r.over_start is not None]
    return InductorSummary(
        started=len(started), moved=len(moved), past=len(past), past_strict=len(strict),
        median_past=statistics.median(v[0] for v in past) if past else None,
        median_over_start=statistics.median(over) if over else None,
    )


def suite_result(results: list[TaskResult], *, tasks_dir: str, out: str, device: str, proposer: str, max_steps: int,
                 runs: int) -> SuiteResult:
    """The suite's summary of its task results: fast_p and geometric means per side, the tasks past
    torch.compile, the timing labels and environment the results recorded."""
    scores = [s for r in results for s in (r.eager, r.compile) if s is not None]
    return SuiteResult(
        tasks_dir=tasks_dir, out=out, device=device, proposer=proposer, max_steps=max_steps, runs=runs,
        tasks=results, summaries=[summarize(results, side) for side in SIDES],
        timing_labels=list(dict.fromkeys(s.timing_label for s in scores if s.timing_label)),
        inductor=summarize_inductor(results),
        environment=next((r.environment for r in results if r.environment is not None), None),
    )
