"""Pool the gate calibration runs (each run's gates are disjoint and independent of the others'):
A/A false accepts per fixture and overall, and power per effect level, each with an exact binomial
95% interval.

    python bench/summarize_gate_runs.py RUN_DIR [RUN_DIR ...]    # each holding gate_calibration.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from scipy import stats


def ci(k: int, n: int) -> str:
    if not n:
        return "n/a"
    c = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{k}/{n} = {100 * k / n:.1f}% (95% CI {100 * c.low:.2f}–{100 * c.high:.2f}%)"


def main(dirs: list[str]) -> int:
    aa: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # false accepts, gates, published-rule accepts
    power: dict[str, list] = defaultdict(lambda: [0, 0, [], [], 0])  # accepted, gates, blocks/gate, long-run effects, 1-block rejects
    for d in dirs:
        r = json.loads((Path(d) / "gate_calibration.json").read_text())
        for name, s in r.get("aa", {}).items():
            if "gates" in s:
                aa[name][0] += s["accepted"]["k"]
                aa[name][1] += s["gates"]
                aa[name][2] += s["published_rule_on_first_block"]["k"]
        for level, s in r.get("power", {}).get("levels", {}).items():
            p = power[level]
            p[0] += s["accepted"]["k"]
            p[1] += s["gates"]
            if s["gates"]:
                p[2].append((s["blocks_per_gate"]["mean"], s["gates"]))
            if s["long_run"].get("improvement") is not None:
                p[3].append(s["long_run"]["improvement"])
            p[4] += s["rejected_after_one_block"]
    print("| A/A | gates | gate false accepts | published rule on each gate's first block |\n|---|---:|---|---|")
    for name, (k, n, pub) in aa.items():
        print(f"| {name} | {n} | {ci(k, n)} | {ci(pub, n)} |")
    k, n, pub = (sum(v[i] for v in aa.values()) for i in range(3))
    print(f"| pooled | {n} | {ci(k, n)} | {ci(pub, n)} |\n")
    print("| nominal effect | long-run effects measured | gates | accepted | blocks per gate (mean) | rejected after 1 block |\n|---|---|---:|---|---:|---:|")
    for level in sorted(power, key=lambda x: float(x.rstrip("%"))):
        a, n, bpg, effects, one = power[level]
        mean_blocks = sum(b * g for b, g in bpg) / sum(g for _, g in bpg) if bpg else float("nan")
        eff = ", ".join(f"{100 * e:+.2f}%" for e in effects) or "n/a"
        print(f"| {level} | {eff} | {n} | {ci(a, n)} | {mean_blocks:.2f} | {one} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
