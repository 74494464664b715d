"""The built-in search replayed over a committed sweep's measured tables, on any machine (no GPU):

    python -m bench.sweep.replay_recorded bench/results/2026-11-29-h200-benchmark/sweep [--seeds 20] [task ...]

Prints, per task, how many seeds reached within 3% of the sweep's best and the evaluations each took."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench.sweep.replay import replay_payloads, replay_task, summarize_replay
from bench.sweep.settings import FIXTURES
from bench.sweep.space import build_space


def main(argv: list[str] | None = None) -> int:
    from kernel_tui.core.task import load_task

    p = argparse.ArgumentParser(prog="python -m bench.sweep.replay_recorded", description=__doc__.splitlines()[0])
    p.add_argument("sweep_dir", type=Path, help="a sweep's results folder (holds <task>.json)")
    p.add_argument("tasks", nargs="*", default=["vector_add", "matmul"])
    p.add_argument("--seeds", type=int, default=20)
    args = p.parse_args(argv)
    for name in args.tasks:
        data = json.loads((args.sweep_dir / f"{name}.json").read_text(encoding="utf-8"))
        task = load_task(FIXTURES / name)
        payloads = replay_payloads(name, task, build_space(task.baseline_source, data["values"]), data, args.seeds)
        if payloads is None:
            print(f"{name}: no measured table")
            continue
        results = [replay_task(payload) for payload in payloads]
        s = summarize_replay(name, payloads[0], results, True)
        steps = [r["evaluations_to_target"] for r in results if r.get("evaluations_to_target") is not None]
        print(f"{name}: {s['reached']}/{len(results)} seeds within 3% of the sweep best; evaluations median "
              f"{s['median_evaluations']}, mean {statistics.fmean(steps):.1f}, max {s['max_evaluations']} "
              f"(sweep of {s['sweep_size']}); per seed {[r.get('evaluations_to_target') for r in results]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
