"""Profiles on a GPU: wall time per profile, ncu's DRAM bytes against the cost model's, ncu's kernel time
against the evaluator's latency, for the baseline of each task given (fixtures by default).

    python bench/profile_versions.py [TASK_DIR ...] --out FILE.jsonl [--device cuda]

Each task gets a fresh workspace; its baseline is timed against itself in one evaluation process (the
evaluator's latency: the median of one block) and profiled once through the same path an accepted version
takes (Profiler.profile: the confined worker under ncu). One JSON line per task, written as it is known.
Targets (issue: profiles): a profile within 10 s for vector_add and matmul; DRAM bytes within 10% of the cost
model for the memory-bound fixtures; kernel time within 5% of the evaluator's latency.

A failed profile keeps the tails of ncu's log and of the profiled worker's console in its row. With
--unconfined-retry, a profile that failed in the sandbox is taken once more with the sandbox off
(KERNEL_TUI_SANDBOX=0; the fixtures' own baselines only), to tell the sandbox's part from ncu's.
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
DEFAULT_TASKS = ["vector_add", "matmul", "softmax", "rmsnorm", "silu_mul", "row_sum"]


def _tails(workdir: Path, limit: int = 1500) -> dict:
    """The last profiled worker's files: ncu's log and the console, each cut to its last `limit` chars."""
    runs = sorted((d for d in workdir.glob("worker-*") if (d / "ncu.log").exists() or (d / "stdout.log").exists()),
                  key=lambda d: d.stat().st_mtime)
    if not runs:
        return {}
    out = {}
    for name in ("ncu.log", "stdout.log", "stderr.log"):
        path = runs[-1] / name
        if path.exists():
            out[name] = path.read_text(errors="replace")[-limit:]
    return out


def measure(task_dir: Path, device: str, timeout: float | None = None) -> dict:
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.profile.store import Profiler
    from kernel_tui.core.workspace import Workspace

    out: dict = {"task": task_dir.name}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.create(task_dir, path=Path(tmp) / "ws")
        ev = Evaluator(ws.task, device=device, workdir=Path(tmp) / "work", timeout=timeout)
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
                       metrics_used=len(profiler.metrics), sandbox=ev._sandbox is not None)
            if record.status != "ok":
                out["diagnostics"] = _tails(Path(tmp) / "work")
            p = record.profile
            if p is not None:
                out.update(kernels=[k.name for k in p.kernels], ncu_duration_s=p.total_duration_s,
                           ncu_dram_bytes=p.total_dram_bytes, dram_pct=p.dram_pct, sm_pct=p.sm_pct,
                           tensor_pct=p.tensor_pct, occupancy_pct=p.occupancy_pct, bottleneck=p.bottleneck_hint(),
                           metrics_missing=p.metrics_missing,
                           ncu_dram_read_bytes=sum(k.dram_read_bytes or 0 for k in p.kernels),
                           ncu_dram_write_bytes=sum(k.dram_write_bytes or 0 for k in p.kernels))
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
    p.add_argument("--profile-timeout", type=float,
                   help="seconds an evaluation or profiled run may take (default: the task's, and 300 s for a profile)")
    p.add_argument("--unconfined-retry", action="store_true", help="retake a failed profile with the sandbox off")
    args = p.parse_args(argv)
    if args.profile_timeout:
        import kernel_tui.core.evaluator.evaluator as evaluator_module

        evaluator_module.PROFILE_TIMEOUT = args.profile_timeout
    tasks = args.tasks or [ROOT / "fixtures" / name for name in DEFAULT_TASKS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as f:
        for task in tasks:
            row = measure(task, args.device, args.profile_timeout)
            if row.get("status") != "ok" and args.unconfined_retry:
                os.environ["KERNEL_TUI_SANDBOX"] = "0"
                try:
                    row["unconfined"] = measure(task, args.device, args.profile_timeout)
                finally:
                    del os.environ["KERNEL_TUI_SANDBOX"]
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps({k: row.get(k) for k in ("task", "status", "profile_wall_s", "dram_bytes_over_cost_model",
                                                       "ncu_time_over_evaluator_latency", "bottleneck", "reason")}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
