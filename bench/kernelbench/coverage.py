"""Import every KernelBench problem of some levels, check each task, and classify every failure.

    python bench/kernelbench/coverage.py --kernelbench PATH --levels 1 2 --out DIR --device cpu --jobs 2

PATH is the directory holding level1/, level2/ (a KernelBench checkout's KernelBench/). Each problem is
imported in its own process, then `kernel-tui check-task TASK --device D --json` runs on it, each with a
timeout: one problem never stops the others. Writes DIR/tasks/<task>/, DIR/coverage.json, DIR/coverage.md.
Needs only the standard library and kernel_tui (with its torch) in the running interpreter.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

IMPORT_CLASSES = [
    ("timeout", r"took longer than|timed out"),
    ("crash", r"process died"),
    ("no-problem", r"not a KernelBench problem|defines no"),
    ("meta-unsupported", r"does not run on the meta device"),
    ("non-tensor-input", r"get_inputs\(\) element"),
    ("non-tensor-output", r"forward returns"),
    ("dtype", r"dtype"),
    ("shape-fit", r"cannot express axis|fitted expressions|not the fitted"),
    ("reference-fails-small", r"reference fails at interpreter sizes"),
    ("no-interpreter-shape", r"no shape is small enough"),
    ("name-collision", r"names collide"),
]
CHECK_CLASSES = [
    ("timeout", r"timed out|took longer"),
    ("spec-rejected", r"field |task\.json|no such|unknown dimension|lacks dimension"),
    ("reference-nonfinite", r"NaN/Inf"),
    ("reference-nondeterministic", r"not deterministic|differs between|repeat"),
    ("reference-error", r"reference"),
    ("baseline-incorrect", r"differ beyond|elements differ"),
    ("baseline-error", r"baseline|launch"),
    ("too-large-for-cpu", r"interpreter|elements"),
]

IMPORT_ONE = """
import json, sys, time
from pathlib import Path
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.kernelbench import import_problem
t = time.perf_counter()
try:
    done = import_problem(Path(sys.argv[1]), Path(sys.argv[2]), precision=sys.argv[3], force=True,
                          timeout=float(sys.argv[4]))
    print(json.dumps({"ok": True, "name": done.name, "dims": done.dims, "notes": done.notes,
                      "seconds": time.perf_counter() - t}))
except KernelTuiError as exc:
    print(json.dumps({"ok": False, "error": str(exc), "seconds": time.perf_counter() - t}))
"""


def classify(message: str, classes: list[tuple[str, str]]) -> str:
    for name, pattern in classes:
        if re.search(pattern, message, re.IGNORECASE):
            return name
    return "other"


def _run(cmd: list[str], timeout: float) -> tuple[int | None, str, str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout:g} s"


def one(path: Path, tasks: Path, args) -> dict:
    level = path.parent.name
    out = tasks / f"{level}_{path.stem}"
    record: dict = {"problem": path.name, "level": level, "task": str(out)}
    rc, stdout, stderr = _run([sys.executable, "-c", IMPORT_ONE, str(path), str(out), args.precision,
                               str(args.import_timeout)], args.import_timeout * 2 + 30)
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        last = (stderr.strip().splitlines() or [f"exit status {rc}"])[-1]
        result = {"ok": False, "error": f"importer crashed: {last}", "seconds": None}
    record["import_seconds"] = result.get("seconds")
    if not result["ok"]:
        record.update(stage="import", status="refused", reason=result["error"],
                      failure=classify(result["error"], IMPORT_CLASSES))
        return record
    record["notes"] = result.get("notes", [])
    if args.import_only:
        record.update(stage="import", status="ok", reason="")
        return record
    t = time.perf_counter()
    rc, stdout, stderr = _run([sys.executable, "-m", "kernel_tui", "check-task", str(out), "--device", args.device,
                               "--json"], args.check_timeout)
    record["check_seconds"] = time.perf_counter() - t
    try:
        check = json.loads(stdout.strip().splitlines()[-1])
        status, reason = check["status"], check.get("reason", "")
    except (json.JSONDecodeError, IndexError, KeyError):
        status, reason = "error", (stderr.strip().splitlines() or [f"exit status {rc}"])[-1]
    record.update(stage="check-task", status=status, reason=reason)
    if status != "ok":
        record["failure"] = classify(reason, CHECK_CLASSES)
    return record


def _order(path: Path) -> tuple[int, str]:
    head = path.name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, path.name)


def markdown(records: list[dict], args) -> str:
    lines = [f"# KernelBench import coverage ({args.device}, {args.precision})", ""]
    for level in sorted({r["level"] for r in records}):
        rs = [r for r in records if r["level"] == level]
        imported = sum(r["stage"] == "check-task" for r in rs)
        ok = sum(r["status"] == "ok" for r in rs)
        lines.append(f"- {level}: {len(rs)} problems, {imported} imported, {ok} pass check-task")
    secs = sorted(r["import_seconds"] for r in records if r.get("import_seconds"))
    if secs:
        lines.append(f"- import seconds: median {secs[len(secs) // 2]:.1f}, max {secs[-1]:.1f}")
    lines += ["", "## Failure classes", "", "| stage | class | count | problems |", "|---|---|---|---|"]
    counts = Counter((r["stage"], r["failure"]) for r in records if r.get("failure"))
    for (stage, cls), n in counts.most_common():
        names = [f"{r['level']}/{r['problem'].split('_')[0]}" for r in records if r.get("failure") == cls and r["stage"] == stage]
        lines.append(f"| {stage} | {cls} | {n} | {', '.join(names)} |")
    lines += ["", "## Every failure", ""]
    for r in records:
        if r["status"] != "ok":
            reason = " ".join(str(r["reason"]).split())[:300]
            lines.append(f"- {r['level']}/{r['problem']} ({r['stage']}, {r.get('failure')}): {reason}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernelbench", required=True, help="the directory holding level1/, level2/, ...")
    p.add_argument("--levels", nargs="+", type=int, default=[1, 2])
    p.add_argument("--out", required=True)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--import-timeout", type=float, default=300.0, help="seconds per problem process")
    p.add_argument("--check-timeout", type=float, default=900.0, help="seconds per check-task")
    p.add_argument("--import-only", action="store_true", help="import without running check-task")
    p.add_argument("--only", nargs="*", help="problem numbers to run (e.g. 1 23), for a quick look")
    args = p.parse_args(argv)
    root, out = Path(args.kernelbench), Path(args.out)
    problems = []
    for level in args.levels:
        found = sorted((root / f"level{level}").glob("*.py"), key=_order)
        if not found:
            print(f"coverage: no problems in {root / f'level{level}'}", file=sys.stderr)
            return 2
        problems += [f for f in found if not args.only or f.name.split("_", 1)[0] in args.only]
    tasks = out / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)

    def job(path: Path) -> dict:
        try:
            r = one(path, tasks, args)
        except Exception as exc:  # noqa: BLE001 - one problem never stops the rest
            r = {"problem": path.name, "level": path.parent.name, "stage": "harness", "status": "error",
                 "reason": f"{type(exc).__name__}: {exc}", "failure": "harness"}
        mark = "ok" if r["status"] == "ok" else f"{r['stage']} {r.get('failure')}"
        print(f"{r['level']}/{r['problem']}: {mark}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        records = list(pool.map(job, problems))
    (out / "coverage.json").write_text(json.dumps({"device": args.device, "precision": args.precision,
                                                   "problems": records}, indent=1) + "\n")
    (out / "coverage.md").write_text(markdown(records, args))
    print(markdown(records, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
