"""Starts one worker process and brings back its result, whatever the candidate does.

The worker runs under `python -I` (no user site, no PYTHON* variables) with an allowlisted environment, its
own HOME, TMPDIR and Triton cache, in its own process group so that a hang is killed whole. A crash
(segfault, abort, SIGKILL) or a missing result becomes a `crashed` result with the signal and the last
line of stderr; a hang past the deadline becomes `timeout`; a set cancel event becomes `cancelled`.

Importing torch and triton costs seconds per process, and a gate decision takes several processes, so
workers are normally forked from a fork server that paid those imports once (it never touches the
GPU, so each child initialises its own CUDA context); a fresh `python -I` per worker is the fallback.
"""

from __future__ import annotations

import itertools
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
from kernel_tui.core.evaluator.sandbox import libcuda_dir
from kernel_tui.core.evaluator.worker import BOOTSTRAP, FORK_SERVER_BOOTSTRAP

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


def worker_env(workdir: Path, device: str, triton_cache: Path, gpu: str | None = None) -> dict[str, str]:
    """The allowlisted environment of a worker; `gpu` pins it to one device of the host (a lease of the
    GPU pool): the worker then sees that device alone, as cuda:0."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        TRITON_CACHE_DIR=str(triton_cache),
        PYTHONHASHSEED="0",
        PYTHONUNBUFFERED="1",
        # scipy's BLAS would start threads at import; a worker must still be single-threaded when it
        # enters its sandbox's user namespace
        OPENBLAS_NUM_THREADS="1",
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env.setdefault("OMP_NUM_THREADS", "1")
    elif "TRITON_LIBCUDA_PATH" not in env and (found := libcuda_dir()):
        env["TRITON_LIBCUDA_PATH"] = found  # else Triton runs ldconfig, which the sandbox does not allow
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


class ForkServer:
    """A long-lived process that forks workers on request (see worker.serve_forks)."""

    def __init__(self, workdir: Path, device: str, triton_cache: Path, gpu: str | None = None) -> None:
        workdir, triton_cache = workdir.resolve(), triton_cache.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        triton_cache.mkdir(parents=True, exist_ok=True)
        self._log = open(workdir / "fork-server.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", FORK_SERVER_BOOTSTRAP, json.dumps(package_paths())],
            cwd=workdir, env=worker_env(workdir, device, triton_cache, gpu), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1, start_new_session=True,
        )
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._pids: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        self._ready = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        with self._cond:
            self._cond.wait_for(lambda: self._ready or self.proc.poll() is not None, timeout=180)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            with self._cond:
                if parts == ["ready"]:
                    self._ready = True
                elif len(parts) == 3 and parts[0] == "pid":
                    self._pids[int(parts[1])] = int(parts[2])
                elif len(parts) == 3 and parts[0] == "exit":
                    self._exits[int(parts[1])] = int(parts[2])
                self._cond.notify_all()
        with self._cond:
            self._ready = False
            self._cond.notify_all()

    @property
    def alive(self) -> bool:
        return self._ready and self.proc.poll() is None

    def spawn(self, req_path: Path, res_path: Path, workdir: Path) -> int | None:
        ident = next(self._ids)
        line = json.dumps({"id": ident, "request": str(req_path), "result": str(res_path), "workdir": str(workdir)})
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            return None
        with self._cond:
            self._cond.wait_for(lambda: ident in self._pids or not self.alive, timeout=30)
            return self._pids.pop(ident, None)

    def exit_code(self, pid: int, wait: float = 0.0) -> int | None:
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: pid in self._exits or not self.alive, timeout=wait)
            return self._exits.pop(pid, None) if pid in self._exits else None

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            _kill_group(self.proc.pid)
        self._log.close()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Progress:
    """Tails the worker's progress.jsonl."""

    def __init__(self, path: Path, on_progress: ProgressFn | None) -> None:
        self.path, self.on_progress, self.offset = path, on_progress, 0

    def poll(self) -> None:
        if self.on_progress is None:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for line in chunk[:end].splitlines():
            try:
                msg = json.loads(line)
                self.on_progress(str(msg["phase"]), int(msg["k"]), int(msg["n"]))
            except (ValueError, KeyError, TypeError):
                continue


def run_worker(
    request: WorkerRequest,
    workdir: Path,
    *,
    timeout: float,
    triton_cache: Path,
    cancel: threading.Event | None = None,
    on_progress: ProgressFn | None = None,
    server: ForkServer | None = None,
    gpu: str | None = None,
    wrapper: list[str] | None = None,
) -> WorkerResult:
    """`wrapper` (a profiler's command line) runs the worker under it, always in a fresh interpreter."""
    workdir, triton_cache = workdir.resolve(), triton_cache.resolve()  # the worker changes directory first
    workdir.mkdir(parents=True, exist_ok=True)
    triton_cache.mkdir(parents=True, exist_ok=True)
    req_path, res_path = workdir / "request.json", workdir / "result.json"
    request = request.model_copy(update={"sys_path": package_paths()})
    req_path.write_text(request.model_dump_json(), encoding="utf-8")
    res_path.unlink(missing_ok=True)
    (workdir / "progress.jsonl").unlink(missing_ok=True)
    progress = _Progress(workdir / "progress.jsonl", on_progress)

    forked = server is not None and server.alive and not wrapper
    pid = server.spawn(req_path, res_path, workdir) if forked and server is not None else None
    proc = None
    if pid is None:  # no fork server: a fresh interpreter
        with open(workdir / "stdout.log", "wb") as out, open(workdir / "stderr.log", "wb") as err:
            proc = subprocess.Popen(
                [*(wrapper or []), sys.executable, "-I", "-c", BOOTSTRAP, str(req_path), str(res_path)],
                cwd=workdir, env=worker_env(workdir, request.device, triton_cache, gpu), stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True,
            )
        pid = proc.pid

    def exit_code(wait: float) -> int | None:
        if proc is not None:
            try:
                return proc.wait(timeout=wait or 1e-6)
            except subprocess.TimeoutExpired:
                return None
        assert server is not None  # no process of our own: the fork server made it
        code = server.exit_code(pid, wait)
        if code is None and not server.alive:
            return -signal.SIGKILL  # the server died; its children were in their own sessions
        return code

    deadline = time.monotonic() + timeout
    ended: Status | None = None
    while (code := exit_code(0.05)) is None:
        progress.poll()
        if cancel is not None and cancel.is_set():
            ended = Status.cancelled
        elif time.monotonic() > deadline:
            ended = Status.timeout
        if ended is not None:
            _kill_group(pid)
            code = exit_code(10.0)
            break
    _kill_group(pid)  # stray children of a misbehaving candidate
    progress.poll()
    if ended is Status.timeout:
        return WorkerResult(status=Status.timeout, reason=f"no answer within {timeout:.0f} s: killed (a hang, or far too slow)")
    if ended is Status.cancelled:
        return WorkerResult(status=Status.cancelled, reason="cancelled")
    if res_path.exists():
        try:
            return WorkerResult.model_validate_json(res_path.read_text(encoding="utf-8"))
        except (ValidationError, OSError, ValueError):
            return WorkerResult(status=Status.crashed, reason="the worker left an unreadable result")
    code = code if code is not None else 0
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    detail = _tail(workdir / "stderr.log")
    return WorkerResult(
        status=Status.crashed, reason=f"the worker process died ({how})" + (f": {detail}" if detail else "")
    )
