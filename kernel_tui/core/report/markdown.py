"""report.md: the sections, each from the records alone, so that a partial workspace still gets one."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kernel_tui.core.format import memory_bytes
from kernel_tui.core.history import STARTED
from kernel_tui.core.metrics import COST_MODEL_ERRORS, Roof
from kernel_tui.core.profile.compare import compare_profiles, profile_table_row
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.report.records import RECORD_FILES, RunRecords, category, status_counts
from kernel_tui.core.report.text import MISSING, cell, format_latency, pct, roof_pct
from kernel_tui.core.verdicts import ACCEPTED, REJECTED_BY_GATE, REJECTED_BY_PERSON, label, run_status_label

INTERPRETER_BANNER = ("> **⚠ CPU INTERPRETER — THESE TIMINGS ARE NOT GPU TIMINGS.** Every latency, improvement and "
                      "speedup below was measured on Triton's CPU interpreter at a small shape. They show the "
                      "pipeline ran; they say nothing about performance on a GPU.")


def _section_missing(r: RunRecords) -> list[str]:
    if not (r.missing or r.problems or r.skipped_lines):
        return []
    out = ["## Missing or unreadable records", ""]
    out += [f"- **missing** `{name}`: {RECORD_FILES.get(name, '')}" for name in r.missing]
    out += [f"- **unreadable** {cell(p)}" for p in r.problems]
    if r.skipped_lines:
        out.append(f"- **skipped {len(r.skipped_lines)} corrupt line(s)** in `trajectory.jsonl`:")
        out += [f"  - {cell(s, 200)}" for s in r.skipped_lines]
    return out + [""]


def _section_task(r: RunRecords, roof: Roof) -> list[str]:
    out = ["## Task and baseline", ""]
    if r.spec is None:
        out += [f"- Task: **{r.task_name}** (no readable task.json: shape, cost model and threshold unknown)"]
    else:
        s = r.spec
        shape = ", ".join(f"{k}={v}" for k, v in s.shape.items())
        out += [f"- Task: **{s.name}**", f"- Description: {cell(s.description) or '—'}", f"- Shape: {shape}"]
        try:
            flops, cost_bytes = s.cost_at(s.shape)
            label = f" ({cell(s.cost_model.label)})" if s.cost_model.label else ""
            out.append(f"- Cost model at this shape: {flops:.4g} FLOP, {cost_bytes:.4g} bytes per call{label}")
        except COST_MODEL_ERRORS as exc:  # reported, not raised
            out.append(f"- Cost model: cannot be evaluated ({cell(exc)})")
        if r.interpreter:
            t = s.timing_shape("cpu")
            out.append(f"- Timed on the CPU interpreter at shape `{t.name}` "
                       f"({', '.join(f'{k}={v}' for k, v in t.dims.items())}), not at the shape above")
        out.append(f"- Accept threshold: min improvement {s.optimization.min_improvement_fraction:.1%}")
    if r.spec is not None and r.spec.baseline.label:
        out.append(f"- Start: {cell(r.spec.baseline.label)}")
    latency, source = r.baseline_latency()
    if latency is not None:
        roof_text = f", {roof_pct(latency, roof)} of roofline" if roof.usable else ""
        out.append(f"- Baseline latency: {format_latency(latency)}{roof_text} (from {source})")
    else:
        out.append("- Baseline latency: unknown")
    if r.baseline_eval is not None:
        out.append(f"- Baseline evaluation: {r.baseline_eval.get('status', '?')}: "
                   f"{cell(r.baseline_eval.get('reason', ''), 160)}")
    if r.summary is not None:
        out.append(f"- Baseline commit: `{r.summary.baseline_commit[:12]}`")
    if not roof.usable:
        out.append(f"- % of roofline: not given ({roof.why})")
    else:
        out.append(f"- Roofline: {_roof_words(roof)}")
    return out + [""]


def _roof_words(roof: Roof) -> str:
    """The roofs a latency is held against, in words."""
    assert roof.bandwidth is not None and roof.nbytes is not None
    memory = f"{roof.nbytes:.4g} bytes per call at {roof.bandwidth / 1e9:.0f} GB/s = {format_latency(roof.nbytes / roof.bandwidth)}"
    if roof.flops and roof.peak:
        compute = (f"{roof.flops:.4g} FLOP at the {roof.dtype} matmul peak {roof.peak / 1e12:.1f} TFLOP/s = "
                   f"{format_latency(roof.flops / roof.peak)}")
        floors = roof.floors()
        bound = "compute" if floors and floors[1] > floors[0] else "memory"
        return f"floor = the longer of {memory} and {compute}: {bound}-bound; % of roofline = floor / latency"
    why = "no matmul peak measured" if roof.flops else "the cost model counts no FLOPs"
    return f"floor = {memory} ({why}: bytes alone); % of roofline = floor / latency"


def _section_environment(r: RunRecords) -> list[str]:
    out = ["## Environment", ""]
    env = r.environment
    if env is None and r.comparison is not None and r.comparison.environment is not None:
        env = r.comparison.environment.model_dump()
        out.append("(environment.json missing; taken from the final comparison)")
    if env:
        out += [f"- {k}: {cell(v if isinstance(v, (str, int, float)) else json.dumps(v), 160)}"
                for k, v in env.items() if v is not None]  # a CPU run has no L2 or SM count: not "null"
    else:
        out.append("- environment: not recorded")
    hw = r.hardware or {}
    bw = hw.get("copy_bandwidth_bytes_per_s")
    if isinstance(bw, (int, float)):
        out.append(f"- measured copy bandwidth: {bw / 1e9:.1f} GB/s")
    peaks = hw.get("matmul_flops_per_s")
    if isinstance(peaks, dict) and peaks:
        shown = ", ".join(f"{k} {v / 1e12:.1f} TFLOP/s" for k, v in peaks.items() if isinstance(v, (int, float)))
        out.append(f"- measured matmul peak: {shown} ({cell(hw.get('matmul_method', ''))})")
    for key in ("statement", "error"):
        if hw.get(key):
            out.append(f"- hardware: {cell(hw[key], 200)}")
    for timing_label in r.timing_labels:
        out.append(f"- timing: {cell(timing_label)}")
    out += [f"- timing warning: {cell(w)}" for w in r.timing_warnings]
    if r.preflight is not None:
        p = r.preflight
        out.append(f"- preflight: **{p.status}** on {p.device} (reference: {cell(p.reference, 100)}; "
                   f"baseline: {cell(p.baseline, 100)})")
        if p.not_confined:  # in words, every time: the verdicts rest on it
            out.append(f"- **{cell(p.not_confined, 300)}**")
        out.append(f"- {cell(p.sandbox, 400)}" if p.sandbox else "- sandbox: not recorded (an older preflight)")
    return out + [""]


def _section_status(r: RunRecords) -> list[str]:
    out = ["## Run status", ""]
    if r.agent is not None:
        out.append(f"- Status: **{run_status_label(r.agent.status)}** ({r.agent.time})")
        if r.agent.missing:
            out.append(f"- Missing: {cell(r.agent.missing)}")
        out += [f"- Warning: {cell(w)}" for w in r.agent.warnings]
    else:
        out.append("- Status: unknown (no agent-status.json)")
    s = r.summary
    # Counts come from trajectory.jsonl and the best from git: both move after run_summary.json is written.
    stopped = f"; stopped because: {cell(s.stopped_because)}" if s is not None else ""
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
        how = f"**the person's chosen start** ({cell(b.reason)})" if b.status == STARTED else "**restored**"
        return (f"{origin}, {how} from `{b.restored_from[:12]}` as commit `{b.commit[:12]}`, latency "
                f"{format_latency(b.latency)} (from {origin}'s recorded evaluation)")
    if not b.round:
        return f"the baseline (nothing accepted), commit `{b.commit[:12]}`, latency {format_latency(b.latency)}"
    return (f"round {b.round}, commit `{b.commit[:12]}`, latency {format_latency(b.latency)} "
            f"(from round {b.round}'s recorded evaluation)")


def _section_restores(r: RunRecords) -> list[str]:
    """Each restore on the lineage: when, by whom, which version and how it had been judged."""
    if not r.restores:
        return []
    out = ["## Restores", "",
           "A person made an earlier version the incumbent again: a new commit on `best`, no verdict changed; "
           "the rounds after it were judged against it. A chosen start is a correct Triton version made the "
           "starting point by the person's choice, not by the gate.", ""]
    for x in r.restores:
        when = f"after round {x.after_round}" if x.after_round is not None else "when not recorded"
        which = f"round {x.round}" if x.round is not None else "the baseline" if x.verdict == "baseline" else "a version"
        what = (f"{cell(x.note)} (`{x.restored_from[:12]}`)" if x.chosen_start
                else f"restored {which} (`{x.restored_from[:12]}`, {cell(x.verdict)} when judged)")
        out.append(f"- {when}, by {cell(x.by)}: {what}, latency {format_latency(x.latency)}; commit `{x.commit[:12]}`")
    return out + [""]


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


def _section_attempts(r: RunRecords, roof: Roof, cap: int = 60) -> list[str]:
    out = ["## Key attempts", ""]
    if not r.lines:
        return out + ["No verdicts yet.", ""]
    shown_roof = roof.usable
    shown = r.lines
    if len(shown) > cap:  # every accept, then the latest of the others
        others = [ln for ln in r.lines if not ln.accepted]
        keep = {id(ln) for ln in r.lines if ln.accepted} | {id(ln) for ln in others[len(others) - cap:]}
        shown = [ln for ln in r.lines if id(ln) in keep]
    roof_head, roof_sep = (" % roofline |", "---|") if shown_roof else ("", "")
    # only where some evaluation recorded a peak (none does on the CPU interpreter)
    memory = any(ln.peak_memory_bytes is not None for ln in shown)
    mem_head, mem_sep = (" peak memory |", "---|") if memory else ("", "")
    out += ["`gate vs inc.` is the gate's paired estimate against the incumbent the round was judged against "
            "(its latency in `incumbent latency`), not against today's best or the baseline.", "",
            f"| round | change | proposer | verdict | latency | incumbent latency |{roof_head}{mem_head} "
            f"gate vs inc. [CI] | p | reason |",
            f"|---|---|---|---|---|---|{roof_sep}{mem_sep}---|---|---|"]
    for ln in shown:
        prop = ln.proposer.name + (f" ({ln.proposer.model})" if ln.proposer.model else "") + f" [{ln.proposer.kind}]"
        verdict = f"**{label(ACCEPTED)}**" if ln.accepted else label(category(ln))
        ci = f" [{pct(ln.ci_low)}, {pct(ln.ci_high)}]" if ln.ci_low is not None and ln.ci_high is not None else ""
        p = f"{ln.p_value:.3g}" if ln.p_value is not None else "—"
        roof_cell = f" {roof_pct(ln.latency, roof)} |" if shown_roof else ""
        mem_cell = f" {memory_bytes(ln.peak_memory_bytes, missing=MISSING)} |" if memory else ""
        out.append(f"| {ln.round} | {cell(ln.change, 60)} | {cell(prop, 40)} | {verdict} | "
                   f"{format_latency(ln.latency)} | {format_latency(ln.incumbent_latency)} |{roof_cell}{mem_cell} "
                   f"{pct(ln.improvement)}{ci} | {p} | {cell(ln.reason, 120)} |")
    if len(shown) < len(r.lines):
        out.append(f"\n{len(r.lines) - len(shown)} more verdict(s) in trajectory.jsonl.")
    return out + [""]


def _per_verdict(r: RunRecords, title: str, intro: str, columns: list[str],
                 rows: Callable[[TrajectoryLine], list[list[str]]]) -> list[str]:
    """A section of rows under each verdict that has any: round, verdict, then `rows(line)`'s cells."""
    lines = [(ln, rows(ln)) for ln in r.lines]
    if not any(cells for _, cells in lines):
        return []
    out = [f"## {title}", "", intro, "", "| round | verdict | " + " | ".join(columns) + " |",
           "|" + "---|" * (len(columns) + 2)]
    for ln, cells in lines:
        verdict = f"**{label(ACCEPTED)}**" if ln.accepted else label(category(ln))
        out += [f"| {ln.round} | {verdict} | " + " | ".join(row) + " |" for row in cells]
    return out + [""]


def _section_kernels(r: RunRecords) -> list[str]:
    """What the compiler made of each version's kernels (read on the GPU after its correctness calls)."""
    return _per_verdict(
        r, "Compiled kernels",
        "Registers and spills per thread, shared memory per block, warps and stages, and the occupancy they "
        "allow on this GPU (resident warps / the SM's maximum, and what limits it); every compiled variant, "
        "with the shape it was first compiled for (Triton compiles again for sizes it specialises differently: "
        "the timed shape's variant is the one its latency is of).",
        ["kernel"], lambda ln: [[cell(k.summary(), 200)] for k in ln.kernels])


def _section_profiles(r: RunRecords) -> list[str]:
    """Each profiled version's Nsight Compute figures, and what changed from one accepted version to the next."""
    rounds = {ln.commit: ln for ln in r.lines}
    baseline = r.summary.baseline_commit if r.summary is not None else \
        (r.lines[0].incumbent_commit if r.lines else None)  # what round 1 was judged against

    def order(sha: str) -> tuple:  # the baseline, the rounds in order, then what was profiled on demand
        if sha == baseline:
            return (0, 0, "")
        return (1, rounds[sha].round, "") if sha in rounds else (2, 0, r.profiles[sha].created)

    shown = sorted(((sha, rec.profile) for sha, rec in r.profiles.items() if rec.profile is not None),
                   key=lambda item: order(item[0]))
    if not shown:
        return []
    columns = list(profile_table_row(shown[0][1]))
    out = ["## Profiles", "",
           "Nsight Compute, one call of each version at the benchmark shape (the baseline at the start and every "
           "accepted version when it is accepted; others on demand). DRAM, SM and tensor figures are % of peak; "
           "the top stall is its share of all warp-stall cycles.", "",
           "| version | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]
    for sha, profile in shown:
        line = rounds.get(sha)
        version = (f"round {line.round}" + (" (accepted)" if line.accepted else "")) if line else \
            "baseline" if sha == baseline else f"`{sha[:8]}`" + (
                f" (restore of `{r.best.restored_from[:8]}`)" if r.best is not None and r.best.commit == sha
                and r.best.restored_from else " (on demand)")
        out.append(f"| {version} | " + " | ".join(profile_table_row(profile).values()) + " |")
    # what changed, from the baseline through each accepted version (a restore changes no code)
    kept = [(sha, p) for sha, p in shown if sha == baseline or (sha in rounds and rounds[sha].accepted)]
    changes = [(b_sha, a_sha, compare_profiles(a, b)) for (a_sha, a), (b_sha, b) in zip(kept, kept[1:])]
    notes = [f"- `{b_sha[:8]}` against `{a_sha[:8]}`: " + "; ".join(lines) for b_sha, a_sha, lines in changes if lines]
    return out + ([""] + notes if notes else []) + [""]


def _section_shapes(r: RunRecords) -> list[str]:
    """Per benchmark shape figures of every verdict that timed several shapes."""
    return _per_verdict(
        r, "Per benchmark shape",
        "The gate decides on the weighted geometric mean of paired improvements over the benchmark shapes, and "
        "rejects a candidate slower beyond its regression tolerance at any one of them.",
        ["shape", "weight", "incumbent", "candidate", "improvement"],
        lambda ln: [[cell(f.shape), f"{f.weight:g}", format_latency(f.incumbent_seconds),
                     format_latency(f.candidate_seconds), pct(f.improvement)] for f in ln.shapes])


def _section_retest(r: RunRecords, roof: Roof) -> list[str]:
    out = ["## Final re-test", ""]
    c = r.comparison
    if c is None:
        return out + ["No final re-test was recorded (final-comparison.json is missing or unreadable).", ""]
    if r.summary is not None:
        out.append(f"Best version `{r.summary.best_commit[:12]}` against the baseline "
                   f"`{r.summary.baseline_commit[:12]}`, each run a fresh process.\n")
    if c.same_code and not c.runs:
        out.append("The best version is the baseline's code (no version was accepted, or the baseline was "
                   "restored): there is nothing to re-test, and S = 1 by definition.\n")
    elif c.same_code:
        out.append("The best version is the baseline's code: both sides ran the same kernel, and S measures "
                   "only the noise between them.\n")
    if not r.summary_best_is_current:
        out.append(f"**Stale:** {_retest_staleness(r)}\n")
    out.append(f"- Status: {c.status.value}: {cell(c.reason, 200)}")
    out.append(f"- Speedup **S = {c.score:.3f}×**" if c.score is not None else "- Speedup S: not measured")
    out.append("  (median of the baseline's per-run medians / median of the candidate's)")
    if c.shapes_text():
        shapes = ", ".join(f"{n} {v:.3f}× (weight {c.shape_weights.get(n, 0):g})" for n, v in c.shape_speedups.items())
        out.append(f"- Over the benchmark shapes the gate weighs, as their weighted geometric mean: {shapes}")
    where = " at the main shape" if c.shapes_text() else ""
    out.append(f"- Median paired improvement{where}: **{pct(c.median_paired_improvement)}** "
               "(median across runs of each run's median paired improvement)")
    if c.runs:
        inc = statistics.median(s.incumbent_median for s in c.runs)
        cand = statistics.median(s.candidate_median for s in c.runs)
        parts = [f"{who} {format_latency(v)}" + (f" ({roof_pct(v, roof)} of roofline)" if roof.usable else "")
                 for who, v in (("baseline", inc), ("best version", cand))]
        out.append(f"- Median of run medians: {', '.join(parts)}")
    if c.improvement_range is not None:
        out.append(f"- Spread across runs: {pct(c.improvement_range[0])} to {pct(c.improvement_range[1])}")
    if c.launch_overhead_seconds is not None:
        out.append(f"- Host launch overhead (apart from kernel time): {format_latency(c.launch_overhead_seconds)}")
    if c.timing_label:
        out.append(f"- Timing: {cell(c.timing_label)}")
    if c.runs:
        out += ["", "| run | baseline median | candidate median | median paired improvement | method |",
                "|---|---|---|---|---|"]
        out += [f"| {s.run + 1} | {format_latency(s.incumbent_median)} | {format_latency(s.candidate_median)} | "
                f"{pct(s.median_paired_improvement)} | {s.method} |" for s in c.runs]
    return out + [""]


def _retest_staleness(r: RunRecords) -> str:
    s, b = r.summary, r.best
    assert s is not None and b is not None
    then = f"round {s.best_round}" if s.best_round is not None else "the baseline"
    return (f"this re-test measured the best of its time, `{s.best_commit[:12]}` ({then}), not the current best "
            f"`{b.commit[:12]}`; its figures do not describe the current best (run the final comparison again).")


def _limits(r: RunRecords, roof: Roof) -> list[str]:
    notes = []
    if not r.summary_best_is_current and r.comparison is not None:
        notes.append(f"The final re-test is stale: {_retest_staleness(r)}")
    if r.interpreter:
        notes.append("**Timings are CPU-interpreter timings, NOT GPU timings.** No conclusion about GPU "
                     "performance can be drawn from this run.")
    c = r.comparison
    if c is not None and c.score is not None and c.score < 1 and not c.same_code:
        notes.append(f"The final re-test found the best version **slower** than the baseline "
                     f"(S = {c.score:.3f}×{c.shapes_text()} < 1).")
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
    if r.best is not None and r.best.status == STARTED:
        notes.append(f"The best version is the person's chosen start, not a gate verdict: {cell(r.best.reason)}.")
    elif r.lines and not any(ln.accepted for ln in r.lines) and (r.best is None or not r.best.round):
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
    if not roof.usable and not r.interpreter:
        notes.append(f"No % of roofline: {roof.why}.")
    return ["## Limits", ""] + [f"- {n}" for n in notes or ["None noted."]] + [""]


def render_markdown(records: RunRecords, figure_notes: Sequence[str] = ()) -> str:
    r = records
    roof = r.roofline_inputs()
    out = [f"# Run report: {r.task_name}", "",
           f"Workspace `{r.workspace}`, written {datetime.now(UTC).isoformat(timespec='seconds')}.", ""]
    if r.interpreter:
        out += [INTERPRETER_BANNER, ""]
    if r.preflight is not None and r.preflight.not_confined:  # in words, at the top, every time
        warning = cell(r.preflight.not_confined, 300)
        out += [f"> **{warning[:1].upper()}{warning[1:]}.** Every verdict below was reached with the candidates' "
                "code running where the sandbox could not hold it.", ""]
    out += _section_missing(r) + _section_task(r, roof) + _section_environment(r) + _section_status(r)
    out += _section_restores(r)
    out += ["## Figures", "",
            "Rounds overview: top, each candidate's own latency (filled star = accepted, open circle = rejected) "
            "and the accepted version's record line, which moves only on an accept; bottom, the gate's paired "
            "improvement per verdict (hatched = accepted) against the task's threshold.", "",
            "![rounds overview](rounds_overview.png)", "",
            "Process timeline: every verdict at its wall time, by outcome.", "",
            "![process timeline](process_timeline.png)", "",
            "Status breakdown: verdicts per outcome, accepted apart from rejected by the gate.", "",
            "![status breakdown](status_breakdown.png)", "",
            "Roofline: the baseline and every version with a latency (star = baseline or accepted) against "
            "the measured roofs (copy bandwidth; torch.matmul's peak in the task's dtype).", "",
            "![roofline](roofline.png)", ""]
    out += [f"- figure problem: {cell(n)}" for n in figure_notes]
    out += _section_attempts(r, roof) + _section_shapes(r) + _section_kernels(r) + _section_profiles(r) + _section_retest(r, roof) + _limits(r, roof)
    return "\n".join(out).rstrip() + "\n"
