"""Profiles on a GPU: wall time per profile, ncu's DRAM bytes against the cost model's, ncu's kernel time
against the evaluator's latency, for the baseline of each task given (fixtures by default).

    python bench/profile_versions.py [TASK_DIR ...] --out FILE.jsonl [--device cuda]

Each task gets a fresh workspace; its baseline is timed against itself in one evaluation process (the
evaluator's latency: the median of one block) and profiled once through the same path an accepted version
takes (Profiler.profile: the confined worker under ncu). One JSON line per task, written as it is known.
Targets (issue: profiles): a profile within 10 s for vector_add and matmul; DRAM bytes within 10% of the cost
model for the memory-bound fixtures; kernel time within 5% of the evaluator's latency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = ["vector_add", "matmul", "softmax", "rmsnorm", "silu_mul", "row_sum"]


def measure(task_dir: Path, device: str) -> dict:
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.profile.store import Profiler
    from kernel_tui.core.workspace import Workspace

    out: dict = {"task": task_dir.name}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.create(task_dir, path=Path(tmp) / "ws")
        ev = Evaluator(ws.task, device=device, workdir=Path(tmp) / "work")
        try:
            spec = ws.task.spec
            shape = spec.timing_shape(ev.device)
            flops, nbytes = spec.cost_at(shape.dims)
            out.update(shape=shape.name, cost_model_bytes=nbytes, cost_model_flops=flops)
            source = ws.task.baseline_source
            trusted = ws.task.baseline_is_pytorch
            block = ev.timing_run(source, source, block=0, correctness=True, trusted=trusted)
            if block.timing is not None:
                out["evaluator_latency_s"] = statistics.median(block.timing.candidate)
                out["timing_method"] = block.timing.method
            profiler = Profiler(ws, ev)
            if device == "cpu":  # the plumbing only: a CPU has no counters
                profiler.off = None
            t0 = time.monotonic()
            record = profiler.profile(ws.baseline.hexsha)
            out.update(profile_wall_s=time.monotonic() - t0, status=record.status, reason=record.reason,
                       metrics_used=len(profiler.metrics))
            p = record.profile
            if p is not None:
                out.update(kernels=[k.name for k in p.kernels], ncu_duration_s=p.total_duration_s,
                           ncu_dram_bytes=p.total_dram_bytes, dram_pct=p.dram_pct, sm_pct=p.sm_pct,
                           tensor_pct=p.tensor_pct, occupancy_pct=p.occupancy_pct, bottleneck=p.bottleneck_hint(),
                           metrics_missing=p.metrics_missing)
                if p.total_dram_bytes and nbytes:
                    out["dram_bytes_over_cost_model"] = p.total_dram_bytes / nbytes
                if p.total_duration_s and out.get("evaluator_latency_s"):
                    out["ncu_time_over_evaluator_latency"] = p.total_duration_s / out["evaluator_latency_s"]
        except Exception as exc:  # noqa: BLE001 - one line per task, whatever happened
            out.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        finally:
            ev.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="*", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = p.parse_args(argv)
    tasks = args.tasks or [ROOT / "fixtures" / name for name in DEFAULT_TASKS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as f:
        for task in tasks:
            row = measure(task, args.device)
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps({k: row.get(k) for k in ("task", "status", "profile_wall_s", "dram_bytes_over_cost_model",
                                                       "ncu_time_over_evaluator_latency", "bottleneck", "reason")}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
