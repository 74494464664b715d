"""What the copy into the output tensors cost the PyTorch side, per task: eager timed as a user calls it
(returning its results, the copy made after the timed region) against eager copying its results into the
outputs inside the timed call (how the PyTorch sides were timed before).

    python bench/pytorch_copy_share.py --tasks DIR_OR_TASK [DIR_OR_TASK ...] --out OUT.json [--device cuda]
        [--runs 3]

Each argument is a task directory, or a folder of task directories (an imported KernelBench suite's
tasks). For each task, compare() times the copying eager (incumbent) against the returning eager
(candidate) in `runs` fresh processes: S = copying time / returning time, the factor by which the copy
inflated eager. S near 1 on a matmul and near 2 on a one-input elementwise op says the timed region of the
returning side holds no copy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernel_tui.core.compare import compare  # noqa: E402
from kernel_tui.core.evaluator import Evaluator  # noqa: E402
from kernel_tui.core.suite.sources import pytorch_source  # noqa: E402
from kernel_tui.core.task import Task, load_task  # noqa: E402

COPY = '''
    if not isinstance(results, (tuple, list)):
        results = (results,)
    for position, result in zip({positions}, results):
        args[position].copy_(result)
'''


def copying_source(task: Task) -> str:
    """The eager side as it was timed before: the copy inside the launch."""
    spec = task.spec
    positions = [spec.launch_arguments.index(name) for name in spec.output_order()]
    returning = pytorch_source(task, "eager")
    marker = "    return results\n"
    assert marker in returning, "the eager source changed shape"
    return returning.replace(marker, COPY.format(positions=positions), 1)


def task_dirs(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        out += [p] if (p / "task.json").is_file() else sorted(d for d in p.iterdir() if (d / "task.json").is_file())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out = Path(args.out)
    rows = json.loads(out.read_text()) if out.is_file() else {}  # resumes: tasks measured before are kept
    for d in task_dirs(args.tasks):
        if d.name in rows:
            continue
        task = load_task(d)
        returning, copying = pytorch_source(task, "eager"), copying_source(task)
        ev = Evaluator(task, device=args.device, enforce_policy=False, returning=[returning])
        try:
            c = compare(ev, copying, returning, runs=args.runs, trusted=True)
        finally:
            ev.close()
        rows[d.name] = {
            "status": c.status.value, "reason": c.reason, "copy_factor": c.speedup,
            "returning_median_s": [r.candidate_median for r in c.runs],
            "copying_median_s": [r.incumbent_median for r in c.runs], "timing_label": c.timing_label,
        }
        print(f"{d.name}: {c.status.value}: copy factor {c.speedup}", flush=True)
        out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
