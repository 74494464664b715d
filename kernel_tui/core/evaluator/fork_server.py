"""A long-lived process that forks the evaluator's processes, having paid the imports of torch and triton
once (seconds per process otherwise). It never touches the device, so each child initialises its own.

It forks two kinds of children: a judge (judge.py), handed the write end of the pipe its result goes back
through, and a profile worker (worker.py). Requests arrive on a Unix socket, one packet each, with the pipe's
descriptor beside a judge's request; the server answers on its stdout, one line each: "ready" once, then
"pid ID PID" for each child and "exit PID STATUS" when one ends. EOF on the socket ends the server.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path


class ForkServer:
    def __init__(self, workdir: Path, env: dict[str, str], paths: list[str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(workdir / "fork-server.log", "wb")
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, json.dumps(paths), str(theirs.fileno())],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log, text=True,
            bufsize=1, start_new_session=True, pass_fds=[theirs.fileno()],
        )
        theirs.close()
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

    def spawn(self, kind: str, folder: Path, args: list[str], fd: int | None = None) -> int | None:
        """Fork a `kind` child ("judge" or "profile") in `folder`; its pid, or None if the server is gone."""
        ident = next(self._ids)
        data = json.dumps({"id": ident, "kind": kind, "folder": str(folder), "args": args}).encode()
        try:
            if fd is not None:
                socket.send_fds(self.sock, [data], [fd])
            else:
                self.sock.send(data)
        except OSError:
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
            self.sock.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        self._log.close()


def _child(req: dict, fds: list[int], server_sock: int) -> None:
    """In the forked child: its own session, its folder, its console files there."""
    os.setsid()
    os.close(server_sock)
    folder = req["folder"]
    os.chdir(folder)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    names = ("judge.out", "judge.err") if req["kind"] == "judge" else ("stdout.log", "stderr.log")
    for fd, name in zip((1, 2), names):
        out = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.dup2(out, fd)
    sys.stdin = open(os.devnull)
    # closefd=False: the wrappers these replace are freed now, and a wrapper that owned 1 or 2 would close
    # it on the way (the next file opened, an arena's memfd, then became the console)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    os.environ["HOME"] = os.environ["TMPDIR"] = folder
    if req["kind"] == "judge":
        from kernel_tui.core.evaluator.judge import main as judge_main

        judge_main(folder, fds[0])
    else:
        from kernel_tui.core.evaluator.worker import main as worker_main

        worker_main(req["args"])


def serve(sock_fd: int) -> None:
    """The server's loop: torch and triton are imported once here, never device-initialised."""
    import select

    import torch  # noqa: F401 - the point of the server: pay these imports once
    import triton  # noqa: F401

    from kernel_tui.core.evaluator import harness, judge, kernel_worker, recorder, streams, timing  # noqa: F401

    sock = socket.socket(fileno=sock_fd)
    print("ready", flush=True)
    children: set[int] = set()
    while True:
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
            if not data:
                return
            req = json.loads(data)
            pid = os.fork()
            if pid == 0:
                try:
                    _child(req, fds, sock_fd)
                finally:
                    os._exit(70)
            for fd in fds:
                os.close(fd)
            children.add(pid)
            print(f"pid {req['id']} {pid}", flush=True)
        while children:
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if done == 0:
                break
            children.discard(done)
            print(f"exit {done} {os.waitstatus_to_exitcode(status)}", flush=True)


BOOTSTRAP = (
    "import json,sys;"
    "sys.path[:0]=json.loads(sys.argv[1]);"
    "from kernel_tui.core.evaluator.fork_server import serve;"
    "serve(int(sys.argv[2]))"
)
