"""What a window costs beyond its calls: per-call time against calls per window (K), per side.

The judge times K calls back to back per window and subtracts the handoff a probe worker measured. On an
H200 the per-call time still fell with K as c + r/K (r ≈ 32-38 µs per window, not the same for every kernel:
`results/2026-12-02-h200-judge/`). This times one candidate against the task's baseline at fixed K (the
window length set so low that K is the plan's inner repeats exactly) and fits, per side, window time =
c·K + r by least squares: c is the per-call time a steady stream of calls sees, r what a window adds.

    python bench/window_residual.py --task fixtures/vector_add --candidate bench/candidates/vector_add_block1024.py \
        --ks 1,2,4,8,16,32 --pairs 10 --device cuda --out OUT.json

Resumes: K values already in OUT.json are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("KERNEL_TUI_WINDOW_SECONDS", "1e-9")  # K = the plan's inner repeats (read at import)

from kernel_tui.core.evaluator import Evaluator, Status  # noqa: E402
from kernel_tui.core.evaluator.models import TimingPlan  # noqa: E402
from kernel_tui.core.task import load_task  # noqa: E402


def fit(points: list[tuple[int, float]]) -> dict:
    """Least squares of window seconds = c·K + r over (K, per-call seconds) points."""
    xs = [k for k, _ in points]
    ys = [k * t for k, t in points]
    n = len(points)
    if n < 2 or len(set(xs)) < 2:
        return {"c": None, "r": None}
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    c = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return {"c": c, "r": my - c * mx}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--ks", default="1,2,4,8,16,32")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    rows = json.loads(out.read_text()) if out.is_file() else {"runs": {}}
    task = load_task(Path(args.task))
    candidate = Path(args.candidate).read_text()
    ev = Evaluator(task, device=args.device)
    try:
        for k in (int(x) for x in args.ks.split(",")):
            if str(k) in rows["runs"]:
                continue
            plan = TimingPlan(pairs=args.pairs, inner_repeats=k, warmup=3, seed=k)
            res = ev.timing_run(candidate, task.baseline_source, block=k, correctness=False, plan=plan)
            if res.status is not Status.ok or res.timing is None:
                rows["runs"][str(k)] = {"status": res.status.value, "reason": res.reason}
            else:
                tb = res.timing
                rows["runs"][str(k)] = {
                    "status": "ok", "k": tb.inner_repeats, "incumbent_s": statistics.median(tb.incumbent),
                    "candidate_s": statistics.median(tb.candidate), "handoff_s": tb.handoff_seconds,
                }
            print(f"K={k}: {rows['runs'][str(k)]}", flush=True)
            out.write_text(json.dumps(rows, indent=2))
    finally:
        ev.close()
    ok = [r for r in rows["runs"].values() if r.get("status") == "ok"]
    rows["fit"] = {side: fit([(r["k"], r[f"{side}_s"]) for r in ok]) for side in ("incumbent", "candidate")}
    out.write_text(json.dumps(rows, indent=2))
    print(json.dumps(rows["fit"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
