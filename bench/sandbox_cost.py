"""What the worker sandbox costs per gate decision, and that A/A gates still hold with it on.

Two evaluators on one task, one with the sandbox and one without (KERNEL_TUI_SANDBOX=0), take turns
(ABAB..., the order flipped each round) deciding the baseline against itself, so drift of the machine
falls on both alike. Per decision: wall seconds, worker processes, the verdict; per side: medians and the
cost ratio per decision and per worker process.

  python bench/sandbox_cost.py --task vector_add --pairs 10 --device cuda --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernel_tui.core.evaluator import Evaluator  # noqa: E402
from kernel_tui.core.task import load_task  # noqa: E402


def evaluator(task, device: str, sandbox: bool, workdir: Path) -> Evaluator:
    previous = os.environ.get("KERNEL_TUI_SANDBOX")
    os.environ["KERNEL_TUI_SANDBOX"] = "1" if sandbox else "0"
    try:  # the switch is read when the evaluator is built
        return Evaluator(task, device=device, workdir=workdir)
    finally:
        if previous is None:
            os.environ.pop("KERNEL_TUI_SANDBOX")
        else:
            os.environ["KERNEL_TUI_SANDBOX"] = previous


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="vector_add")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=1e9, help="stop starting new pairs after this many seconds")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = load_task(ROOT / "fixtures" / args.task)
    work = Path(tempfile.mkdtemp(prefix="sandbox-cost-"))
    sides = {on: evaluator(task, args.device, on, work / ("on" if on else "off")) for on in (True, False)}
    rows = []
    started = time.monotonic()
    with open(args.out / f"sandbox_cost_{args.task}.jsonl", "w") as log:
        for i in range(args.pairs):
            if time.monotonic() - started > args.budget:
                break
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                t0 = time.monotonic()
                r = sides[on].evaluate(task.baseline_source, task.baseline_source)
                wall = time.monotonic() - t0
                row = {
                    "pair": i, "sandbox": on, "wall": wall, "status": r.status.value,
                    "processes": len(r.blocks) + len(r.confirmation), "accepted": r.accepted,
                    "decision": r.verdict.decision if r.verdict else None,
                    "improvement": r.verdict.improvement if r.verdict else None,
                    "report": r.sandbox.summary() if r.sandbox else None, "reason": r.reason,
                }
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                log.flush()
    for ev in sides.values():
        ev.close()
    summary = {"task": args.task, "device": args.device}
    for on in (True, False):
        mine = [r for r in rows if r["sandbox"] is on and r["status"] == "ok"]
        key = "on" if on else "off"
        summary[key] = {
            "decisions": len(mine), "accepted": sum(r["accepted"] for r in mine),
            "failed": sum(r["sandbox"] is on and r["status"] != "ok" for r in rows),
            "median_wall": statistics.median(r["wall"] for r in mine) if mine else None,
            "median_wall_per_process": statistics.median(r["wall"] / max(1, r["processes"]) for r in mine) if mine else None,
        }
    on, off = summary["on"], summary["off"]
    if on["median_wall"] and off["median_wall"]:
        summary["cost_per_decision"] = on["median_wall"] / off["median_wall"] - 1
        summary["cost_per_process"] = on["median_wall_per_process"] / off["median_wall_per_process"] - 1
    summary["report"] = next((r["report"] for r in rows if r["sandbox"]), None)
    (args.out / f"sandbox_cost_{args.task}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
