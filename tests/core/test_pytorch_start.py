"""A task that starts from PyTorch eager: the baseline is exempt from the policy and timed like any other;
candidates stay Triton; the built-in search waits for a Triton version and says so."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.proposers.base import ProposerContext
from kernel_tui.core.proposers.search import WAITS_FOR_TRITON, SearchProposer
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES, ROOT

EAGER = '''"""PyTorch eager starting point: output = x + y."""

import torch


def launch(x, y, output, n_elements):
    torch.add(x, y, out=output)
'''


def pytorch_task(tmp_path: Path) -> Path:
    root = tmp_path / "task"
    shutil.copytree(FIXTURES / "vector_add", root)
    data = json.loads((root / "task.json").read_text())
    data["baseline"] = {"filename": "baseline.py", "language": "pytorch"}
    (root / "task.json").write_text(json.dumps(data))
    (root / "baseline.py").write_text(EAGER)
    return root


def test_the_pytorch_baseline_is_exempt_from_the_policy_and_candidates_are_not(tmp_path):
    task = load_task(pytorch_task(tmp_path))
    ev = Evaluator(task, device="cpu", workdir=tmp_path / "ev")
    try:
        assert ev.check(EAGER, trusted=True).status is Status.ok
        untrusted = ev.check(EAGER)  # the same source proposed as a candidate
        assert untrusted.status is Status.policy_violation
    finally:
        ev.close()


def test_the_search_waits_for_a_triton_version(tmp_path):
    said: list[str] = []
    search = SearchProposer(seed=0)
    search.on_activity = said.append
    ctx = ProposerContext(round=1, best_source=EAGER, baseline_source=EAGER, history=[], baseline_language="pytorch")
    assert search.propose(ctx) is None and said == [WAITS_FOR_TRITON]
    triton = (FIXTURES / "vector_add" / "baseline.py").read_text()
    ctx = ProposerContext(round=2, best_source=triton, baseline_source=EAGER, history=[], baseline_language="pytorch")
    proposal = search.propose(ctx)
    assert proposal is not None and proposal.source != triton and "@triton.jit" in proposal.source


def test_a_headless_run_from_pytorch_accepts_a_triton_kernel(tmp_path):
    root = pytorch_task(tmp_path)
    cands = tmp_path / "cands"
    cands.mkdir()
    shutil.copy(FIXTURES / "vector_add" / "baseline.py", cands / "01_triton.py")
    out = subprocess.run(
        [sys.executable, "-m", "kernel_tui", "run", str(root), "--headless", "--proposer", "replay",
         "--candidates", str(cands), "--device", "cpu", "--workspace", str(tmp_path / "ws"), "--max-steps", "1"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "preflight ok" in out.stdout
    line = json.loads((tmp_path / "ws" / "trajectory.jsonl").read_text().splitlines()[0])
    assert line["status"] == "ok"  # the Triton kernel was checked and timed against the eager baseline


def test_a_search_run_from_pytorch_says_it_waits_and_retests_the_eager_baseline(tmp_path):
    root = pytorch_task(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "kernel_tui", "run", str(root), "--headless", "--proposer", "search",
         "--device", "cpu", "--workspace", str(tmp_path / "ws"), "--max-steps", "2"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "starts from a Triton version" in out.stdout
    summary = json.loads((tmp_path / "ws" / "run_summary.json").read_text())
    assert "policy" not in json.dumps(summary).lower(), summary  # the eager baseline was re-tested, not refused
