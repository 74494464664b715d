"""Does the state the L2 flush leaves behind change a kernel's time? The evaluator flushes L2 by writing a
buffer larger than it (`zero_`), which leaves L2 full of dirty lines that the timed kernel must write back
as it evicts them; Nsight Compute starts each profiled kernel from clean caches. This times each fixture's
baseline at its benchmark shape after three flushes: a write (the evaluator's), a write then a read of a
second buffer (L2 left clean), and no flush at all.

    python bench/l2_flush_state.py [TASK_DIR ...] --out FILE.jsonl [--calls 200]

One JSON line per task: the median kernel time (CUDA events around one call) after each flush.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_TASKS = ["vector_add", "matmul", "softmax", "rmsnorm", "silu_mul", "row_sum"]
FLUSH_BYTES = 256 * 2**20


def measure(task_dir: Path, calls: int) -> dict:
    import torch

    from kernel_tui.core.evaluator.harness import ArgumentSet, load_module
    from kernel_tui.core.task import load_task

    task = load_task(task_dir)
    spec = task.spec
    shape = spec.timing_shape("cuda")
    with tempfile.TemporaryDirectory() as tmp:
        module = load_module(task.baseline_source, Path(tmp), "baseline")
        fn = getattr(module, spec.entrypoint)
        inputs = ArgumentSet.build(spec, shape.dims, "cuda", 0)
        dirty = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        clean = torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        sink = torch.empty(1, dtype=torch.int64, device="cuda")

        def flushes(kind: str) -> None:
            if kind in ("write", "write+read"):
                dirty.zero_()
            if kind == "write+read":
                sink.copy_(clean.sum(dtype=torch.int64).view(1))

        for _ in range(5):
            fn(*inputs.args())
        torch.cuda.synchronize()
        out: dict = {"task": task_dir.name, "shape": shape.name}
        for kind in ("write", "write+read", "none"):
            times = []
            for _ in range(calls):
                flushes(kind)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*inputs.args())
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e-3)
            out[f"{kind}_s"] = statistics.median(times)
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="*", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--calls", type=int, default=200)
    args = p.parse_args(argv)
    tasks = args.tasks or [ROOT / "fixtures" / name for name in DEFAULT_TASKS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as f:
        for task in tasks:
            try:
                row = measure(task, args.calls)
            except Exception as exc:  # noqa: BLE001 - one line per task, whatever happened
                row = {"task": task.name, "status": "error", "reason": f"{type(exc).__name__}: {exc}"}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
