"""The built-in search replayed over a committed sweep's measured tables, on any machine (no GPU):

    python -m bench.sweep.replay_recorded bench/results/2026-11-29-h200-benchmark/sweep [--seeds 20] [task ...]

Prints, per task, how many seeds reached within 3% (`--within`) of the sweep's best and the evaluations each took, and
how many proposals changed only knobs the sweep did not measure (measured as no effect, see `replay`).
`--unswept cut --no-bottleneck` replays as before those were added: unswept knobs not offered, no
bottleneck told."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench.sweep.replay import hardware_from, replay_payloads, replay_task, summarize_replay
from bench.sweep.settings import FIXTURES, TARGETS
from bench.sweep.space import build_space


def recorded_hardware(sweep_dir: Path) -> dict | None:
    """The roofs the sweep measured: copy_bandwidth.json and torch.matmul in torch_references.json."""
    from kernel_tui.core.task import load_task

    def read(name: str) -> dict:
        path = sweep_dir / name
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    bandwidth = read("copy_bandwidth.json").get("bandwidth_bytes_per_s")
    ref = (((read("torch_references.json").get("tasks") or {}).get("matmul") or {}).get("references") or {}).get("torch.matmul")
    torch_s = ref.get("kernel_s") if isinstance(ref, dict) and ref.get("status") == "ok" else None
    return hardware_from(bandwidth, torch_s, load_task(FIXTURES / "matmul"))


def _report(name: str, s: dict, results: list[dict], within: float, start: str | None) -> None:
    steps = [r["evaluations_to_target"] for r in results if r.get("evaluations_to_target") is not None]
    mean = f"{statistics.fmean(steps):.1f}" if steps else "-"
    print(f"{name}{f' from {start}' if start else ''} ({s['start_bottleneck'] or 'no'} bottleneck at the start): "
          f"{s['reached']}/{len(results)} seeds within {within:.1%} of the sweep best; evaluations median "
          f"{s['median_evaluations']}, mean {mean}, max {s['max_evaluations']} "
          f"(sweep of {s['sweep_size']}); per seed {[r.get('evaluations_to_target') for r in results]}; "
          f"proposals of unswept knobs only (no effect) {s['no_effect_proposals']}", flush=True)


def main(argv: list[str] | None = None) -> int:
    from kernel_tui.core.task import load_task

    p = argparse.ArgumentParser(prog="python -m bench.sweep.replay_recorded", description=__doc__.splitlines()[0])
    p.add_argument("sweep_dir", type=Path, help="a sweep's results folder (holds <task>.json)")
    p.add_argument("tasks", nargs="*", default=["vector_add", "matmul"])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--unswept", choices=("no-effect", "cut"), default="no-effect",
                   help="knobs the sweep did not measure: offered and measured as no effect (default), or not offered")
    p.add_argument("--within", type=float, default=TARGETS["within"],
                   help="the target: latency within this fraction above the sweep best (0: the best; 0.0526: 95%% of its speed)")
    p.add_argument("--start", type=int, nargs="+", metavar="INDEX",
                   help="start from these configurations of the table (their index in <task>.json), one replay each, "
                        "instead of the sweep's own start")
    p.add_argument("--no-bottleneck", action="store_true", help="tell the search no bottleneck (as off a GPU)")
    args = p.parse_args(argv)
    hardware = None if args.no_bottleneck else recorded_hardware(args.sweep_dir)
    for name in args.tasks:
        data = json.loads((args.sweep_dir / f"{name}.json").read_text(encoding="utf-8"))
        task = load_task(FIXTURES / name)
        space = build_space(task.baseline_source, data["values"])
        for start in args.start or [data.get("start_index", 0)]:
            payloads = replay_payloads(name, task, space, {**data, "start_index": start}, args.seeds,
                                       hardware=hardware, unswept=args.unswept, within=args.within)
            if payloads is None:
                print(f"{name}: no measured table" + (f" or no measured start {start}" if args.start else ""))
                continue
            results = [replay_task(payload) for payload in payloads]
            _report(name, summarize_replay(name, payloads[0], results, True), results, args.within,
                    next(c.label for c in space if c.index == start) if args.start else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
