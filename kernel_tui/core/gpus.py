"""A pool of devices leased one job at a time, so that a suite runs one task per GPU in parallel.

A lease covers a whole task (its session and its scoring), never a single timing block: the Evaluator pins
every worker of a task to the leased GPU (CUDA_VISIBLE_DEVICES), so both sides of each paired block, and
every block a gate decision compares, run on the same device. A device that faults leaves the pool with its
reason and its job runs again on another device.

The calling process never initialises CUDA (the evaluator's fork server forks workers that each make their
own context): GPUs are counted from CUDA_VISIBLE_DEVICES or `nvidia-smi -L`, and checked by a child
interpreter. Without GPUs the pool holds CPU slots (`cpu:0`, `cpu:1`, …) so the same code runs on Triton's
interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from kernel_tui.core.errors import KernelTuiError

CPU_SLOT = "cpu:"
HEALTH_TIMEOUT = 120.0  # seconds: a torch import and a first context, on a busy host
# a tiny op with a synchronize: an Xid-faulted or wedged device fails it or hangs past the timeout
_HEALTH_SOURCE = (
    "import torch\n"
    "x = torch.ones(1024, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "assert float((x + x).sum()) == 2048.0\n"
    "print('ok')\n"
)

J = TypeVar("J")
R = TypeVar("R")
HealthCheck = Callable[[str], "str | None"]


class GpuError(KernelTuiError):
    """A device spec that names no usable device."""


class DeviceFault(KernelTuiError):
    """The device failed, not the job: the device leaves the pool and the job runs on another one."""


class PoolExhausted(KernelTuiError):
    """Every device of the pool is out: the jobs left cannot run."""


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """One job's end: its value, or the error it raised (a job's own failure is never retried)."""

    value: R | None = None
    error: Exception | None = None
    device: str | None = None  # where it last ran

    @property
    def ok(self) -> bool:
        return self.error is None


def is_cpu_slot(device: str) -> bool:
    return device.startswith(CPU_SLOT)


def gpu_of(device: str) -> str | None:
    """What an Evaluator is pinned to for a leased device: the GPU id, or None for a CPU slot."""
    return None if is_cpu_slot(device) else device


def describe(device: str) -> str:
    """How progress lines name a device."""
    return device if is_cpu_slot(device) else f"GPU {device}"


def visible_devices(env: Mapping[str, str]) -> list[str] | None:
    """The devices a process with environment `env` may use, as CUDA reads CUDA_VISIBLE_DEVICES (None: unset,
    every device). A worker of an Evaluator pinned to a GPU sees that one alone, so both sides of each of its
    paired blocks run on it."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    ids: list[str] = []
    for part in (p.strip() for p in value.split(",")):
        if not part or part.startswith("-"):  # CUDA stops at the first invalid entry
            break
        ids.append(part)
    return ids


def visible_gpus() -> list[str]:
    """The host's GPUs as CUDA_VISIBLE_DEVICES names them, asked without initialising CUDA here."""
    named = visible_devices(os.environ)
    if named is not None:
        return named
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            out = None
        if out is not None and out.returncode == 0:
            return [str(i) for i, line in enumerate(ln for ln in out.stdout.splitlines() if ln.startswith("GPU "))]
    try:  # no nvidia-smi (a ROCm host, a container without it): torch in a child interpreter
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                             capture_output=True, text=True, timeout=HEALTH_TIMEOUT)
        return [str(i) for i in range(int(out.stdout.strip().splitlines()[-1]))]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return []


def cuda_health(device: str, timeout: float = HEALTH_TIMEOUT) -> str | None:
    """None when a tiny CUDA op runs on `device` in a child interpreter, else why not, in one line."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": device}
    try:
        out = subprocess.run([sys.executable, "-c", _HEALTH_SOURCE], env=env, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"GPU {device}: a tiny CUDA op did not finish within {timeout:g} s"
    except OSError as exc:
        return f"GPU {device}: the health check could not start: {exc}"
    if out.returncode == 0 and out.stdout.strip().endswith("ok"):
        return None
    last = next((ln for ln in reversed(out.stderr.splitlines()) if ln.strip()), f"exit status {out.returncode}")
    return f"GPU {device} failed a tiny CUDA op: {last.strip()[:200]}"


_UUID_SOURCE = "import torch; print(torch.cuda.get_device_properties(0).uuid)"


def gpu_uuid(timeout: float = HEALTH_TIMEOUT) -> str | None:
    """The UUID of the first GPU this process may use (as CUDA_VISIBLE_DEVICES leaves it), from a child
    interpreter; None when it cannot be told."""
    try:
        out = subprocess.run([sys.executable, "-c", _UUID_SOURCE], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[-1].strip() if out.returncode == 0 and lines and lines[-1].strip() else None


def shared_gpus(uuids: Mapping[str, str | None]) -> str | None:
    """One line naming workers that would share one GPU (same UUID), or None. Two workers on one GPU time
    each other's kernels: a suite must refuse them before anything runs."""
    by_gpu: dict[str, list[str]] = {}
    for worker, uuid in uuids.items():
        if uuid:
            by_gpu.setdefault(uuid, []).append(worker)
    shared = [(uuid, sorted(ws)) for uuid, ws in by_gpu.items() if len(ws) > 1]
    if not shared:
        return None
    uuid, workers = shared[0]
    more = f" (and {len(shared) - 1} more GPU(s) shared)" if len(shared) > 1 else ""
    return (f"workers {', '.join(workers)} use the same GPU ({uuid}){more}: start each worker with its own "
            "CUDA_VISIBLE_DEVICES, one worker per GPU")


def parse_count(spec: str | None) -> int | None:
    """The N of a spec that is a count, else None."""
    if spec is None or not spec.strip().isdigit():
        return None
    n = int(spec)
    if n < 1:
        raise GpuError(f"--gpus {spec}: a count must be at least 1")
    return n


class GpuPool:
    def __init__(self, devices: Sequence[str], health_check: HealthCheck | None = None) -> None:
        if not devices:
            raise GpuError("a device pool needs at least one device")
        if len(set(devices)) != len(devices):
            raise GpuError(f"a device is named twice: {', '.join(devices)}")
        self.all_devices = list(devices)
        self.health_check = health_check
        self._free: deque[str] = deque(devices)
        self._out: dict[str, str] = {}
        self._cond = threading.Condition()

    @classmethod
    def cpu(cls, slots: int) -> GpuPool:
        """`slots` interpreter jobs at once, no health check (the CPU does not fault like a GPU)."""
        return cls([f"{CPU_SLOT}{i}" for i in range(max(1, slots))])

    @classmethod
    def detect(cls, spec: str | None, cpu_slots: int = 1, health_check: HealthCheck | None = cuda_health) -> GpuPool:
        """"all" or None: every visible GPU; "N": the first N of them; "0,2": those ids (a single id as "3,").
        On a host without GPUs, CPU slots: N of them for a count, else `cpu_slots`."""
        text = (spec or "all").strip()
        if "," in text:
            ids = [p.strip() for p in text.split(",") if p.strip()]
            if not ids:
                raise GpuError(f"--gpus {spec}: names no device")
            return cls(ids, health_check)
        count = parse_count(text)
        if count is None and text != "all":
            raise GpuError(f"--gpus {spec}: expected all, a count (2) or a list of ids (0,2)")
        visible = visible_gpus()
        if not visible:
            return cls.cpu(count or cpu_slots)
        if count is not None and count > len(visible):
            raise GpuError(f"--gpus {count}: only {len(visible)} GPU(s) visible ({', '.join(visible)})")
        return cls(visible[:count] if count else visible, health_check)

    @property
    def devices(self) -> list[str]:
        """The devices still in the pool."""
        with self._cond:
            return [d for d in self.all_devices if d not in self._out]

    @property
    def out(self) -> dict[str, str]:
        """The devices taken out of the pool, each with its reason."""
        with self._cond:
            return dict(self._out)

    def check(self, device: str) -> str | None:
        """Why `device` is unhealthy, or None (always None without a health check)."""
        return self.health_check(device) if self.health_check is not None else None

    def retire(self, device: str, reason: str) -> None:
        with self._cond:
            self._out.setdefault(device, reason)
            if device in self._free:
                self._free.remove(device)
            self._cond.notify_all()

    def _exhausted(self) -> PoolExhausted:
        gone = "; ".join(f"{describe(d)}: {why}" for d, why in self._out.items())
        return PoolExhausted(f"every device has left the pool ({gone})")

    @contextmanager
    def lease(self) -> Iterator[str]:
        """A free device, held until the block ends; blocks while all are busy."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self._free) or len(self._out) == len(self.all_devices))
            if not self._free:
                raise self._exhausted()
            device = self._free.popleft()
        try:
            yield device
        finally:
            with self._cond:
                if device not in self._out:
                    self._free.append(device)
                self._cond.notify_all()

    def run(self, jobs: Sequence[J], fn: Callable[[J, str], R]) -> list[Outcome[R]]:
        """`fn(job, device)` for every job, one job per device at a time; the outcomes in job order."""
        pending = deque(range(len(jobs)))
        outcomes: list[Outcome[R] | None] = [None] * len(jobs)
        lock = threading.Lock()

        def drain() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.popleft()
                outcomes[index] = self._attempt(jobs[index], fn)

        threads = [threading.Thread(target=drain, name=f"device-{i}", daemon=True)
                   for i in range(min(len(self.all_devices), len(jobs)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [o if o is not None else Outcome(error=self._exhausted()) for o in outcomes]

    def _attempt(self, job: J, fn: Callable[[J, str], R]) -> Outcome[R]:
        """The job on a device; again on another after a device fault, until it ends or no device is left."""
        while True:
            try:
                with self.lease() as device:
                    try:
                        return Outcome(value=fn(job, device), device=device)
                    except DeviceFault as exc:
                        self.retire(device, str(exc) or type(exc).__name__)
                    except Exception as exc:  # noqa: BLE001 - the job's own error unless its device is at fault
                        reason = self.check(device)
                        if reason is None:
                            return Outcome(error=exc, device=device)
                        self.retire(device, reason)
            except PoolExhausted as exc:
                return Outcome(error=exc)
