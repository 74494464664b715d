"""Imported KernelBench problems at their native sizes: does each evaluate without running out of memory?

    python bench/kernelbench/native_sizes.py TASKS_DIR --out FILE.jsonl [--shard I/N] [--decide NAME ...]
    python bench/kernelbench/native_sizes.py --summarize FILE.jsonl [FILE.jsonl ...] > native-sizes.md

For each task (imported with `kernel-tui import kernelbench`, PyTorch eager as the starting point) it
prints the memory plan of its benchmark shape, then runs one evaluation process of the baseline against
itself: correctness at every shape (the native size included) and one paired timing block at the native
size, exactly what every block of a gate decision runs. For the tasks named with --decide it also runs a
whole gate decision of the baseline against itself (several fresh processes, as a round does). One JSON line
per task, written as soon as it is known, so a stopped run keeps what it measured. --shard I/N takes every
N-th task from the I-th: one process per GPU (CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def measure(task_dir: Path, decide: bool, device: str = "cuda") -> dict:
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.hardware import memory_plans
    from kernel_tui.core.task import load_task

    out: dict = {"task": task_dir.name}
    t0 = time.monotonic()
    try:
        task = load_task(task_dir)
    except Exception as exc:  # noqa: BLE001 - one line per task, whatever it is
        return {**out, "status": "load_failed", "reason": str(exc).splitlines()[0]}
    ev = Evaluator(task, device=device, enforce_policy=False)
    try:
        plans = memory_plans(ev)
        main = next(p for p in plans if p.shape == task.spec.timing_shape(ev.device).name)
        out.update(call_bytes=main.call_bytes, set_bytes=main.set_bytes, planned_sets=main.max_sets,
                   planned_peak_bytes=main.peak_bytes(1 if main.max_sets else 0), fits=main.fits,
                   budget_bytes=main.budget_bytes, cold_anyway=main.cold_anyway)
        if not all(p.fits for p in plans):
            refused = next(p for p in plans if not p.fits)
            return {**out, "status": "refused", "reason": refused.refusal(), "wall_s": time.monotonic() - t0}
        baseline = task.baseline_source
        t1 = time.monotonic()
        res = ev.timing_run(baseline, baseline, block=0, correctness=True, trusted=True)
        out.update(status=res.status.value, reason=res.reason, block_wall_s=time.monotonic() - t1,
                   peak_memory_bytes=res.peak_memory_bytes, memory_retries=res.memory_retries)
        if res.timing is not None:
            out.update(rotating_sets=res.timing.rotating_sets, method=res.timing.method,
                       inner_repeats=res.timing.inner_repeats, median_seconds=sorted(res.timing.incumbent)[len(res.timing.incumbent) // 2])
        if decide and res.status.value == "ok":
            t2 = time.monotonic()
            verdict = ev.evaluate(baseline, baseline)
            out.update(decision_status=verdict.status.value, decision_wall_s=time.monotonic() - t2,
                       decision=verdict.verdict.decision if verdict.verdict else None,
                       decision_blocks=len(verdict.blocks) + len(verdict.confirmation),
                       decision_peak_bytes=verdict.peak_memory_bytes, decision_reason=verdict.reason)
    except Exception as exc:  # noqa: BLE001
        out.update(status="bench_error", reason=f"{type(exc).__name__}: {exc}")
    finally:
        ev.close()
    out["wall_s"] = time.monotonic() - t0
    return out


def run(args) -> int:
    tasks = sorted(p for p in Path(args.tasks).iterdir() if (p / "task.json").is_file())
    i, n = (int(x) for x in args.shard.split("/"))
    mine = tasks[i::n]
    done = set()
    out = Path(args.out)
    if out.is_file():
        done = {json.loads(line)["task"] for line in out.read_text().splitlines() if line.strip()}
    with out.open("a", encoding="utf-8") as f:
        for task_dir in mine:
            if task_dir.name in done:
                continue
            row = measure(task_dir, task_dir.name in set(args.decide or []), args.device)
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"{row['task']}: {row.get('status')} {row.get('reason', '')[:160]}", flush=True)
    return 0


def gb(n: float | None) -> str:
    return "—" if n is None else f"{n / 2**30:.1f}"


def summarize(paths: list[str]) -> int:
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines() if line.strip()]
    rows.sort(key=lambda r: r.get("call_bytes") or 0, reverse=True)
    ok = [r for r in rows if r.get("status") == "ok"]
    oom = [r for r in rows if "out of memory" in (r.get("reason") or "") and r.get("status") != "ok"]
    print(f"{len(rows)} tasks; {len(ok)} evaluated (correctness at every shape and one timing block at the native size); "
          f"{len(oom)} ran out of memory; {sum(r.get('status') == 'refused' for r in rows)} refused by the memory plan")
    if ok:
        big = max(ok, key=lambda r: r["call_bytes"])
        print(f"largest that evaluated: {big['task']}, {gb(big['call_bytes'])} GiB per call, peak {gb(big.get('peak_memory_bytes'))} GiB")
    print("\n| task | status | GiB per call | sets | peak GiB | block wall s | retries | A/A decision | decision wall s | reason |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        decision = f"{r.get('decision')} ({r.get('decision_blocks')} blocks)" if r.get("decision_status") else ""
        reason = "" if r.get("status") == "ok" else (r.get("reason") or "")[:140].replace("|", "/")
        wall = f"{r['decision_wall_s']:.0f}" if r.get("decision_wall_s") else ""
        print(f"| {r['task']} | {r.get('status')} | {gb(r.get('call_bytes'))} | {r.get('rotating_sets', '')} | "
              f"{gb(r.get('peak_memory_bytes'))} | {r.get('block_wall_s', 0):.1f} | {len(r.get('memory_retries') or [])} | "
              f"{decision} | {wall} | {reason} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="?")
    p.add_argument("--out")
    p.add_argument("--shard", default="0/1")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a quick look at interpreter sizes")
    p.add_argument("--decide", nargs="*", help="tasks that also get a whole A/A gate decision")
    p.add_argument("--summarize", nargs="+", metavar="JSONL")
    args = p.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    if not args.tasks or not args.out:
        p.error("TASKS_DIR and --out are needed")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
