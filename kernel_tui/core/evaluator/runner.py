"""Starts one judge (or profile worker) process and brings back its result, whatever the candidate does.

The process runs under `python -I` (no user site, no PYTHON* variables) with an allowlisted environment, in
its own session so that a hang is killed whole. A judge's result comes back over a pipe this process made,
which no worker holds; its progress comes the same way. A judge that dies or sends no result becomes
`crashed` with the signal and the last line of its stderr; a hang past the deadline becomes `timeout`; a set
cancel event becomes `cancelled`.

Importing torch and triton costs seconds per process, and a gate decision takes several blocks, so the
processes are normally forked from a fork server that paid those imports once (fork_server.py); a fresh
`python -I` per process is the fallback.
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

from kernel_tui.core.evaluator.fork_server import ForkServer
from kernel_tui.core.evaluator.models import Status, WorkerRequest, WorkerResult
from kernel_tui.core.evaluator.protocol import WorkerSetup
from kernel_tui.core.evaluator.sandbox import libcuda_dir

ENV_ALLOWLIST = {
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
    # accelerators, NVIDIA and AMD alike
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "LD_LIBRARY_PATH", "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH", "TRITON_HIP_LLD_PATH", "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    # numerics libraries that need them on some CPUs
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    # the judge's window length, for measuring it (timing.py)
    "KERNEL_TUI_WINDOW_SECONDS",
    "KERNEL_TUI_FLUSH",
}

ProgressFn = Callable[[str, int, int], None]
# The processes' entry points, named here so that the caller never imports the modules (they import torch).
BOOTSTRAP = (  # the profile worker: worker REQUEST.json RESULT.json
    "import json,sys;"
    "sys.path[:0]=json.load(open(sys.argv[1]))['sys_path'];"
    "from kernel_tui.core.evaluator.worker import main;"
    "main(sys.argv[1:])"
)
JUDGE_BOOTSTRAP = (  # the judge: FOLDER RESULT_FD PATHS_JSON
    "import json,sys;"
    "sys.path[:0]=json.loads(sys.argv[3]);"
    "from kernel_tui.core.evaluator.judge import main;"
    "main(sys.argv[1], int(sys.argv[2]))"
)


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
    pid = server.spawn("profile", workdir, [str(req_path), str(res_path)]) if forked and server is not None else None
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


def _judge_tail(folder: Path) -> str:
    return _tail(folder / "judge.err")


def run_judge(
    request: WorkerRequest,
    setups: list[WorkerSetup],
    folder: Path,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    on_progress: ProgressFn | None = None,
    server: ForkServer | None = None,
    gpu: str | None = None,
) -> WorkerResult:
    """One block: a judge in `folder` (which must not exist yet: it is made here, fresh) with its workers."""
    folder = folder.resolve()
    folder.mkdir(mode=0o700)
    for setup in setups:
        (folder / f"{setup.role}.side.json").write_text(setup.model_dump_json(), encoding="utf-8")
    request = request.model_copy(update={"sys_path": package_paths(), "timeout_seconds": timeout})
    (folder / "request.json").write_text(request.model_dump_json(), encoding="utf-8")
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        pid = server.spawn("judge", folder, [], write_end) if server is not None and server.alive else None
        proc = None
        if pid is None:
            with open(folder / "judge.out", "wb") as out, open(folder / "judge.err", "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-c", JUDGE_BOOTSTRAP, str(folder), str(write_end), json.dumps(package_paths())],
                    cwd=folder, env=worker_env(folder, request.device, folder / "triton-cache", gpu),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True, pass_fds=[write_end],
                )
            pid = proc.pid
    finally:
        os.close(write_end)
    reader = _JudgeReader(read_end, on_progress)
    try:
        return reader.run(pid, proc, server, folder, timeout + 15.0, cancel)
    finally:
        os.close(read_end)
        _kill_group(pid)


class _JudgeReader:
    """Reads the judge's pipe: progress lines as they come, the result line at the end."""

    def __init__(self, fd: int, on_progress: ProgressFn | None) -> None:
        self.fd, self.on_progress = fd, on_progress
        self.buffer = b""
        self.result: WorkerResult | None = None
        self.unreadable = False

    def _lines(self, chunk: bytes) -> None:
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and "result" in msg:
                try:
                    self.result = WorkerResult.model_validate(msg["result"])
                except (ValidationError, ValueError, TypeError):
                    self.unreadable = True
            elif isinstance(msg, dict) and "progress" in msg and self.on_progress is not None:
                try:
                    phase, k, n = msg["progress"]
                    self.on_progress(str(phase), int(k), int(n))
                except (ValueError, TypeError):
                    continue

    def run(self, pid: int, proc, server, folder: Path, limit: float,
            cancel: threading.Event | None) -> WorkerResult:
        import select

        deadline = time.monotonic() + limit
        while True:
            if cancel is not None and cancel.is_set():
                _kill_group(pid)
                return WorkerResult(status=Status.cancelled, reason="cancelled")
            if time.monotonic() > deadline:
                _kill_group(pid)
                return WorkerResult(status=Status.timeout,
                                    reason=f"no answer within {limit:.0f} s: killed (a hang, or far too slow)")
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                break
            self._lines(chunk)
        if self.result is not None:
            return self.result
        code = _exit_code(pid, proc, server)
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        detail = _judge_tail(folder)
        what = "an unreadable result" if self.unreadable else "no result"
        return WorkerResult(status=Status.crashed, reason=f"the evaluation's judge process left {what} ({how})"
                            + (f": {detail}" if detail else ""))


def _exit_code(pid: int, proc, server) -> int | None:
    if proc is not None:
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(pid)
            return proc.wait()
    if server is not None:
        return server.exit_code(pid, 10.0)
    return None
