"""Calibrate the accept gate on a GPU: A/A false accepts, power at known effects, the published rule
side by side, and the spread of one real change's estimate over fresh processes.

How blocks are collected. A gate decision needs 3-8 blocks of 25 pairs, each from a fresh worker
process, so hundreds of gates would need thousands of processes. Instead each fresh worker process
(the evaluator's real path: fork server, isolation, flush timing, outputs checked) times K blocks'
worth of pairs in one go, which are cut into K blocks of 25 pairs. Gates are then replayed with the
real `gate.decide` over these blocks taken column-wise (block j of process 1, block j of process 2,
...), so the blocks of one gate come from different processes, as they do in a live evaluation. A
one-way ANOVA of the block summaries by process says whether processes differ more than blocks
within a process do (if they do, cutting blocks from one process would understate the noise: the
column-wise order keeps one gate's blocks in different processes for that reason).

Known effects come from extra GPU work of a calibrated length (torch.cuda._sleep of a given number
of cycles after the kernel) on both sides, the candidate's shorter or longer; the true effect is what
all the blocks of that level measured together (the long run), reported beside the nominal one.

Usage: python bench/gate_calibration.py --device cuda --out DIR --budget SECONDS [--smoke]
Writes DIR/gate_calibration.json (summary), DIR/gate_raw.json.gz (every block), DIR/gate_calibration.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernel_tui.core import gate  # noqa: E402
from kernel_tui.core.evaluator import Evaluator, Status  # noqa: E402
from kernel_tui.core.evaluator.models import TimingPlan  # noqa: E402
from kernel_tui.core.task import Task, load_task  # noqa: E402

FIXTURES = ROOT / "fixtures"
LEVELS = (-0.05, 0.01, 0.02, 0.03, 0.05)  # nominal true improvements of the power candidates


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- collecting blocks --------------------------------------------------------------------------------
class Collector:
    """Fresh worker processes through the real evaluator, each cut into `per_process` blocks."""

    def __init__(self, task: Task, device: str, workdir: Path, *, enforce_policy: bool = True,
                 block_pairs: int | None = None, per_process: int = 20) -> None:
        self.task = task
        self.ev = Evaluator(task, device=device, workdir=workdir, enforce_policy=enforce_policy, timeout=300)
        base = self.ev.plan()
        self.block_pairs = block_pairs or base.pairs
        self.per_process = per_process
        self.base = base
        self.processes = 0

    def process(self, incumbent: str, candidate: str, *, per_process: int | None = None) -> dict:
        k = per_process or self.per_process
        plan = TimingPlan(pairs=self.block_pairs * k, inner_repeats=self.base.inner_repeats,
                          warmup=self.base.warmup, method=self.base.method, seed=self.processes)
        t0 = time.monotonic()
        res = self.ev.timing_run(candidate, incumbent, block=self.processes, correctness=self.processes == 0, plan=plan)
        wall = time.monotonic() - t0
        self.processes += 1
        if res.status is not Status.ok or res.timing is None:
            return {"status": res.status.value, "reason": res.reason, "wall": wall, "blocks": []}
        tb = res.timing
        n = self.block_pairs
        blocks = [{"incumbent": tb.incumbent[j * n:(j + 1) * n], "candidate": tb.candidate[j * n:(j + 1) * n]}
                  for j in range(len(tb.incumbent) // n)]
        return {
            "status": "ok", "process": self.processes - 1, "wall": wall, "seconds": res.seconds,
            "method": tb.method, "hold_seconds": tb.hold_seconds, "hold_retakes": tb.hold_retakes,
            "launch_overhead": [tb.launch_overhead_incumbent, tb.launch_overhead_candidate], "blocks": blocks,
        }

    def collect(self, incumbent: str, candidate: str, *, blocks_wanted: int, deadline: float) -> list[dict]:
        out: list[dict] = []
        failures = 0
        while sum(len(p["blocks"]) for p in out) < blocks_wanted and time.monotonic() < deadline:
            p = self.process(incumbent, candidate)
            if p["status"] != "ok":
                failures += 1
                log(f"  process failed: {p['status']}: {p['reason']}")
                if failures >= 3:
                    break
                continue
            out.append(p)
        return out

    def close(self) -> None:
        self.ev.close()


def column_order(processes: list[dict]) -> list[tuple[int, gate.Block]]:
    """Block j of every process, then block j + 1 of every process: a gate's blocks span processes."""
    seq = []
    depth = max((len(p["blocks"]) for p in processes), default=0)
    for j in range(depth):
        for p in processes:
            if j < len(p["blocks"]):
                b = p["blocks"][j]
                seq.append((p["process"], gate.Block(incumbent=b["incumbent"], candidate=b["candidate"],
                                                     process=f"{p['process']}.{j}")))
    return seq


def replay_gates(seq: list[tuple[int, gate.Block]], policy: gate.GatePolicy, max_gates: int) -> list[dict]:
    """Run the real gate decision over consecutive, disjoint runs of blocks."""
    gates: list[dict] = []
    pos = 0
    while len(gates) < max_gates:
        blocks: list[gate.Block] = []
        procs: list[int] = []
        verdict = None
        while pos < len(seq):
            proc, b = seq[pos]
            pos += 1
            blocks.append(b)
            procs.append(proc)
            verdict = gate.decide(blocks, policy)
            if verdict.decision != "continue":
                break
        if verdict is None or verdict.decision == "continue":
            break  # ran out of blocks mid-gate: that gate is not counted
        confirmation: list[gate.Block] = []
        if verdict.decision == "confirm":
            if pos + policy.confirm_blocks > len(seq):
                break
            for _ in range(policy.confirm_blocks):
                procs.append(seq[pos][0])
                confirmation.append(seq[pos][1])
                pos += 1
            verdict = gate.decide(blocks, policy, confirmation=confirmation)
        first = blocks[0]
        gates.append({
            "decision": verdict.decision, "accepted": verdict.accepted, "blocks": len(blocks),
            "confirmation_blocks": len(confirmation), "pairs": verdict.pairs, "improvement": verdict.improvement,
            "ci": [verdict.ci_low, verdict.ci_high], "p_value": verdict.p_value,
            "published_rule_first_block": gate.published_rule(first.incumbent, first.candidate),
            "processes": sorted(set(procs)),
        })
    return gates


def binomial(k: int, n: int) -> dict:
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "ci95": [None, None]}
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return {"k": k, "n": n, "rate": k / n, "ci95": [ci.low, ci.high]}


def process_effect(processes: list[dict]) -> dict:
    """One-way ANOVA of block summaries (median log ratio) grouped by process."""
    groups = [[gate.Block(incumbent=b["incumbent"], candidate=b["candidate"]).summary for b in p["blocks"]]
              for p in processes if len(p["blocks"]) >= 2]
    if len(groups) < 2:
        return {}
    f, p = stats.f_oneway(*groups)
    within = statistics.mean(statistics.pvariance(g) for g in groups)
    means = [statistics.mean(g) for g in groups]
    k = statistics.mean(len(g) for g in groups)
    between = max(0.0, statistics.variance(means) - within / k)  # variance component of the process level
    return {"F": float(f), "p": float(p), "block_sd_within_process": math.sqrt(within),
            "process_level_sd": math.sqrt(between), "processes": len(groups)}


def gate_summary(gates: list[dict], processes: list[dict]) -> dict:
    n = len(gates)
    acc = sum(g["accepted"] for g in gates)
    pub = sum(g["published_rule_first_block"] for g in gates)
    blocks = [g["blocks"] + g["confirmation_blocks"] for g in gates]
    summaries = [gate.Block(incumbent=b["incumbent"], candidate=b["candidate"]) for p in processes for b in p["blocks"]]
    inc = np.array([t for b in summaries for t in b.incumbent])
    cand = np.array([t for b in summaries for t in b.candidate])
    per_process = [
        1 - statistics.mean(t for b in p["blocks"] for t in b["candidate"]) / statistics.mean(t for b in p["blocks"] for t in b["incumbent"])
        for p in processes if p["blocks"]
    ]
    long_run = {}
    if len(per_process) >= 2:
        m = statistics.mean(per_process)
        half = stats.t.ppf(0.975, len(per_process) - 1) * statistics.stdev(per_process) / math.sqrt(len(per_process))
        long_run = {"improvement": m, "ci95": [m - half, m + half], "processes": len(per_process),
                    "pairs": int(inc.size), "incumbent_median_s": float(np.median(inc)), "candidate_median_s": float(np.median(cand))}
    return {
        "gates": n, "accepted": binomial(acc, n), "published_rule_on_first_block": binomial(pub, n),
        "blocks_per_gate": {"mean": statistics.mean(blocks) if blocks else None,
                            "median": statistics.median(blocks) if blocks else None,
                            "max": max(blocks) if blocks else None},
        "pairs_per_gate_mean": statistics.mean(g["pairs"] for g in gates) if gates else None,
        "rejected_after_one_block": sum(g["decision"] == "reject" and g["blocks"] == 1 for g in gates),
        "estimates": {"median": statistics.median(g["improvement"] for g in gates) if gates else None,
                      "min": min((g["improvement"] for g in gates), default=None),
                      "max": max((g["improvement"] for g in gates), default=None)},
        "long_run": long_run, "process_effect": process_effect(processes),
        "processes": len(processes), "blocks": sum(len(p["blocks"]) for p in processes),
        "hold_seconds_median": statistics.median([p["hold_seconds"] for p in processes if p.get("hold_seconds")] or [0]),
        "hold_retakes": sum(p.get("hold_retakes", 0) for p in processes),
        "process_wall_median_s": statistics.median([p["wall"] for p in processes]) if processes else None,
    }


# --- the parts ------------------------------------------------------------------------------------------
def aa(task_name: str, device: str, work: Path, *, gates: int, deadline: float, per_process: int) -> tuple[dict, list]:
    task = load_task(FIXTURES / task_name)
    col = Collector(task, device, work / f"aa-{task_name}", per_process=per_process)
    policy = col.ev.policy
    try:
        # a margin over the blocks an A/A gate takes (3-6 for a tight null, up to 8 with confirmation)
        procs = col.collect(task.baseline_source, task.baseline_source, blocks_wanted=gates * 5, deadline=deadline)
    finally:
        col.close()
    decided = replay_gates(column_order(procs), policy, gates)
    summary = gate_summary(decided, procs)
    summary["policy"] = policy.model_dump()
    log(f"A/A {task_name}: {summary['accepted']['k']}/{summary['gates']} accepted, "
        f"published rule {summary['published_rule_on_first_block']['k']}/{summary['gates']}, "
        f"{summary['blocks']} blocks from {summary['processes']} processes")
    return summary, procs


def with_extra_work(source: str, amount: int, device: str) -> str:
    """The source with extra work of `amount` appended to its launch function (the file's last def)."""
    line = f"torch.cuda._sleep({amount})" if device == "cuda" else f"sum(range({amount}))"
    return source.rstrip() + f"\n    {line}  # calibrated extra work\n"


def power(task_name: str, device: str, work: Path, *, gates: int, deadline: float, per_process: int) -> tuple[dict, dict]:
    task = load_task(FIXTURES / task_name)
    col = Collector(task, device, work / f"power-{task_name}", enforce_policy=False, per_process=per_process)
    policy = col.ev.policy
    out: dict = {"levels": {}}
    raw: dict = {}
    try:
        # Pilot: the incumbent (baseline + base extra work) against itself, for its time per call.
        unit = 2_000 if device == "cuda" else 20_000  # cycles (~1 µs at 2 GHz) / interpreter iterations
        base_amount = 4 * unit
        inc = with_extra_work(task.baseline_source, base_amount, device)
        pilot = col.process(inc, inc, per_process=1)
        if pilot["status"] != "ok":
            raise RuntimeError(f"pilot failed: {pilot['reason']}")
        t_inc = statistics.median(pilot["blocks"][0]["incumbent"])
        # the amount per second of extra work, measured: a long-sleep side against the base side
        probe = col.process(inc, with_extra_work(task.baseline_source, base_amount + 4 * unit, device), per_process=1)
        delta = statistics.median(np.array(probe["blocks"][0]["candidate"]) - np.array(probe["blocks"][0]["incumbent"]))
        per_second = 4 * unit / max(delta, 1e-9)
        out.update(incumbent_seconds=t_inc, amount_per_second=per_second, base_amount=base_amount)
        log(f"power {task_name}: incumbent {t_inc * 1e6:.2f} µs, {per_second / 1e9:.3f} units/ns")
        for i, level in enumerate(LEVELS):
            amount = max(0, round(base_amount - level * t_inc * per_second))
            cand = with_extra_work(task.baseline_source, amount, device)
            n_gates = gates if level > 0 else max(10, gates // 2)
            # an equal share of what is left; a slower candidate is rejected in a block or two
            weights = [1.0 if lv > 0 else 0.3 for lv in LEVELS[i:]]
            level_deadline = time.monotonic() + (deadline - time.monotonic()) * weights[0] / sum(weights)
            procs = col.collect(inc, cand, blocks_wanted=n_gates * (7 if level > 0 else 2), deadline=level_deadline)
            decided = replay_gates(column_order(procs), policy, n_gates)
            s = gate_summary(decided, procs)
            s.update(nominal=level, candidate_amount=amount)
            out["levels"][f"{level:+.0%}"] = s
            raw[f"{level:+.0%}"] = procs
            lr = s["long_run"].get("improvement")
            log(f"  {level:+.0%} (long run {lr if lr is None else f'{lr:+.2%}'}): "
                f"{s['accepted']['k']}/{s['gates']} accepted, blocks/gate {s['blocks_per_gate']['mean']}")
    finally:
        col.close()
    out["policy"] = policy.model_dump()
    return out, raw


def reproducibility(device: str, work: Path, *, runs: int, deadline: float) -> dict:
    """The same real change (vector_add block 256 -> 1024) estimated in `runs` fresh processes, one block each."""
    task = load_task(FIXTURES / "vector_add")
    cand = (ROOT / "bench/candidates/vector_add_block1024.py").read_text()
    ev = Evaluator(task, device=device, workdir=work / "repro", timeout=300)
    rows = []
    try:
        for i in range(runs):
            if time.monotonic() > deadline:
                break
            res = ev.timing_run(cand, task.baseline_source, block=i, correctness=False, seed=100 + i)
            if res.status is not Status.ok or res.timing is None:
                rows.append({"status": res.status.value, "reason": res.reason})
                continue
            b = gate.Block(incumbent=res.timing.incumbent, candidate=res.timing.candidate)
            imp = gate.paired_improvements(b)
            rows.append({"status": "ok", "median_paired_improvement": float(np.median(imp)),
                         "block_estimate": float(1 - math.exp(-b.summary)),
                         "incumbent_median_s": float(np.median(b.incumbent)), "candidate_median_s": float(np.median(b.candidate))})
    finally:
        ev.close()
    est = [r["median_paired_improvement"] for r in rows if r["status"] == "ok"]
    out = {"runs": rows, "n": len(est)}
    if est:
        out.update(mean=statistics.mean(est), sd=statistics.stdev(est) if len(est) > 1 else None,
                   min=min(est), max=max(est), max_abs_deviation_pp=100 * max(abs(e - statistics.mean(est)) for e in est))
    log(f"reproducibility: {out.get('n')} runs, mean {out.get('mean')}, max deviation {out.get('max_abs_deviation_pp')} pp")
    return out


def published_timing(task_name: str, device: str, work: Path, *, gates: int, deadline: float) -> dict:
    """A/A with the published timing (CUDA events around each launch, a sync before each, 25
    order-flipped samples per decision) and the published rule, in this process."""
    import torch

    from kernel_tui.core.evaluator.harness import ArgumentSet, load_module

    task = load_task(FIXTURES / task_name)
    spec = task.spec
    d = work / f"published-{task_name}"
    a = getattr(load_module(task.baseline_source, d / "a", f"kt_pub_a_{task_name}"), spec.entrypoint)
    b = getattr(load_module(task.baseline_source, d / "b", f"kt_pub_b_{task_name}"), spec.entrypoint)
    s = ArgumentSet.build(spec, spec.timing_shape(device).dims, device, 1)
    args = s.args()
    cuda = device == "cuda"
    for fn in (a, b):
        for _ in range(10):
            fn(*args)
    if cuda:
        torch.cuda.synchronize()

    def timed(fn) -> float:
        if not cuda:
            t0 = time.perf_counter()
            fn(*args)
            return time.perf_counter() - t0
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    accepted = 0
    done = 0
    medians = []
    for _ in range(gates):
        if time.monotonic() > deadline:
            break
        inc, cand = [], []
        for i in range(25):
            first, second = (a, b) if i % 2 == 0 else (b, a)
            t1, t2 = timed(first), timed(second)
            ta, tb = (t1, t2) if first is a else (t2, t1)
            inc.append(ta)
            cand.append(tb)
        accepted += gate.published_rule(inc, cand)
        medians.append(float(np.median((np.array(inc) - np.array(cand)) / np.array(inc))))
        done += 1
    out = {"accepted": binomial(accepted, done), "median_paired_improvement_sd": statistics.stdev(medians) if len(medians) > 1 else None}
    log(f"published timing + rule, A/A {task_name}: {accepted}/{done} accepted")
    return out


def environment(device: str) -> dict:
    import subprocess

    import torch
    import triton

    env = {"date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "torch": torch.__version__,
           "triton": triton.__version__, "python": sys.version.split()[0], "device": device}
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            env["driver"] = "unknown"
    return env


def markdown(result: dict) -> str:
    def pct(x):
        return "n/a" if x is None else f"{100 * x:.2f}%"

    def ci(b):
        return "n/a" if b["rate"] is None else f"{b['k']}/{b['n']} = {pct(b['rate'])} (95% CI {pct(b['ci95'][0])}–{pct(b['ci95'][1])})"

    lines = ["# Gate calibration", "", f"Environment: `{json.dumps(result['environment'])}`", ""]
    for name, s in result.get("aa", {}).items():
        if "error" in s:
            lines.append(f"- A/A {name}: error {s['error']}")
            continue
        pe = s.get("process_effect", {})
        lines.append(f"- A/A {name}: gate false accepts {ci(s['accepted'])}; published rule on each gate's first block "
                     f"{ci(s['published_rule_on_first_block'])}; blocks per gate mean {s['blocks_per_gate']['mean']:.2f} "
                     f"(max {s['blocks_per_gate']['max']}); {s['blocks']} blocks from {s['processes']} processes; "
                     f"process effect ANOVA p={pe.get('p', float('nan')):.3g}, process-level SD {pct(pe.get('process_level_sd'))}, "
                     f"block SD within a process {pct(pe.get('block_sd_within_process'))}")
    for name, s in result.get("published_timing", {}).items():
        if "error" not in s:
            lines.append(f"- Published timing (events around the launch) + published rule, A/A {name}: {ci(s['accepted'])}")
    p = result.get("power", {})
    if p.get("levels"):
        lines += ["", "| nominal | long-run effect (95% CI) | gates | accepted | blocks/gate mean | rejected after 1 block |",
                  "|---|---|---|---|---|---|"]
        for level, s in p["levels"].items():
            lr = s["long_run"]
            eff = f"{pct(lr.get('improvement'))} ({pct(lr['ci95'][0])}…{pct(lr['ci95'][1])})" if lr else "n/a"
            lines.append(f"| {level} | {eff} | {s['gates']} | {ci(s['accepted'])} | {s['blocks_per_gate']['mean']} | {s['rejected_after_one_block']} |")
    r = result.get("reproducibility", {})
    if r.get("n"):
        lines += ["", f"Reproducibility (block 256 → 1024, {r['n']} fresh processes): mean {pct(r['mean'])}, "
                  f"min {pct(r['min'])}, max {pct(r['max'])}, largest deviation from the mean {r['max_abs_deviation_pp']:.2f} pp"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results/raw"))
    ap.add_argument("--budget", type=float, default=540, help="wall seconds for everything")
    ap.add_argument("--aa-gates", type=int, default=320)
    ap.add_argument("--power-gates", type=int, default=60)
    ap.add_argument("--per-process", type=int, default=20, help="blocks cut from one worker process")
    ap.add_argument("--parts", default="aa,power,published,repro")
    ap.add_argument("--aa-fixtures", default="vector_add,matmul")
    ap.add_argument("--shares", default="aa:vector_add=0.25,aa:matmul=0.35,published=0.03,repro=0.05",
                    help="share of the budget per part (power takes what is left)")
    ap.add_argument("--smoke", action="store_true", help="a few gates of everything (CPU interpreter plumbing)")
    args = ap.parse_args()
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # the in-process part (published timing) needs it
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        args.aa_gates, args.power_gates, args.per_process = 3, 2, 4
    start = time.monotonic()
    end = start + args.budget
    parts = args.parts.split(",")
    # shares of the budget, in the order the parts run (A/A first: it is the headline)
    shares = {k: float(v) for k, v in (item.split("=") for item in args.shares.split(","))}
    work = Path(tempfile.mkdtemp(prefix="gate-calibration-"))
    result: dict = {"environment": environment(args.device), "budget_s": args.budget, "aa": {}, "published_timing": {}}
    raw: dict = {}

    def save() -> None:
        (out / "gate_calibration.json").write_text(json.dumps(result, indent=1, default=str))
        with gzip.open(out / "gate_raw.json.gz", "wt") as f:
            json.dump(raw, f)
        (out / "gate_calibration.md").write_text(markdown(result))

    def deadline(key: str) -> float:
        return min(end, time.monotonic() + shares[key] * args.budget)

    for name in args.aa_fixtures.split(","):
        if "aa" not in parts:
            break
        try:
            result["aa"][name], raw[f"aa:{name}"] = aa(name, args.device, work, gates=args.aa_gates,
                                                       deadline=deadline(f"aa:{name}"), per_process=args.per_process)
        except Exception as exc:  # noqa: BLE001 - a benchmark part's failure is recorded, the rest still runs
            result["aa"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"A/A {name} failed: {exc}")
        save()
    if "published" in parts:
        for name in ("vector_add", "matmul"):
            try:
                result["published_timing"][name] = published_timing(
                    name, args.device, work, gates=args.aa_gates, deadline=min(end, time.monotonic() + shares["published"] * args.budget / 2))
            except Exception as exc:  # noqa: BLE001
                result["published_timing"][name] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"published timing {name} failed: {exc}")
        save()
    if "repro" in parts:
        try:
            result["reproducibility"] = reproducibility(args.device, work, runs=3 if args.smoke else 10, deadline=deadline("repro"))
        except Exception as exc:  # noqa: BLE001
            result["reproducibility"] = {"error": f"{type(exc).__name__}: {exc}"}
        save()
    if "power" in parts:
        try:
            result["power"], raw["power"] = power("vector_add", args.device, work, gates=args.power_gates,
                                                  deadline=end - 5, per_process=args.per_process)
        except Exception as exc:  # noqa: BLE001
            result["power"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"power failed: {exc}")
        save()
    result["wall_s"] = time.monotonic() - start
    save()
    log(f"done in {result['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
