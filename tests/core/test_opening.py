"""What `kernel-tui` with no argument offers (core.opening.choices): no Textual needed."""

from __future__ import annotations

import json
import os
import shutil

from kernel_tui.core.opening import choices
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES


def task(folder, description="a task") -> None:
    folder.mkdir(parents=True)
    (folder / "task.json").write_text(json.dumps({"description": description}))


def test_workspaces_newest_first_then_tasks_in_fixtures_and_here(tmp_path):
    old = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "workspaces" / "old")
    new = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "mine")  # --workspace mine: beside the tasks
    (old.root / "trajectory.jsonl").write_text("{}\n")
    os.utime(old.root, (1, 1))
    task(tmp_path / "fixtures" / "softmax", "Row-wise softmax")
    task(tmp_path / "kb_relu", "KernelBench: relu")  # where `kernel-tui import kernelbench` puts a task
    (tmp_path / "notes").mkdir()
    (tmp_path / ".hidden").mkdir()
    shutil.copy(FIXTURES / "vector_add" / "task.json", tmp_path / ".hidden" / "task.json")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.json").write_text("{")

    found = [(c.kind, c.where, c.detail) for c in choices(tmp_path)]
    assert found == [("workspace", "mine", "0 verdicts"), ("workspace", "workspaces/old", "1 verdict"),
                     ("task", "broken", "(unreadable task.json)"), ("task", "fixtures/softmax", "Row-wise softmax"),
                     ("task", "kb_relu", "KernelBench: relu")]
    assert {c.path for c in choices(tmp_path)} >= {new.root, tmp_path / "kb_relu"}


def test_the_folder_itself_when_it_is_a_task(tmp_path):
    task(tmp_path / "here", "this one")
    assert [(c.kind, c.where) for c in choices(tmp_path / "here")] == [("task", ".")]


def test_nothing_here(tmp_path):
    assert choices(tmp_path) == []
