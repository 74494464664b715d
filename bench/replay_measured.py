"""Replay the built-in search over knob tables measured on the GPU (the JSON bench/sweep writes), on
any machine: the policy's side of the search needs no GPU once the latencies are known.

The space is rebuilt with today's transformation rules, so a configuration the rules now exclude (for
example loads with two cache hints, which ptxas rejects) is no longer proposed; the measured latency of
every remaining configuration is looked up by its knob assignment.

    python bench/replay_measured.py SWEEP_DIR [--seeds 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sweep.replay import replay_payloads, replay_task, summarize_replay  # noqa: E402
from bench.sweep.space import build_space  # noqa: E402
from kernel_tui.core.proposers.search import state_key  # noqa: E402
from kernel_tui.core.task import load_task  # noqa: E402


def remapped(sweep: dict, configs: list) -> dict:
    """The saved sweep with its records re-indexed into the rebuilt space (records of configurations
    the rules now exclude are dropped)."""
    index_of = {state_key(c.assignment): c.index for c in configs}
    old_key = {r["index"]: state_key(r["assignment"]) for r in sweep["configs"]}
    records = [{**r, "index": index_of[old_key[r["index"]]]} for r in sweep["configs"] if old_key[r["index"]] in index_of]
    retime = [{**e, "index": index_of[old_key[e["index"]]]} for e in sweep.get("retime", [])
              if old_key.get(e["index"]) in index_of]
    return {**sweep, "configs": records, "retime": retime, "start_index": index_of[old_key[sweep["start_index"]]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep_dir", type=Path)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = {}
    for name in ("vector_add", "matmul"):
        path = args.sweep_dir / f"{name}.json"
        if not path.exists():
            continue
        sweep = json.loads(path.read_text())
        task = load_task(ROOT / "fixtures" / name)
        configs = build_space(task.baseline_source, sweep["values"])
        payloads = replay_payloads(name, task, configs, remapped(sweep, configs), args.seeds)
        results = [replay_task(p) for p in payloads]
        summary = summarize_replay(name, payloads[0], results, True)
        result[name] = summary
        found = sorted(r["evaluations_to_target"] if r["evaluations_to_target"] is not None else -1 for r in results)
        print(f"{name}: space {summary['sweep_size']}, reached {summary['reached']}/{len(results)}, "
              f"median {summary['median_evaluations']}, max {summary['max_evaluations']}, "
              f"target {summary['target_evaluations']}; per seed {found} (-1: never)", flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
