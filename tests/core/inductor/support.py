"""The Inductor samples under tests/data/inductor: their generated modules and tasks; and the check of a start on
Triton's CPU interpreter, for those and for the GPU captures (tests/data/inductor_gpu)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernel_tui.core.task import TaskSpec, load_spec
from tests.conftest import DATA

SAMPLES = DATA / "inductor"


def generated_source(name: str, kind: str = "dynamic") -> str:
    return (SAMPLES / name / f"inductor.{kind}.py").read_text(encoding="utf-8")


def tensors_of(name: str, kind: str = "dynamic") -> list[str]:
    return json.loads((SAMPLES / name / f"inductor.{kind}.json").read_text())["placeholders"]


def spec_of(name: str) -> TaskSpec:
    return load_spec(SAMPLES / name / "task.json")


def task_dir(name: str) -> Path:
    return SAMPLES / name


def check_on_interpreter(task: Path, source: str, tmp_path: Path) -> None:
    """`source` as the start of a copy of the task at `task`, checked on the interpreter: every case passes."""
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.task import load_task

    root = tmp_path / task.name
    shutil.copytree(task, root)
    (root / "baseline.py").write_text(source)
    evaluator = Evaluator(load_task(root), device="cpu")
    try:
        result = evaluator.check(source)
    finally:
        evaluator.close()
    assert result.status.value == "ok", result.reason
    assert result.cases and all(c.passed for c in result.cases)
