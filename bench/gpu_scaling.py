"""Evaluations over several GPUs of one host: throughput, A/A false accepts with every GPU busy, and whether a
neighbour's load moves a gate's estimate.

    python bench/gpu_scaling.py --gpus 0,1 --out DIR [--evaluations 16] [--aa 200] [--known 10] [--budget 1500]

1. Evaluations per hour on one GPU and on all of them: the same vector_add candidate (block 256 -> 1024)
   against the baseline, run through the lease pool (target: 2 GPUs >= 1.8x one).
2. A/A: the baseline gated against itself, spread over every GPU at once (target: <= 1% accepted, >= 200 gates).
3. The known change's estimate on the first GPU alone, then again while the second GPU runs a heavy matmul
   loop (target: means within 1 percentage point).
Each part writes DIR/<part>.json as soon as it ends; --device cpu runs the plumbing on interpreter slots.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "vector_add"
KNOWN = ROOT / "tests" / "candidates" / "vector_add" / "01_block_1024.py"
HEAVY = (
    "import torch, time\n"
    "a = torch.randn(8192, 8192, device='cuda', dtype=torch.float16)\n"
    "end = time.time() + float(__import__('sys').argv[1])\n"
    "while time.time() < end:\n"
    "    (a @ a).sum().item()\n"
)


def evaluators(devices: list[str], device: str, workdir: Path):
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.gpus import gpu_of
    from kernel_tui.core.task import load_task

    task = load_task(FIXTURE)
    return {d: Evaluator(task, device=device, workdir=workdir / f"ev-{d.replace(':', '-')}", gpu=gpu_of(d))
            for d in devices}, task


def gate_many(pool, evs: dict, candidate: str, incumbent: str, n: int) -> tuple[list[dict], float]:
    """n gate decisions of candidate vs incumbent over the pool; their outcomes and the wall time."""
    t0 = time.monotonic()

    def one(k: int, device: str) -> dict:
        r = evs[device].evaluate(candidate, incumbent, seed=k)
        v = r.verdict
        return {"device": device, "status": r.status.value, "accepted": r.accepted,
                "improvement": v.improvement if v else None, "blocks": len(r.blocks) + len(r.confirmation)}

    outcomes = pool.run(list(range(n)), one)
    rows = [o.value if o.ok else {"error": str(o.error)} for o in outcomes]
    return rows, time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    from kernel_tui.core.gpus import GpuPool

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", default="all")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--evaluations", type=int, default=16)
    p.add_argument("--aa", type=int, default=200)
    p.add_argument("--known", type=int, default=10)
    p.add_argument("--budget", type=float, default=1500.0, help="seconds for the whole run")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget
    pool_all = GpuPool.detect(args.gpus, cpu_slots=2, health_check=None)
    devices = pool_all.devices
    evs, task = evaluators(devices, args.device, args.out / "work")
    baseline, known = task.baseline_source, KNOWN.read_text(encoding="utf-8")

    def write(name: str, data: dict) -> None:
        (args.out / f"{name}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        print(name, json.dumps({k: v for k, v in data.items() if k != "rows"}), flush=True)

    try:
        # 1. throughput
        one = GpuPool(devices[:1])
        rows1, wall1 = gate_many(one, evs, known, baseline, args.evaluations)
        rows2, wall2 = gate_many(GpuPool(devices), evs, known, baseline, args.evaluations)
        per_hour = (3600 * args.evaluations / wall1, 3600 * args.evaluations / wall2)
        write("throughput", {"devices": devices, "evaluations": args.evaluations, "wall_s": [wall1, wall2],
                             "per_hour": per_hour, "speedup": per_hour[1] / per_hour[0], "target": 1.8,
                             "rows": rows1 + rows2})
        # 2. A/A with every GPU busy
        if time.monotonic() < deadline:
            rows, wall = gate_many(GpuPool(devices), evs, baseline, baseline, args.aa)
            decided = [r for r in rows if "accepted" in r]
            write("aa_all_busy", {"gates": len(decided), "accepted": sum(r["accepted"] for r in decided),
                                  "false_accept_rate": sum(r["accepted"] for r in decided) / max(1, len(decided)),
                                  "wall_s": wall, "target": 0.01, "rows": rows})
        # 3. the known change on the first GPU, idle neighbour vs busy neighbour
        if time.monotonic() < deadline and len(devices) > 1:
            first = GpuPool(devices[:1])
            idle, _ = gate_many(first, evs, known, baseline, args.known)
            heavy = None
            if args.device == "cuda":
                env = {**os.environ, "CUDA_VISIBLE_DEVICES": devices[1]}
                heavy = subprocess.Popen([sys.executable, "-c", HEAVY, str(max(60.0, deadline - time.monotonic()))], env=env)
                time.sleep(5)  # the matmul loop is running before the first measurement
            try:
                busy, _ = gate_many(first, evs, known, baseline, args.known)
            finally:
                if heavy is not None:
                    heavy.kill()
            means = [statistics.fmean(r["improvement"] for r in rows if r.get("improvement") is not None)
                     for rows in (idle, busy)]
            write("neighbour_load", {"gpu": devices[0], "neighbour": devices[1], "mean_improvement": means,
                                     "difference_pp": 100 * (means[1] - means[0]), "target_pp": 1.0,
                                     "rows": {"idle": idle, "busy": busy}})
    finally:
        for ev in evs.values():
            ev.close()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
