"""The judge's line to a worker: one JSON message per packet over a Unix socket pair the judge made.

The judge trusts nothing that comes back. A message is read with a deadline and a size limit, parsed as JSON
and validated against the model the judge expects; anything else (garbage, a message too large, descriptors
nobody asked for, silence past the deadline, a closed socket) is a `ChannelError` naming what happened, which
the judge turns into the candidate's status. Descriptors travel the other way only (an arena's memfd).
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from typing import TypeVar

from pydantic import BaseModel, ValidationError

MAX_MESSAGE = 1 << 20
M = TypeVar("M", bound=BaseModel)


class ChannelError(Exception):
    """The other end misbehaved; `kind` is one of closed, timeout, garbage."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, message: BaseModel | dict, fds: list[int] | None = None) -> None:
        data = (message.model_dump_json() if isinstance(message, BaseModel) else json.dumps(message)).encode()
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.sendall(data)
        except OSError as exc:
            raise ChannelError("closed", f"the other end is gone ({exc.strerror or exc})") from exc

    def receive_raw(self, timeout: float | None) -> tuple[bytes, list[int]]:
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelError("timeout", f"no answer within {timeout:.0f} s")
                try:
                    ready, _, _ = select.select([self.sock], [], [], left)
                except InterruptedError:
                    continue
                if ready:
                    break
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
        except OSError as exc:
            raise ChannelError("closed", f"the socket failed ({exc.strerror or exc})") from exc
        if flags & socket.MSG_TRUNC:
            _close_all(fds)
            raise ChannelError("garbage", f"a message over {MAX_MESSAGE} bytes")
        if not data:
            _close_all(fds)
            raise ChannelError("closed", "the process closed its end")
        return data, fds

    def receive(self, model: type[M], timeout: float | None) -> M:
        """One message from an untrusted sender, validated; descriptors that came with it are closed."""
        data, fds = self.receive_raw(timeout)
        _close_all(fds)
        try:
            return model.model_validate_json(data)
        except (ValidationError, ValueError) as exc:
            first = str(exc).strip().splitlines()
            raise ChannelError("garbage", f"an unreadable message ({first[0][:160] if first else type(exc).__name__})") from None

    def receive_with_fds(self, model: type[M], timeout: float | None) -> tuple[M, list[int]]:
        """One message from the trusted judge, with the descriptors it sent."""
        data, fds = self.receive_raw(timeout)
        try:
            return model.model_validate_json(data), fds
        except (ValidationError, ValueError) as exc:
            _close_all(fds)
            raise ChannelError("garbage", f"an unreadable message: {exc}") from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
