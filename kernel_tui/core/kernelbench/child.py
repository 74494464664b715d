"""Run probe.py in a child interpreter: isolated (`-I`), with a timeout, its answer parsed or one line why not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kernel_tui.core.errors import TaskError

PROBE = Path(__file__).with_name("probe.py")
DEFAULT_TIMEOUT = 300.0


def probe(request: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "LD_LIBRARY_PATH")}
    env["CUDA_VISIBLE_DEVICES"] = ""  # shapes and small real runs need no GPU, and must not take one
    try:
        done = subprocess.run(
            # -B: nothing written beside the problem (its __pycache__ in the user's KernelBench folder)
            [sys.executable, "-I", "-B", str(PROBE)], input=json.dumps(request), capture_output=True, text=True,
            timeout=timeout, env=env, cwd=Path(request["path"]).parent,
        )
    except subprocess.TimeoutExpired:
        raise TaskError(f"{request['path']}: loading the problem took longer than {timeout:g} s") from None
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise TaskError(f"{request['path']}: the problem's process died: {last[:300]}") from None
    if "error" in answer:
        raise TaskError(f"{request['path']}: {answer['error']}")
    return answer
