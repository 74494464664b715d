from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "task.json").exists())
COMPAT_TASK = ROOT.parent / "shared" / "compat" / "hello-gpu" / "vector_add" / "task.json"


@pytest.fixture
def vector_add():
    from kernel_tui.core.task import load_task

    return load_task(FIXTURES / "vector_add")
