"""The judge's handle on one worker process: fork it, hand it memory, ask it to call, stop it between turns,
and tell what happened when it dies.

Trusted code never follows a link or reuses a name in a worker's folder: the folder is created fresh here
(it must not exist), the worker's console files are created in it with O_EXCL|O_NOFOLLOW before the fork,
and their tails are read later through the descriptors kept, whatever the worker did to the names.

A worker is stopped (SIGSTOP) whenever it is not its turn, with every process in its user namespace, so
nothing it left running on the host (a thread, a child) competes with the other side. Work it left on the
GPU is the judge's timing's to find (timing.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

from kernel_tui.core.evaluator.channel import Channel, ChannelError, pair
from kernel_tui.core.evaluator.protocol import Command, Reply, WorkerSetup
from kernel_tui.core.evaluator.sandbox import SandboxReport

PR_SET_PDEATHSIG = 1
STOP_WAIT = 10.0  # seconds for a stop to take (a process inside a driver call stops when it returns)
TAIL_BYTES = 4096


class SideFault(Exception):
    """The side failed or misbehaved; `status` and `reason` are what the result says."""

    def __init__(self, status: str, reason: str, reply: Reply | None = None, role: str = "candidate") -> None:
        super().__init__(reason)
        self.status, self.reason, self.reply, self.role = status, reason, reply, role


def _fresh_file(folder: Path, name: str) -> int:
    """Created here, never there before (no link a worker planted); readable back through this descriptor."""
    return os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _child(sock_fd: int, out_fd: int, err_fd: int, setup: WorkerSetup, judge: int) -> None:
    """In the forked worker, before anything of the side's is loaded."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the judge gone: so is the worker
    if os.getppid() != judge:
        os._exit(71)
    os.setpgid(0, 0)  # a group of its own: signalling "its group" never reaches the judge
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    # only the console and the worker's own socket: not the judge's result channel, not the other side's
    os.closerange(3, sock_fd)
    os.closerange(sock_fd + 1, 1 << 16)
    sys.stdin = open(os.devnull)
    # closefd=False: the wrappers these replace are freed now, and a wrapper that owned 1 or 2 would close
    # it on the way (the next file opened, an arena's memfd, then became the console)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    os.chdir(setup.folder)
    os.environ.update(HOME=setup.folder, TMPDIR=setup.folder, TRITON_CACHE_DIR=setup.triton_cache)
    from kernel_tui.core.evaluator.kernel_worker import main

    main(sock_fd, setup)


class Side:
    def __init__(self, setup: WorkerSetup, pid: int, chan: Channel, err_fd: int) -> None:
        self.setup, self.pid, self.chan, self.err_fd = setup, pid, chan, err_fd
        self.role = setup.role
        self.stopped = False
        self.frozen: list[int] = []  # what the last stop stopped
        self.exit_status: int | None = None
        self.namespace: str | None = None  # the worker's user namespace, once it is in its own
        self.sandbox: SandboxReport | None = None
        self.loaded: Reply | None = None
        self.violations: list[str] = []
        self.nonce = 0  # of the last command sent

    @property
    def returns(self) -> bool:
        """A trusted PyTorch side that returns its outputs: they reach its buffers only on `deliver`."""
        return self.setup.returns is not None

    @classmethod
    def spawn(cls, setup: WorkerSetup) -> Side:
        folder = Path(setup.folder)
        folder.mkdir(mode=0o700)  # fresh, or an error: never a folder a worker had before
        Path(setup.triton_cache).mkdir(parents=True, exist_ok=True)
        out_fd, err_fd = _fresh_file(folder, "stdout.log"), _fresh_file(folder, "stderr.log")
        mine, theirs = pair()
        judge = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                _child(theirs.fileno(), out_fd, err_fd, setup, judge)
            finally:
                os._exit(70)
        theirs.close()
        os.close(out_fd)
        return cls(setup, pid, Channel(mine), err_fd)

    # --- lifecycle -----------------------------------------------------------------------------------------
    def wait_confined(self, timeout: float) -> SandboxReport | None:
        """The worker confined itself and reached the device; what confines it (SideFault otherwise)."""
        first = self._receive(timeout)
        if not first.ok:
            raise SideFault(first.status or "crashed", first.reason, first, self.role)
        self.sandbox = first.sandbox
        self.namespace = self._namespace()
        return self.sandbox

    def load(self, timeout: float) -> None:
        """Let the worker load its side's module (SideFault if that fails)."""
        self.send(Command(op="load"))
        self.loaded = self.reply(timeout, loading=True)

    def _namespace(self) -> str | None:
        try:
            mine, theirs = os.readlink("/proc/self/ns/user"), os.readlink(f"/proc/{self.pid}/ns/user")
        except OSError:
            return None
        return theirs if theirs != mine else None  # never the judge's own: a sweep would stop the judge

    def members(self) -> list[int]:
        """The worker and every process in its user namespace (its children, however detached)."""
        pids = {self.pid}
        if self.namespace is not None:
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{entry.name}/ns/user") == self.namespace:
                            pids.add(int(entry.name))
        return sorted(pids)

    def _signal(self, sig: int, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def stop(self) -> float | None:
        """Freeze the worker (and its namespace) until its next turn; the moment (perf_counter) the worker
        itself was seen stopped, for a clock that must not run on while it works, or None if it was not running."""
        if self.stopped or self.exit_status is not None:
            return None
        self._signal(signal.SIGSTOP, [self.pid])  # the worker first, at once
        seen = self._wait_stopped()
        if self.exit_status is not None:
            return seen
        self.frozen = self.members()  # then whatever it started (a child started in its turn is stopped too)
        self._signal(signal.SIGSTOP, self.frozen)
        self.stopped = True
        return seen

    def _wait_stopped(self) -> float:
        """Until the worker is stopped (or gone); the moment it was seen so. A stop lands in microseconds: the
        first milliseconds are polled without sleeping, so the moment is exact."""
        began = time.perf_counter()
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WUNTRACED | os.WNOHANG)
            except ChildProcessError:
                return time.perf_counter()
            if pid == self.pid:
                if not os.WIFSTOPPED(status):
                    self.exit_status = status
                return time.perf_counter()
            waited = time.perf_counter() - began
            if waited > STOP_WAIT:
                self.close()
                raise SideFault("tampering", f"the {self.role}'s process could not be stopped within "
                                             f"{STOP_WAIT:.0f} s", role=self.role)
            if waited > 5e-3:
                time.sleep(0.0005)

    def resume(self) -> None:
        if self.stopped:
            self._signal(signal.SIGCONT, self.frozen)
            self.stopped = False

    def close(self) -> None:
        """Kill the worker and everything in its namespace; reap it."""
        members = self.members()
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.exit_status is None:
            with contextlib.suppress(ChildProcessError):
                _, self.exit_status = os.waitpid(self.pid, 0)
        self.chan.close()

    # --- talking -----------------------------------------------------------------------------------------
    def request(self, cmd: Command, timeout: float, fds: list[int] | None = None) -> Reply:
        """One command in the worker's turn: resumed, asked, answered, stopped again."""
        self.resume()
        try:
            self.send(cmd, fds)
            return self.reply(timeout)
        finally:
            self.stop()

    def send(self, cmd: Command, fds: list[int] | None = None) -> None:
        self.nonce += 1
        try:
            self.chan.send(cmd.model_copy(update={"nonce": self.nonce}), fds)
        except ChannelError as err:
            raise self._fault(err, 0.0) from None

    def reply(self, timeout: float, *, loading: bool = False) -> Reply:
        """The worker's answer to the last command sent; a failure it reports is raised as SideFault."""
        reply = self._receive(timeout)
        self._take(reply)
        if reply.nonce != self.nonce:  # an answer to no command, or to one before: a message queued up early
            raise SideFault("tampering", f"the {self.role}'s process answered a command it had not been sent "
                                         f"(reply {reply.nonce}, command {self.nonce})", reply, self.role)
        if not reply.ok:
            status = reply.status or "runtime_error"
            if status == "evaluator_fault" and not loading:  # only a worker not yet running side code may say so
                status = "runtime_error"
            raise SideFault(status, reply.reason, reply, self.role)
        return reply

    def _receive(self, timeout: float) -> Reply:
        try:
            return self.chan.receive(Reply, timeout)
        except ChannelError as err:
            raise self._fault(err, timeout) from None

    def _take(self, reply: Reply) -> None:
        if reply.violations:
            self.violations.extend(reply.violations)

    def _fault(self, err: ChannelError, timeout: float) -> SideFault:
        if err.kind == "timeout":
            self.close()
            return SideFault("timeout", f"the {self.role} gave no answer within {timeout:.0f} s: killed "
                                        "(a hang, or far too slow)", role=self.role)
        if err.kind == "garbage":
            return SideFault("tampering", f"the {self.role}'s process sent {err.detail}, not a message of the "
                                          "evaluation's protocol", role=self.role)
        return SideFault("crashed", self.death(), role=self.role)

    def death(self) -> str:
        """Why the worker is gone: its exit code or signal, and the last line it printed."""
        if self.exit_status is None:
            with contextlib.suppress(ChildProcessError):
                for _ in range(200):
                    pid, code = os.waitpid(self.pid, os.WNOHANG)
                    if pid == self.pid:
                        self.exit_status = code
                        break
                    time.sleep(0.01)
        status = self.exit_status
        if status is None:
            how = "it closed its end of the socket"
        elif os.WIFSIGNALED(status):
            how = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"exit code {os.waitstatus_to_exitcode(status)}"
        tail = self.tail()
        return f"the {self.role}'s process died ({how})" + (f": {tail}" if tail else "")

    def tail(self) -> str:
        try:
            size = os.fstat(self.err_fd).st_size
            data = os.pread(self.err_fd, TAIL_BYTES, max(0, size - TAIL_BYTES))
        except OSError:
            return ""
        lines = [ln for ln in data.decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1][-300:] if lines else ""
