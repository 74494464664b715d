"""Naming what the candidate tried: an audit hook that mirrors the plan's rules inside Python."""

from __future__ import annotations

import os
import sys
import types

from kernel_tui.core.evaluator.sandbox.models import SandboxPlan
from kernel_tui.core.evaluator.sandbox.plan import _which, under

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# audit events that change the filesystem, and which of their arguments are paths
FS_CHANGES = {
    "os.mkdir": (0,), "os.rmdir": (0,), "os.remove": (0,), "os.rename": (0, 1), "os.link": (0, 1),
    "os.symlink": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
    "os.mkfifo": (0,), "os.mknod": (0,), "os.setxattr": (0,), "os.removexattr": (0,), "shutil.rmtree": (0,),
}
EXEC_EVENTS = {"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "pty.spawn"}


STDLIB = os.path.dirname(os.__file__) + os.sep


class Guard:
    """An audit hook that mirrors the plan's rules in Python and records every attempt to break them once
    candidate code may run, so the result names the attempt (the kernel refuses it either way). Audit hooks
    cannot be removed. Reads and program starts are named only when the candidate's own code asked."""

    MAX = 20

    def __init__(self, plan: SandboxPlan) -> None:
        self.plan = plan
        self.readable = plan.read + plan.write + plan.execute + plan.devices
        self.violations: list[str] = []
        self.armed = False  # set once candidate code may run: before, only trusted code runs
        self.files: set[str] = set()

    def arm(self, *files: str) -> None:
        """From now on candidate code may run; `files` are its source files, for naming reads."""
        self.armed = True
        self.files.update(files)

    def _from_candidate(self) -> bool:
        """Whether the candidate's own code asked: the nearest caller outside the standard library is
        one of its files. A library that probes (platform.architecture runs `file`, importlib reads
        package metadata) is not named: the kernel refuses it quietly, and the library copes."""
        frame: types.FrameType | None = sys._getframe(3)
        while frame is not None:
            name = frame.f_code.co_filename
            if name in self.files:
                return True
            if not (name.startswith(STDLIB) or name.startswith("<frozen") or name == __file__):
                return False
            frame = frame.f_back
        return False

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _record(self, rule: str, detail: str) -> None:
        if len(self.violations) < self.MAX:
            self.violations.append(f"{rule}: {detail}")

    def _hook(self, event: str, args: tuple) -> None:
        if not self.armed:
            return
        if event == "open":
            self._open(*args[:3])
        elif event in FS_CHANGES:
            for i in FS_CHANGES[event]:
                if i < len(args) and isinstance(args[i], (str, bytes, os.PathLike)):
                    self._write(event, os.fsdecode(args[i]))
        elif event in ("socket.__new__", "socket.connect", "socket.bind", "socket.sendto"):
            self._record("sandbox-network", f"{event} — evaluations have no network")
        elif event in EXEC_EVENTS:
            self._exec(event, args)
        elif event in ("os.fork", "os.forkpty"):
            self._record("sandbox-exec", f"{event} — only the compiler Triton runs may start processes")
        elif event in ("os.kill", "os.killpg") and args and args[0] not in (0, os.getpid(), os.getpgrp()):
            self._record("sandbox-signal", f"{event}({args[0]}) — a candidate may not signal other processes")
        elif event in ("ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function"):
            self._native(event)

    def _native(self, event: str) -> None:
        """The worker's own code drives the device through ctypes (stream memory operations): only the side's
        own native calls are named."""
        if self._from_candidate():
            self._record("sandbox-native", f"{event} — raw native calls go around every check")

    def _open(self, path, mode, flags) -> None:
        if isinstance(path, int) or path is None:
            return
        path = os.fsdecode(path)
        real = os.path.realpath(path)
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & WRITE_FLAGS)
        if writing:
            self._write("write to", path)
        elif not under(real, self.readable) and real != "/dev" and self._from_candidate():
            # only the candidate's own reads are named: libraries probe optional files (package metadata,
            # say), and the kernel refuses those quietly either way
            self._record("sandbox-read", f"read of {path} — outside what an evaluation needs")

    def _write(self, what: str, path: str) -> None:
        real = os.path.realpath(path)
        if not under(real, self.plan.write) and not under(real, self.plan.devices):
            self._record("sandbox-write", f"{what} {path} — only the worker's own folder is writable")

    def _exec(self, event: str, args: tuple) -> None:
        target = args[0] if args else None
        if event == "os.system" or target is None:
            if self._from_candidate():
                self._record("sandbox-exec", f"{event} — only the compiler Triton runs may start processes")
            return
        target = os.fsdecode(target) if isinstance(target, (str, bytes, os.PathLike)) else str(target)
        resolved = os.path.realpath(target) if os.path.isabs(target) else (_which(target) or target)
        if resolved not in self.plan.execute and self._from_candidate():
            self._record("sandbox-exec", f"runs {target} — only the compiler Triton runs may start processes")

    def reason(self) -> str | None:
        if not self.violations:
            return None
        more = len(self.violations) - 1
        return self.violations[0] + (f" (+{more} more)" if more else "")
