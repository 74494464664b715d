"""suite-report.md and its fast_p figure, from a SuiteResult alone.

matplotlib is imported lazily with the Agg backend; a figure that cannot be drawn becomes a note in the
report, never a failed suite.
"""

from __future__ import annotations

from pathlib import Path

from kernel_tui.core.report.records import merged_labels
from kernel_tui.core.report.text import MISSING, cell
from kernel_tui.core.suite.models import FLAG_SPEEDUP, SIDE_LABELS, SIDES, SideScore, SideSummary, SuiteResult, TaskResult
from kernel_tui.core.suite.score import fast_p, measured

FIGURE = "suite-fast_p.png"
REPORT = "suite-report.md"
INTERPRETER_BANNER = (
    "> **⚠ CPU INTERPRETER — THESE TIMINGS ARE NOT GPU TIMINGS.** The kernels ran on Triton's CPU interpreter "
    "and PyTorch on the CPU, at small shapes. Every S and fast_p below shows that the pipeline ran; none says "
    "anything about performance on a GPU."
)


def _x(value: float | None) -> str:
    return f"{value:.3g}x" if value is not None else MISSING


def _speedup_cell(score: SideScore | None) -> str:
    if score is None:
        return MISSING
    if not score.available:
        return f"unavailable: {cell(score.reason, 120)}"
    ci = f" [{_x(score.ci_low)}, {_x(score.ci_high)}]" if score.ci_low is not None else ""
    flag = " ⚑" if score.speedup is not None and score.speedup > FLAG_SPEEDUP else ""
    return f"{_x(score.speedup)}{ci}{flag}{_shapes(score.shape_speedups)}"


def _shapes(speedups: dict[str, float]) -> str:
    """' (weighted; main 1.2x, small 0.9x)' beside an S taken over several benchmark shapes, else ''."""
    return (" (weighted; " + ", ".join(f"{cell(n)} {_x(v)}" for n, v in speedups.items()) + ")") if speedups else ""


def _share(fraction: float, count: int) -> str:
    return f"{fraction:.2f} ({count})"


def _section_setup(s: SuiteResult) -> list[str]:
    env = s.environment
    out = ["## What was run", ""]
    out.append(f"- Tasks: {len(s.tasks)} from `{s.tasks_dir}`, each in its own workspace under `{s.out}/workspaces/`")
    out.append(f"- Proposer: {s.proposer}; budget: {s.max_steps} round(s) per task")
    out.append(f"- Device: {s.device}" + (f" ({env.device_name})" if env else ""))
    if env:
        out.append(f"- Python {env.python}, torch {env.torch}, triton {env.triton}")
    else:
        out.append("- Versions: not recorded (no task reached the scoring)")
    # one line per method: the tasks' labels differ in the handoff each judge measured and the calls per window
    labels = merged_labels(s.timing_labels) or ["none (no comparison was timed)"]
    out += [f"- Timing method: {cell(label)}" for label in labels]
    out += [
        f"- Scoring: each task's best version against the task's reference run as PyTorch eager and through "
        f"torch.compile (one compile thread), timed by the gate's own harness (compare()) in {s.runs} fresh "
        "processes per side, the kernel's correctness checked again in the first; the kernel is held to the "
        "static policy again, while these workers skip the host-op check, which PyTorch code cannot pass (the "
        "kernel passed it when the gate accepted it)",
        "- S = PyTorch time / kernel time (median of the PyTorch side's run medians over the kernel's); S > 1: "
        "the kernel is faster. Where a task times several benchmark shapes (on a GPU), S is their weighted "
        "geometric mean with the gate's weights, each shape's own S beside it, and fast_p uses the weighted S",
        "- Both sides are timed as they are called: the PyTorch side returns results it allocates itself, and "
        "their copy into the task's output tensors (where the checks read them) is made after the timed "
        "region; the kernel writes its outputs directly",
        "- fast_p counts every task: a kernel that failed in a side's comparison (incorrect there, say), and a "
        "correct one whose side could not run at all, count as not fast there; the latter are named below",
        f"- Interval of S: {s.interval_method}",
        "- Scored kernel: the task's best version; where no Triton kernel was accepted over a PyTorch starting "
        "point (none was faster), the fastest correct Triton candidate instead, marked in the tasks table",
        "- Correct: a Triton kernel that passes the scoring's fresh correctness check (a PyTorch starting point "
        "never counts)",
        "- fast_p: the share of all tasks (failed ones included) that are correct with S > p; strict: with "
        "the interval's lower bound > p",
        "",
    ]
    return out


def _section_scores(s: SuiteResult, figure_note: str) -> list[str]:
    eager, comp = s.summary("eager"), s.summary("compile")
    out = ["## Scores", ""]
    if not any(r.correct for r in s.tasks):
        out += [f"**No task could be scored**: none of the {len(s.tasks)} task(s) has a correct Triton kernel, so "
                "every fast_p below is 0 and S has no geometric mean; the tasks table says why for each.", ""]
    out += ["| p | fast_p vs eager | strict | fast_p vs torch.compile | strict |",
            "|---|---|---|---|---|"]
    for fe, fc in zip(eager.fast_p, comp.fast_p):
        compile_cells = (f"{_share(fc.plain, fc.plain_count)} | {_share(fc.strict, fc.strict_count)}"
                         if comp.available else f"{MISSING} | {MISSING}")
        out.append(f"| {fe.p:g} | {_share(fe.plain, fe.plain_count)} | {_share(fe.strict, fe.strict_count)} | {compile_cells} |")
    out.append("")
    out.append("Shares, with the count of tasks in brackets.")
    for summary in (eager, comp):
        out.append("")
        out += _side_lines(summary)
    out += ["", f"![fast_p against p]({FIGURE})" if not figure_note else f"(figure not drawn: {cell(figure_note)})", ""]
    return out


def _side_lines(summary: SideSummary) -> list[str]:
    name = SIDE_LABELS[summary.side]
    if not summary.available:
        return [f"- Against {name}: not measured on any correct task, so no fast_p "
                f"({', '.join(summary.unmeasured)}: see the tasks table for why)"]
    lines = [f"- Against {name}: fast_p over all {summary.total} task(s)"]
    if summary.unmeasured:
        lines.append(f"  ({len(summary.unmeasured)} correct task(s) counted as not faster, their {name} side "
                     f"could not be measured: {', '.join(summary.unmeasured)}; the tasks table says why)")
    lines.append(f"- Geometric mean of S against {name}: {_x(summary.geomean)} over the {summary.geomean_over} "
                 f"correct task(s) measured" if summary.geomean is not None
                 else f"- Geometric mean of S against {name}: {MISSING} (no correct task measured)")
    return lines


def _section_inductor(s: SuiteResult) -> list[str]:
    """Where tasks started from torch.compile's own kernels: how many the proposer took past torch.compile."""
    i = s.inductor
    if i is None:
        return []

    def share(n: int) -> str:
        return f"{n} of {i.started} ({n / i.started:.0%})"

    return ["## Past torch.compile's own kernels", "",
           f"- {i.started} of the {len(s.tasks)} task(s) started from torch.compile's kernels "
           "(Inductor's Triton, rewritten as the task's start); the proposer worked from there",
           f"- A version was accepted over that start in {share(i.moved)}"
           + (f"; the run's final re-test (start against best, fresh processes) puts them at a median "
              f"{_x(i.median_over_start)} over their start" if i.median_over_start is not None else ""),
           f"- **Past torch.compile: {share(i.past)}** with S against torch.compile above 1"
           + (f" (median {_x(i.median_past)})" if i.median_past is not None else "")
           + f"; {share(i.past_strict)} with the interval's lower bound above 1",
           "- A start scored with no version accepted over it is never counted past torch.compile, whatever its S: "
           "that S compares two launch paths of the same kernels, not anything the proposer did",
           ""]


def _over_start_cell(r: TaskResult) -> str:
    return MISSING if r.over_start is None else f"{_x(r.over_start)}{_shapes(r.over_start_shapes)}"


def _section_flags(s: SuiteResult) -> list[str]:
    flagged = {t for side in SIDES for t in s.summary(side).flagged}
    if not flagged:
        return []
    out = [f"## For a person to look at: S above {FLAG_SPEEDUP:g}x", "",
           "A speedup this large is more often a checking or timing fault than a kernel; read the kernel "
           "and its workspace before trusting it.", ""]
    for task in sorted(flagged):
        r = next(t for t in s.tasks if t.task == task)
        where = f" (`{r.workspace}`)" if r.workspace else ""
        out.append(f"- **{task}**: eager {_speedup_cell(r.eager)}, torch.compile {_speedup_cell(r.compile)}{where}")
    return out + [""]


def _section_tasks(s: SuiteResult) -> list[str]:
    out = ["## Tasks", "", "| task | result | rounds (accepted) | S vs eager [CI] | S vs torch.compile [CI] | start | "
           "best over start (re-test) |", "|---|---|---|---|---|---|---|"]
    for r in s.tasks:
        # a failure's reason is listed below the table; a correct task says which kernel was scored
        result = cell(r.outcome(verdict=True), 400) if r.correct else "failed"
        out.append(f"| {cell(r.task)} | {result} | {r.rounds} ({r.accepted}) | {_speedup_cell(r.eager)} | "
                   f"{_speedup_cell(r.compile) if r.correct else MISSING} | {cell(r.start) if r.start else 'Triton baseline'} | "
                   f"{_over_start_cell(r)} |")
    failed = [r for r in s.tasks if not r.correct]
    if failed:
        out += ["", "Why tasks failed:", ""]
        out += [f"- **{cell(r.task)}**: {cell(r.reason, 300)}" for r in failed]
    return out + [""]


def render(s: SuiteResult, figure_note: str = "") -> str:
    head = [f"# Suite report: {Path(s.tasks_dir).name}", ""]
    if s.device == "cpu":
        head += [INTERPRETER_BANNER, ""]
    return "\n".join(head + _section_setup(s) + _section_scores(s, figure_note) + _section_inductor(s) + _section_flags(s)
                     + _section_tasks(s))


def _breakpoints(s: SuiteResult, top: float) -> list[float]:
    """Where a fast_p curve can change: 0, every S and every lower bound (it is constant in between)."""
    points = {0.0, top}
    for side in SIDES:
        for v in measured(s.tasks, side)[0]:
            if v is not None:
                points.update(x for x in v if x is not None and 0 <= x <= top)
    return sorted(points)


def draw_fast_p(s: SuiteResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    speedups = [v[0] for side in SIDES for v in measured(s.tasks, side)[0] if v is not None]
    top = max([2.5, *(x * 1.25 for x in speedups)])
    xs = _breakpoints(s, top)
    fig, ax = plt.subplots(figsize=(9, 6))
    colors = {"eager": "tab:blue", "compile": "tab:orange"}
    notes = []
    for side in SIDES:
        values, _ = measured(s.tasks, side)
        if not values or not s.summary(side).available:
            notes.append(f"{SIDE_LABELS[side]}: not measured on any correct task")
            continue
        curve = [fast_p(values, x) for x in xs]
        points = s.summary(side).fast_p
        for strict, ls, marker in ((False, "-", "o"), (True, "--", "s")):
            ys = [c.strict if strict else c.plain for c in curve]
            label = f"vs {SIDE_LABELS[side]}, {'strict (CI lower bound > p)' if strict else 'S > p'}"
            ax.plot(xs, ys, ls=ls, color=colors[side], lw=2, label=label, drawstyle="steps-post")
            ax.plot([f.p for f in points], [f.strict if strict else f.plain for f in points], ls="", marker=marker,
                    color=colors[side], mfc="white" if strict else colors[side])
    # linear up to 1, logarithmic beyond: the thresholds that matter stay readable next to a large outlier
    ax.set_xscale("symlog", linthresh=1.0, linscale=1.5)
    ticks = [t for t in (0, 0.5, 0.8, 1, 1.5, 2, 5, 10, 20, 50, 100) if t <= top]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_xlim(0, top)
    ax.axvline(1.0, color="gray", ls=":", lw=1)
    ax.set_xlabel("p (speedup threshold; linear to 1, logarithmic beyond)")
    ax.set_ylabel("fast_p (share of all tasks)")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.set_title(f"fast_p over {len(s.tasks)} tasks ({s.proposer}, {s.max_steps} rounds each)")
    if s.device == "cpu":
        notes.insert(0, "CPU INTERPRETER — timings are not GPU timings")
    if notes:
        ax.text(0.98, 0.97, "\n".join(notes), transform=ax.transAxes, ha="right", va="top", color="darkred",
                fontsize=10, bbox=dict(facecolor="#fff0f0", edgecolor="darkred"))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_suite_report(s: SuiteResult, out: Path) -> list[Path]:
    """suite-report.md and the fast_p figure into `out`; returns the written paths."""
    written = []
    note = ""
    try:
        draw_fast_p(s, out / FIGURE)
        written.append(out / FIGURE)
    except Exception as exc:  # noqa: BLE001 - a figure must never stop the report; it says what went wrong
        note = f"{type(exc).__name__}: {exc}"
    (out / REPORT).write_text(render(s, note), encoding="utf-8")
    return [out / REPORT, *written]
