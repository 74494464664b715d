"""What one gate decision costs: wall seconds per evaluation, split into compile, correctness, timing
and process overhead.

Either evaluates fresh candidates (one transformation each of the baseline, so every one compiles a
new kernel, as in a real round) through one Evaluator, as a session does; or reads the result.json of
every evaluation of an existing workspace (a real run).

  python bench/evaluator_cost.py --task matmul --count 4 --device cuda --out DIR
  python bench/evaluator_cost.py --workspace WS --out DIR --name vector_add-search
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
sys.path.insert(0, str(ROOT))

from kernel_tui.core.evaluator import Evaluator  # noqa: E402
from kernel_tui.core.evaluator.models import EvalResult  # noqa: E402
from kernel_tui.core.proposers.transforms import analyze  # noqa: E402
from kernel_tui.core.task import load_task  # noqa: E402

KINDS = ("num_warps", "num_stages", "block")


def split(result: EvalResult) -> dict:
    s = result.seconds
    compile_s = s.get("first_call", 0.0)  # the candidate's first call: Triton JIT-compiles it
    row = {
        "status": result.status.value, "decision": result.verdict.decision if result.verdict else None,
        "accepted": result.accepted, "blocks": len(result.blocks), "confirmation_blocks": len(result.confirmation),
        "wall": s.get("wall"), "compile": compile_s,
        "correctness": max(0.0, s.get("correctness", 0.0) - compile_s), "timing": s.get("timing", 0.0),
        "load": s.get("load", 0.0),
    }
    if row["wall"] is not None:
        row["process_overhead"] = max(0.0, row["wall"] - s.get("total", 0.0))
    return row


def candidates(source: str, count: int) -> list[tuple[str, str]]:
    """`count` single transformations of `source`, spread over the knob kinds."""
    a = analyze(source)
    by_kind = {k: [x for x in a.actions() if x.kind == k] for k in KINDS}
    picked = []
    while len(picked) < count and any(by_kind.values()):
        for k in KINDS:
            if by_kind[k] and len(picked) < count:
                act = by_kind[k].pop(len(by_kind[k]) // 2)
                picked.append((act.change, a.apply(act)))
    return picked


def summarize(rows: list[dict]) -> dict:
    ok = [r for r in rows if r.get("wall") is not None]
    out = {"evaluations": len(rows)}
    if not ok:
        return out
    walls = sorted(r["wall"] for r in ok)
    out["wall_median_s"] = statistics.median(walls)
    out["wall_p90_s"] = walls[min(len(walls) - 1, round(0.9 * (len(walls) - 1)))]
    for part in ("compile", "correctness", "timing", "process_overhead", "load"):
        vals = [r[part] for r in ok if r.get(part) is not None]
        if vals:
            out[f"{part}_median_s"] = statistics.median(vals)
    out["blocks_median"] = statistics.median(r["blocks"] + r["confirmation_blocks"] for r in ok)
    return out


def from_workspace(ws: Path) -> list[dict]:
    rows = []
    for path in sorted((ws / "evaluations").glob("*/result.json")):
        result = EvalResult.model_validate_json(path.read_text())
        rows.append({"evaluation": path.parent.name, **split(result)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task")
    ap.add_argument("--count", type=int, default=4)
    ap.add_argument("--workspace")
    ap.add_argument("--name")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="bench/results/raw")
    ap.add_argument("--budget", type=float, default=300)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.workspace:
        rows = from_workspace(Path(args.workspace))
        name = args.name or Path(args.workspace).name
    else:
        task = load_task(ROOT / "fixtures" / args.task)
        name = args.name or args.task
        ev = Evaluator(task, device=args.device, workdir=Path(tempfile.mkdtemp(prefix="cost-")))
        end = time.monotonic() + args.budget
        rows = []
        try:
            for change, source in candidates(task.baseline_source, args.count):
                if time.monotonic() > end:
                    break
                res = ev.evaluate(source)
                rows.append({"change": change, **split(res), "reason": res.reason})
                print(f"{name}: {change}: {res.status.value} {rows[-1]['wall']:.1f} s — {res.reason}", flush=True)
        finally:
            ev.close()
    result = {"name": name, "summary": summarize(rows), "rows": rows}
    (out / f"evaluator_cost_{name}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
