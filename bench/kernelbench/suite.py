"""A KernelBench suite with replayed Triton candidates: import, add a second benchmark shape, run, score.

    python bench/kernelbench/suite.py --kernelbench PATH --out DIR [--device cuda] [--runs 3]
        [--problems 1_Square_matrix_multiplication_ 19_ReLU ...] [--single-shape]

PATH holds level1/ and level2/ (a KernelBench checkout's KernelBench/, never committed). For each problem
with a candidate in bench/kernelbench/candidates/ (tf32x3/ for GEMMs when there is one), the problem is
imported (fp32, PyTorch eager starting point), given a second benchmark shape "half" (each dimension
above 16 halved, plus one: ragged) with weight 0.5, and the candidate is replayed once through
`kernel-tui suite`, which scores each best against eager and torch.compile in fresh processes. A killed
run resumes (the suite's own resume; imports are skipped when the task directory exists).

Afterwards, multishape.json/.md say for each verdict what the gate decided on the weighted geometric mean
of both shapes, and what it would have decided on the main shape alone (the same blocks, re-decided).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
DEFAULT_PROBLEMS = [
    "1_Square_matrix_multiplication_", "4_Matrix_vector_multiplication_", "19_ReLU", "23_Softmax", "26_GELU_",
    "36_RMSNorm_", "47_Sum_reduction_over_a_dimension", "88_MinGPTNewGelu", "12_Gemm_Multiply_LeakyReLU",
    "76_Gemm_Add_ReLU", "56_Matmul_Sigmoid_Sum",
]


def find_problem(root: Path, stem: str) -> Path:
    found = [p for level in ("level1", "level2") for p in [root / level / f"{stem}.py"] if p.is_file()]
    if len(found) != 1:
        raise SystemExit(f"suite: {stem}: {len(found)} problem files match in {root}")
    return found[0]


def candidate_for(stem: str) -> Path:
    for path in (HERE / "candidates" / "tf32x3" / f"{stem}.py", HERE / "candidates" / f"{stem}.py"):
        if path.is_file():
            return path
    raise SystemExit(f"suite: no candidate for {stem}")


def add_half_shape(task_dir: Path) -> None:
    """A second benchmark shape at about half the size (ragged), checked for correctness on the GPU too."""
    from kernel_tui.core.task import TaskSpec

    path = task_dir / "task.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    half = {k: (v // 2 + 1 if v > 16 else v) for k, v in data["shape"].items()}
    shapes = data.setdefault("correctness", {}).setdefault("shapes", [])
    if not any(s["name"] == "half" for s in shapes):
        shapes.append({"name": "half", "dims": half})
    data.setdefault("benchmark", {})["shapes"] = [{"shape": "main", "weight": 1.0}, {"shape": "half", "weight": 0.5}]
    TaskSpec.model_validate(data)  # a shape the task cannot take fails here, not in the suite
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def prepare(args) -> tuple[Path, Path]:
    from kernel_tui.core.kernelbench import import_problem, task_name

    tasks, cands = Path(args.out) / "tasks", Path(args.out) / "candidates"
    for stem in args.problems:
        problem = find_problem(Path(args.kernelbench), stem)
        name = task_name(problem)
        task_dir = tasks / name
        if not (task_dir / "task.json").is_file():
            import_problem(problem, task_dir, precision="fp32", force=True)
            if not args.single_shape:
                add_half_shape(task_dir)
        mine = cands / name
        mine.mkdir(parents=True, exist_ok=True)
        shutil.copy(candidate_for(stem), mine / f"01_{stem}.py")
        print(f"prepared {name}", flush=True)
    return tasks, cands


def redecide(out: Path) -> list[dict]:
    """Each verdict of the suite's workspaces: the two-shape decision and the main-shape-only one."""
    from kernel_tui.core import gate
    from kernel_tui.core.evaluator.gating import gate_policy_for, to_gate_block
    from kernel_tui.core.evaluator.models import EvalResult
    from kernel_tui.core.workspace import Workspace

    rows = []
    for ws in sorted((out / "suite" / "workspaces").iterdir()):
        traj = ws / "trajectory.jsonl"
        if not traj.is_file():
            continue
        task = Workspace.open(ws).task
        for raw in traj.read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            row = {"task": ws.name, "round": line["round"], "status": line["status"], "accepted": line["accepted"],
                   "reason": line["reason"], "shapes": line.get("shapes", [])}
            result_path = ws / (line.get("evaluation_dir") or "") / "result.json"
            if line["status"] == "ok" and result_path.is_file():
                res = EvalResult.model_validate_json(result_path.read_text(encoding="utf-8"))
                policy = gate_policy_for(task, res.device)
                main = [to_gate_block(b) for b in res.blocks]
                alone = gate.decide(main, policy)
                if alone.decision == "confirm" and res.confirmation:
                    alone = gate.decide(main, policy, confirmation=[to_gate_block(b) for b in res.confirmation])
                row["main_shape_only"] = {"accepted": alone.accepted, "decision": alone.decision, "reason": alone.reason}
                row["changed"] = alone.accepted != line["accepted"]
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernelbench", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--problems", nargs="+", default=DEFAULT_PROBLEMS)
    p.add_argument("--single-shape", action="store_true", help="time the main shape only")
    p.add_argument("--timeout", type=float, default=None, help="stop the suite after this many seconds (it resumes)")
    p.add_argument("--prepare-only", action="store_true", help="import and lay out the candidates, run nothing")
    args = p.parse_args(argv)
    out = Path(args.out)
    tasks, cands = prepare(args)
    if args.prepare_only:
        return 0
    cmd = [sys.executable, "-m", "kernel_tui", "suite", str(tasks), "--proposer", "replay", "--candidates", str(cands),
           "--max-steps", "1", "--device", args.device, "--runs", str(args.runs), "--out", str(out / "suite")]
    try:
        code = subprocess.run(cmd, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        print("suite: stopped at the time limit; run again to resume", flush=True)
        code = 1
    rows = redecide(out)
    (out / "multishape.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    lines = ["# Two benchmark shapes vs the main shape alone", "",
             "| task | round | verdict (main + half, weights 1 : 0.5) | main shape alone | changed | per shape |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        alone = r.get("main_shape_only")
        per = ", ".join(f"{s['shape']} {s['improvement']:+.2%}" for s in r["shapes"])
        verdict = "accepted" if r["accepted"] else "rejected" if r["status"] == "ok" else r["status"]
        lines.append(f"| {r['task']} | {r['round']} | {verdict} | "
                     f"{('accepted' if alone['accepted'] else alone['decision']) if alone else '—'} | "
                     f"{'yes' if r.get('changed') else 'no'} | {per or '—'} |")
    (out / "multishape.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
