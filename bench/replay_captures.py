"""Replay what torch.compile generated on a GPU through today's rewrite and search, with no GPU: for every problem
a coverage run started, its recorded capture (the `--keep-capture` JSON in the run's captures*.tgz) is rewritten
again for the problem imported afresh on the CPU, the start is held to the static policy, and every move the
built-in search offers on it is made and held to the policy too. A regression in the rewrite or a move that
breaks a real start shows here before it costs GPU time.

    python bench/replay_captures.py KB OUT.tsv RAW_DIR [RAW_DIR ...]

KB: KernelBench's level1/ and level2/ (.kernelbench). Each RAW_DIR holds a coverage.tsv and captures*.tgz; a
later RAW_DIR's line and capture of a problem replace an earlier one's. OUT.tsv: one line a started problem:
key, the start's verdict (policy ok / the first violation / the rewrite's error), the moves offered by kind, and
the moves whose result the policy refuses or that fail to apply. Exit status 1 where any line is not clean.
"""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def started(raw_dirs: list[Path]) -> dict[str, dict]:
    """{level/problem: capture JSON} for every problem whose latest line says started."""
    status: dict[str, str] = {}
    captures: dict[str, dict] = {}
    for raw in raw_dirs:
        for line in (raw / "coverage.tsv").read_text(encoding="utf-8").splitlines():
            key, state, *_ = line.split("\t")
            status[key] = state
        for tgz in sorted(raw.glob("captures*.tgz")):
            with tarfile.open(tgz) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.endswith(".json"):
                        stem = Path(member.name).stem  # level1_19_ReLU
                        level, _, problem = stem.partition("_")
                        data = tar.extractfile(member)
                        if data is not None:
                            captures[f"{level}/{problem}"] = json.loads(data.read())
    return {key: captures[key] for key, state in sorted(status.items()) if state == "started" and key in captures}


def replay(kb: str, key: str, captured: dict) -> str:
    """One problem: imported afresh from KB (eager, on the CPU), then replay_task."""
    from kernel_tui.core.errors import KernelTuiError
    from kernel_tui.core.kernelbench.importer import import_problem

    with tempfile.TemporaryDirectory() as tmp:
        task_dir = Path(tmp) / "task"
        try:
            import_problem(Path(kb) / f"{key}.py", task_dir)
        except KernelTuiError as exc:
            return f"{key}\tnot imported: {exc}"
        return replay_task(task_dir, captured, key)


def replay_task(task_dir: Path, captured: dict, key: str) -> str:
    """The line for one task and its recorded capture (see the module's docstring)."""
    from kernel_tui.core.errors import KernelTuiError
    from kernel_tui.core.evaluator.evaluator import policy_rejection
    from kernel_tui.core.inductor import Refusal
    from kernel_tui.core.inductor import start as start_module
    from kernel_tui.core.proposers.transforms import analyze
    from kernel_tui.core.task import Task, load_spec

    spec = load_spec(task_dir / "task.json")
    compile_here = start_module.capture
    start_module.capture = lambda *args, **kwargs: captured  # the GPU's record instead of a compile here
    try:
        source = start_module.inductor_start(task_dir, "cuda").source
    except (Refusal, KernelTuiError, ValueError, KeyError) as exc:
        return f"{key}\trewrite failed: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        start_module.capture = compile_here

    task = Task(root=task_dir, spec=spec, reference_source="", baseline_source=source)

    def verdict(text: str) -> str | None:  # the policy as the evaluator holds a candidate to it
        refused = policy_rejection(task, text, "cuda")
        return None if refused is None else f"{refused.status.value}: {refused.reason}"[:160]

    if (bad := verdict(source)) is not None:
        return f"{key}\tstart refused: {bad}"
    analysis = analyze(source)
    actions = analysis.actions()
    kinds = Counter(a.kind for a in actions)
    broken = []
    for action in actions:
        try:
            moved = analysis.apply(action)
        except Exception as exc:  # noqa: BLE001 - a move that cannot be made is what this looks for
            broken.append(f"{action.change}: {type(exc).__name__}")
            continue
        if (bad := verdict(moved)) is not None:
            broken.append(f"{action.change}: {bad}")
    offered = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    return f"{key}\tpolicy ok\t{len(actions)} moves ({offered})\t" + ("; ".join(broken) or "every move clean")


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    kb, out, raws = argv[0], Path(argv[1]), [Path(a) for a in argv[2:]]
    todo = started(raws)
    with ProcessPoolExecutor(max_workers=2) as pool:
        lines = list(pool.map(replay, [kb] * len(todo), list(todo), list(todo.values())))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    clean = [ln for ln in lines if ln.split("\t")[1] == "policy ok" and ln.endswith("every move clean")]
    print(f"{len(clean)} of {len(lines)} recorded starts rewrite, pass the policy and take every move cleanly")
    return 0 if len(clean) == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
