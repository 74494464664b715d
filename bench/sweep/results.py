"""The run's results on disk (one JSON file per part, sweep.json the index) and sweep_summary.md."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from bench.sweep.settings import CPU_LABEL, TARGETS, Options


class Results:
    """One JSON file per part plus sweep.json, the index of part statuses; every write is atomic."""

    def __init__(self, out: Path, opts: Options) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.parts: dict[str, dict] = {}
        self.index: dict[str, Any] = {"device": opts.device, "smoke": opts.smoke, "budget_s": opts.budget,
                                      "parts": {}, "finished": False}
        self.lock = threading.Lock()

    def write(self, part: str, data: dict) -> None:
        with self.lock:
            self.parts[part] = data
            self.index["parts"][part] = {k: data.get(k) for k in ("status", "error", "seconds")}
            dump(self.out / f"{part}.json", data)
            dump(self.out / "sweep.json", self.index)


def dump(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str, allow_nan=True), encoding="utf-8")
    os.replace(tmp, path)


def us(t: float | None) -> str:
    return f"{t * 1e6:.2f}" if t else "—"


def dash(x: object) -> str:
    return "—" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def pct(x: float | None) -> str:
    return f"{x:.1%}" if x is not None else "—"


def summary_markdown(results: Results, opts: Options) -> str:
    parts = results.parts
    env = parts.get("environment", {})
    cpu = opts.device != "cuda"
    lines = ["# Knob sweeps, search replay and bandwidth", ""]
    if cpu:
        lines += [f"**{CPU_LABEL}.** Smoke run: the numbers only show the plumbing works.", ""]
    lines += [f"{env.get('date_utc', '')} · {env.get('gpu') or 'CPU'} · {env.get('nvidia_smi') or ''} · torch "
              f"{env.get('torch')} · triton {env.get('triton')} · commit {env.get('commit')} · budget {opts.budget:.0f} s",
              "", "| part | status | seconds | note |", "|---|---|---:|---|"]
    for name, meta in results.index["parts"].items():
        lines.append(f"| {name} | {meta.get('status')} | {meta.get('seconds') or 0:.0f} | {(meta.get('error') or '')[:120]} |")
    cb = parts.get("copy_bandwidth", {})
    if cb.get("bandwidth_bytes_per_s"):
        lines += ["", f"**Copy bandwidth** (dst.copy_(src), {cb['bytes'] / 2**20:.0f} MiB, read + write): "
                  f"{cb['bandwidth_bytes_per_s'] / 1e12:.3f} TB/s (median of {cb['reps']}; earlier on this GPU: 4.27 TB/s)"]
    for name in ("vector_add", "matmul"):
        lines += sweep_section(name, parts.get(name), cpu)
    lines += torch_section(parts.get("torch_references"), cpu)
    lines += replay_section(parts.get("replay"))
    lines += bandwidth_section(parts.get("bandwidth"), cpu)
    return "\n".join(lines) + "\n"


def sweep_section(name: str, d: dict | None, cpu: bool) -> list[str]:
    if not d or "configs" not in d:
        return ["", f"## Sweep: {name}", "", f"not run ({(d or {}).get('error', 'no data')})"]
    pre = d.get("precompile", {})
    out = ["", f"## Sweep: {name}" + (f" ({CPU_LABEL})" if cpu else ""), "",
           f"{d['size']} configs; timed {d.get('timed', 0)} ({d.get('ok', 0)} ok, {d.get('failed', 0)} failed)"
           + (" — **cut short by the budget**" if d.get("cut_short") else "")
           + f"; precompile {pre.get('returned', 0)}/{pre.get('configs', 0)} in {pre.get('seconds', 0):.0f} s"
           + f" ({d.get('compiled_here', 0)} compiled again while timing); timing shape {d.get('timing_dims')};"
           + f" plan {d['plan']['pairs']} pairs × {d['plan']['inner_repeats']} calls.", ""]
    if d.get("status") not in ("ok", "cut_short"):
        out += [f"**{d.get('status')}**: {d.get('error', '')}", ""]
    best = d.get("best")
    if best:
        base = d.get("baseline_s")
        out.append(f"**Sweep best** ({best['by']}): `{best['label']}` — {us(best['candidate_s'])} µs vs baseline "
                   f"{us(best['incumbent_s'])} µs (paired improvement {pct(best['improvement'])})"
                   + (f"; baseline over the sweep {us(base)} µs" if base else "") + ".")
        out.append("")
    ok = sorted((r for r in d["configs"] if r["status"] == "ok"), key=lambda r: r["candidate_s"])
    out += ["| rank | config | µs | baseline µs | vs baseline |", "|---:|---|---:|---:|---:|"]
    out += [f"| {i + 1} | `{r['label']}` | {us(r['candidate_s'])} | {us(r['incumbent_s'])} | {pct(r['improvement'])} |"
            for i, r in enumerate(ok[:10])]
    if d.get("retime"):
        out += ["", "Re-timed (fresh blocks): " + "; ".join(
            f"`{e['label']}` {us(e.get('candidate_s'))} µs ({len(e['blocks'])} blocks)" for e in d["retime"])]
    failures = [r for r in d["configs"] if r["status"] not in ("ok", "pending")]
    if failures:
        out += ["", f"Failed ({len(failures)}): " + "; ".join(f"`{r['label']}` {r['status']}: {r['reason'][:80]}"
                                                            for r in failures[:5])]
    return out


def torch_section(d: dict | None, cpu: bool) -> list[str]:
    out = ["", "## Torch references" + (f" ({CPU_LABEL})" if cpu else "")]
    if not d or "tasks" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| task | reference | status | µs | best µs (same blocks) | best vs ref | baseline vs ref | throughput | roofline |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, t in d["tasks"].items():
        for label, r in t.get("references", {}).items():
            if r.get("status") != "ok":
                out.append(f"| {name} | {label} | {r.get('status')} | — | — | — | — | — | {r.get('reason', '')[:60]} |")
                continue
            thr = f"{r['tflops']:.1f} TFLOP/s" if "tflops" in r else f"{r.get('gb_per_s', 0):.0f} GB/s"
            roof = "" if "tflops" in r else pct(r.get("of_copy_bandwidth")) + " of copy"
            base = r.get("baseline_speedup_vs_reference")
            out.append(f"| {name} | {label} | ok | {us(r['kernel_s'])} | {us(r['incumbent_s'])} | "
                       f"{r['best_speedup_vs_reference']:.3f}× | {f'{base:.3f}×' if base else '—'} | {thr} | {roof} |")
    for name, t in d["tasks"].items():
        if name == "matmul" and t.get("best_tflops"):
            out += ["", f"matmul best {t['best_tflops']:.1f} TFLOP/s = {pct(t.get('best_of_torch_matmul'))} of torch.matmul "
                    f"(target ≥ {TARGETS['matmul_of_torch']:.0%}: {'met' if t.get('meets_target') else 'not met'}); "
                    f"baseline {t.get('baseline_tflops', 0):.1f} TFLOP/s."]
        if name == "vector_add" and t.get("best_gb_per_s"):
            out += ["", f"vector_add best {t['best_gb_per_s']:.0f} GB/s = {pct(t.get('best_of_copy_bandwidth'))} of copy "
                    f"bandwidth; baseline {t.get('baseline_gb_per_s', 0):.0f} GB/s."]
    out += ["", "Speedup = t_reference / t_x (> 1: x is faster). Best vs reference is paired (same blocks); "
            "baseline vs reference compares medians from different blocks."]
    return out


def replay_section(d: dict | None) -> list[str]:
    out = ["", "## Search replay over the measured tables"]
    if not d or "tasks" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| task | sweep size | bottleneck | seeds reached / run | median evals | max evals | target | met (median / all) | "
            "outside | unswept only | noise SD |",
            "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for name, s in d["tasks"].items():
        if "sweep_size" not in s:
            out.append(f"| {name} | — | — | — | — | — | — | {s.get('error')} | — | — | — |")
            continue
        out.append(f"| {name} | {s['sweep_size']} | {s.get('start_bottleneck') or '—'} | {s['reached']} / {s['seeds_run']} | "
                   f"{dash(s['median_evaluations'])} | {dash(s['max_evaluations'])} | ≤ {s['target_evaluations']:g} | "
                   f"{'yes' if s['meets_target_median'] else 'no'} / {'yes' if s['meets_target_all_seeds'] else 'no'} | "
                   f"{s['outside_proposals']} | {s.get('no_effect_proposals', 0)} | {s['noise_sd']:.2%} |")
    out += ["", f"Evaluations until a proposal within {TARGETS['within']:.0%} of the best measured latency is evaluated; "
            "the search sees the swept values of the swept knobs, and a change of a knob the sweep did not measure "
            "(unswept only) is measured as no effect; a proposal outside the table counts as a failed evaluation; "
            "the bottleneck is the start's place on the sweep's roofline."]
    return out


def bandwidth_section(d: dict | None, cpu: bool) -> list[str]:
    out = ["", "## Memory-bound fixtures at chip-filling sizes" + (f" ({CPU_LABEL})" if cpu else "")]
    if not d or "fixtures" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| fixture | dims | MB/call | configs timed | baseline GB/s | best config | best GB/s | of copy BW | ≥ 90% |",
            "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for name, f in d["fixtures"].items():
        if "configs" not in f:
            out.append(f"| {name} | — | — | — | — | {f.get('status')}: {str(f.get('error'))[:60]} | — | — | — |")
            continue
        best = f.get("best") or {}
        out.append(f"| {name} | {f.get('dims')} | {f.get('bytes', 0) / 1e6:.3g} | {f.get('timed', 0)}/{f['size']} | "
                   f"{f.get('baseline_gb_per_s', 0):.0f} | `{best.get('label', '—')}` | {f.get('best_gb_per_s', 0):.0f} | "
                   f"{pct(f.get('best_of_copy_bandwidth'))} | {'yes' if f.get('meets_target') else 'no'} |")
    return out
