"""Starts one worker process and brings back its result, whatever the candidate does.

The worker runs as `python -I` (no user site, no PYTHON* variables) with an allowlisted environment, its
own HOME, TMPDIR and Triton cache, in its own process group so that a hang is killed whole. A crash
(segfault, abort, SIGKILL) or a missing result becomes a `crashed` result with the signal and the last
line of stderr; a hang past the deadline becomes `timeout`; a set cancel event becomes `cancelled`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from kernel_tui.core.evaluator.models import Status, WorkerRequest, WorkerResult
from kernel_tui.core.evaluator.worker import BOOTSTRAP

ENV_ALLOWLIST = {
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
    # accelerators, NVIDIA and AMD alike
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "LD_LIBRARY_PATH", "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH", "TRITON_HIP_LLD_PATH", "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    # numerics libraries that need them on some CPUs
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
}

ProgressFn = Callable[[str, int, int], None]


def worker_env(workdir: Path, device: str, triton_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        TRITON_CACHE_DIR=str(triton_cache),
        PYTHONHASHSEED="0",
        PYTHONUNBUFFERED="1",
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env.setdefault("OMP_NUM_THREADS", "1")
    return env


def package_paths() -> list[str]:
    """Where the worker finds kernel_tui and its dependencies: the caller's own import path."""
    return [p for p in sys.path if p and os.path.isdir(p)]


def _tail(path: Path, limit: int = 300) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][-limit:] if lines else ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_worker(
    request: WorkerRequest,
    workdir: Path,
    *,
    timeout: float,
    triton_cache: Path,
    cancel: threading.Event | None = None,
    on_progress: ProgressFn | None = None,
) -> WorkerResult:
    workdir.mkdir(parents=True, exist_ok=True)
    triton_cache.mkdir(parents=True, exist_ok=True)
    req_path, res_path = workdir / "request.json", workdir / "result.json"
    request = request.model_copy(update={"sys_path": package_paths()})
    req_path.write_text(request.model_dump_json(), encoding="utf-8")
    res_path.unlink(missing_ok=True)
    read_fd, write_fd = os.pipe()
    with open(workdir / "stdout.log", "wb") as out, open(workdir / "stderr.log", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, str(req_path), str(res_path), str(write_fd)],
            cwd=workdir, env=worker_env(workdir, request.device, triton_cache), stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, pass_fds=(write_fd,), start_new_session=True,
        )
    os.close(write_fd)
    reader = threading.Thread(target=_read_progress, args=(read_fd, on_progress), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    ended: Status | None = None
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            ended = Status.cancelled
        elif time.monotonic() > deadline:
            ended = Status.timeout
        if ended is not None:
            _kill_group(proc)
            proc.wait()
            break
    _kill_group(proc)  # stray children of a misbehaving candidate
    reader.join(timeout=1.0)
    if ended is Status.timeout:
        return WorkerResult(status=Status.timeout, reason=f"no answer within {timeout:.0f} s: killed (a hang, or far too slow)")
    if ended is Status.cancelled:
        return WorkerResult(status=Status.cancelled, reason="cancelled")
    if res_path.exists():
        try:
            return WorkerResult.model_validate_json(res_path.read_text(encoding="utf-8"))
        except (ValidationError, OSError, ValueError):
            return WorkerResult(status=Status.crashed, reason="the worker left an unreadable result")
    code = proc.returncode
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    detail = _tail(workdir / "stderr.log")
    return WorkerResult(
        status=Status.crashed, reason=f"the worker process died ({how})" + (f": {detail}" if detail else "")
    )


def _read_progress(fd: int, on_progress: ProgressFn | None) -> None:
    with os.fdopen(fd, "r", errors="replace") as stream:
        for line in stream:
            if on_progress is None:
                continue
            try:
                msg = json.loads(line)
                on_progress(str(msg["phase"]), int(msg["k"]), int(msg["n"]))
            except (ValueError, KeyError, TypeError):
                continue
