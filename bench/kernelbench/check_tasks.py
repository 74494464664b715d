"""Run `kernel-tui check-task` on every imported task of a directory, in parallel, resumable.

    python bench/kernelbench/check_tasks.py TASKS_DIR --device cuda --jobs 4 --out checks.jsonl
        [--timeout 300] [--coverage coverage.json] [--markdown coverage-gpu.md]

One JSON line per task is appended to --out as it finishes (a killed run resumes: tasks already there are
skipped). With --coverage (the importer's coverage.json from bench/kernelbench/coverage.py, any device),
the import records are merged in and --markdown gets the table of both stages, each failure classified.
Used on the GPU machine with tasks imported elsewhere: importing runs the problems on the CPU only.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

CLASSES = [
    ("out-of-memory", r"out of memory|OutOfMemory|CUDA error: out of memory"),
    ("timeout", r"timed out|took longer"),
    ("reference-nonfinite", r"NaN/Inf"),
    ("zeros-pass", r"all-zeros result pass"),
    ("reference-error", r"reference"),
    ("baseline-incorrect", r"differ beyond"),
    ("baseline-error", r"baseline|launch"),
]


def classify(reason: str) -> str:
    return next((name for name, pattern in CLASSES if re.search(pattern, reason, re.IGNORECASE)), "other")


def check(task: Path, device: str, timeout: float) -> dict:
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "kernel_tui", "check-task", str(task), "--device", device, "--json"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = done.stdout.strip().splitlines()
        try:
            result = json.loads(lines[-1])
            status, reason = result["status"], result.get("reason", "")
        except (IndexError, json.JSONDecodeError, KeyError):
            status, reason = "error", (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        status, reason = "timeout", f"check-task timed out after {timeout:g} s"
    record = {"task": task.name, "status": status, "reason": reason, "seconds": round(time.perf_counter() - t, 1)}
    if status != "ok":
        record["failure"] = classify(reason)
    return record


def markdown(records: dict[str, dict], imports: list[dict], device: str) -> str:
    lines = [f"# KernelBench coverage: import (CPU) and check-task ({device})", ""]
    by_level: dict[str, list[dict]] = {}
    for imp in imports:
        by_level.setdefault(imp["level"], []).append(imp)
    for level, rows in sorted(by_level.items()):
        imported = [r for r in rows if r.get("stage") != "import" or r.get("status") == "ok"]
        names = {Path(r["task"]).name for r in imported}
        ok = sum(1 for n in names if records.get(n, {}).get("status") == "ok")
        checked = sum(1 for n in names if n in records)
        lines.append(f"- {level}: {len(rows)} problems, {len(imported)} imported ({len(imported) / len(rows):.0%}), "
                     f"{ok} of {checked} checked pass check-task on {device} "
                     f"({ok / len(rows):.0%} of the level)")
    secs = sorted(r["import_seconds"] for r in imports if r.get("import_seconds"))
    if secs:
        lines.append(f"- import seconds per problem (CPU): median {secs[len(secs) // 2]:.1f}, max {secs[-1]:.1f}")
    check_secs = sorted(r["seconds"] for r in records.values())
    if check_secs:
        lines.append(f"- check-task seconds per task ({device}): median {check_secs[len(check_secs) // 2]:.1f}, "
                     f"max {check_secs[-1]:.1f}")
    lines += ["", "## Failure classes", "", "| stage | class | count | tasks |", "|---|---|---|---|"]
    counts = Counter(("import", r.get("failure")) for r in imports if r.get("stage") == "import" and r.get("status") != "ok")
    counts.update(("check-task", r["failure"]) for r in records.values() if r.get("failure"))
    for (stage, cls), n in counts.most_common():
        if stage == "import":
            names = [r["problem"] for r in imports if r.get("failure") == cls and r.get("stage") == "import"]
        else:
            names = [t for t, r in records.items() if r.get("failure") == cls]
        lines.append(f"| {stage} | {cls} | {n} | {', '.join(sorted(names))} |")
    lines += ["", "## Every failure", ""]
    for imp in imports:
        if imp.get("stage") == "import" and imp.get("status") != "ok":
            lines.append(f"- {imp['level']}/{imp['problem']} (import, {imp.get('failure')}): {' '.join(str(imp['reason']).split())[:300]}")
    for name, r in sorted(records.items()):
        if r["status"] != "ok":
            lines.append(f"- {name} (check-task {device}, {r.get('failure')}): {' '.join(str(r['reason']).split())[:300]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--out", required=True, help="JSON lines, appended")
    p.add_argument("--coverage", help="the importer's coverage.json, merged into the markdown")
    p.add_argument("--markdown")
    p.add_argument("--summarize-only", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    done: dict[str, dict] = {}
    if out.is_file():
        for raw in out.read_text(encoding="utf-8").splitlines():
            r = json.loads(raw)
            done[r["task"]] = r
    todo = [t for t in sorted(Path(args.tasks).iterdir()) if (t / "task.json").is_file() and t.name not in done]
    if not args.summarize_only:
        with out.open("a", encoding="utf-8") as sink, ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(check, t, args.device, args.timeout) for t in todo]
            for future in as_completed(futures):  # written as each ends: a killed run loses only what ran
                r = future.result()
                sink.write(json.dumps(r) + "\n")
                sink.flush()
                done[r["task"]] = r
                print(f"{r['task']}: {r['status']} {r.get('failure', '')} {r['seconds']} s", flush=True)
    if args.coverage and args.markdown:
        imports = json.loads(Path(args.coverage).read_text(encoding="utf-8"))["problems"]
        Path(args.markdown).write_text(markdown(done, imports, args.device), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
