from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "task.json").exists())
DATA = ROOT / "tests" / "data"
# The published file itself lives beside the clone, not in it; a bare clone has only the repository's own.
COMPAT_TASK = ROOT.parent / "shared" / "compat" / "hello-gpu" / "vector_add" / "task.json"

# Task files in the published schemaVersion-2 format (no extensions): id -> (task.json, the directory
# holding a reference.py and baseline.py for it). The repository's own always; the published one when present.
PUBLISHED_TASKS: dict[str, tuple[Path, Path]] = {
    "vector_mul": (DATA / "published-v2" / "vector_mul" / "task.json", DATA / "published-v2" / "vector_mul"),
}
if COMPAT_TASK.is_file():
    PUBLISHED_TASKS["hello-gpu-vector_add"] = (COMPAT_TASK, FIXTURES / "vector_add")


@pytest.fixture
def vector_add():
    from kernel_tui.core.task import load_task

    return load_task(FIXTURES / "vector_add")
