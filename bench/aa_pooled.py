"""A/A gates pooled over several GPU runs of `gate_calibration.py --parts aa`, replayed two ways.

    python bench/aa_pooled.py RAW.json.gz [RAW.json.gz ...] --out DIR [--resampled 2000] [--seed 0]

Each raw file holds, per fixture, fresh judge processes cut into blocks of 25 pairs (the same design in
every file pooled: say which trees made them). Two replays with the real `gate.decide`:

- disjoint: the blocks taken column-wise (block j of every process, then block j + 1), cut into consecutive
  gates that share no block: few gates, and neighbours share processes;
- resampled: each gate draws its processes in a random order, never one twice, and one random block from
  each, as a live evaluation does (every block a fresh process). Many gates over the same processes: their
  false-accept rate estimates the gate's under the measured spread (the process effect included), but the
  independent information is the number of processes, which the summary states beside it.

Writes DIR/aa_pooled.json and DIR/aa_pooled.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gate_calibration import binomial, column_order, process_effect, replay_gates  # noqa: E402

from kernel_tui.core import gate  # noqa: E402
from kernel_tui.core.evaluator.gating import gate_policy_for  # noqa: E402
from kernel_tui.core.task import load_task  # noqa: E402


def pooled(raws: list[Path]) -> dict[str, list[dict]]:
    """Every fixture's processes from every file, renumbered so that no two share a number."""
    out: dict[str, list[dict]] = {}
    for path in raws:
        with gzip.open(path, "rt") as f:
            raw = json.load(f)
        for key, procs in raw.items():
            if not key.startswith("aa:"):
                continue
            mine = out.setdefault(key[3:], [])
            for p in procs:
                if p.get("status") == "ok" and p["blocks"]:
                    mine.append({**p, "process": len(mine), "source": path.name})
    return out


def resampled_gates(procs: list[dict], policy: gate.GatePolicy, n: int, rng: random.Random) -> list[dict]:
    """n gates, each over processes in a random order (none twice) and one random block of each."""
    gates: list[dict] = []
    for _ in range(n):
        order = rng.sample(procs, len(procs))
        seq = []
        for p in order:
            b = rng.choice(p["blocks"])
            seq.append((p["process"], gate.Block(incumbent=b["incumbent"], candidate=b["candidate"],
                                                 process=str(p["process"]))))
        gates += replay_gates(seq, policy, 1)  # a gate that would need more processes than there are is dropped
    return gates


def summary(gates: list[dict]) -> dict:
    blocks = [g["blocks"] + g["confirmation_blocks"] for g in gates]
    return {
        "gates": len(gates), "accepted": binomial(sum(g["accepted"] for g in gates), len(gates)),
        "decisions": {d: sum(g["decision"] == d for g in gates) for d in sorted({g["decision"] for g in gates})},
        "blocks_per_gate_mean": statistics.mean(blocks) if blocks else None,
        "rejected_after_one_block": sum(g["decision"] == "reject" and g["blocks"] == 1 for g in gates),
        "estimate_median": statistics.median(g["improvement"] for g in gates) if gates else None,
        "estimate_range": [min(g["improvement"] for g in gates), max(g["improvement"] for g in gates)] if gates else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--resampled", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    result: dict = {"sources": [p.name for p in args.raw], "fixtures": {}}
    lines = ["# A/A gates pooled over GPU runs", "", f"Sources: {', '.join(result['sources'])}.", ""]
    for name, procs in sorted(pooled(args.raw).items()):
        policy = gate_policy_for(load_task(ROOT / "fixtures" / name), "cuda")
        disjoint = summary(replay_gates(column_order(procs), policy, 10_000))
        resampled = summary(resampled_gates(procs, policy, args.resampled, rng))
        effect = process_effect(procs)
        result["fixtures"][name] = {"processes": len(procs), "blocks": sum(len(p["blocks"]) for p in procs),
                                    "disjoint": disjoint, "resampled": resampled, "process_effect": effect,
                                    "policy": policy.model_dump()}
        d, r = disjoint["accepted"], resampled["accepted"]
        lines += [f"## {name}: {len(procs)} processes, {result['fixtures'][name]['blocks']} blocks", "",
                  f"- disjoint gates: {d['k']}/{d['n']} accepted (95% CI {d['ci95'][0]:.1%}–{d['ci95'][1]:.1%}), "
                  f"{disjoint['blocks_per_gate_mean']:.2f} blocks per gate, decisions {disjoint['decisions']}",
                  f"- resampled gates: {r['k']}/{r['n']} accepted ({r['rate']:.2%}), "
                  f"{resampled['blocks_per_gate_mean']:.2f} blocks per gate, decisions {resampled['decisions']}, "
                  f"{resampled['rejected_after_one_block']} rejected after one block, estimates "
                  f"{resampled['estimate_range'][0]:+.2%} … {resampled['estimate_range'][1]:+.2%} "
                  f"(median {resampled['estimate_median']:+.2%})",
                  f"- process effect: ANOVA p = {effect.get('p', float('nan')):.2g}, process-level SD "
                  f"{effect.get('process_level_sd', float('nan')):.2%}, block SD within a process "
                  f"{effect.get('block_sd_within_process', float('nan')):.2%}", ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "aa_pooled.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "aa_pooled.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
