"""The Inductor samples under tests/data/inductor: their generated modules and tasks."""

from __future__ import annotations

import json
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
