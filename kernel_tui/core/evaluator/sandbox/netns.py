"""A private network for a profiler and the worker it starts: `python netns.py -- COMMAND...` enters new
network (and, unless root, user) namespaces, brings their loopback up and runs COMMAND there.

Nsight Compute talks to the process it profiles over TCP on localhost. A worker in a network namespace of
its own cannot reach ncu, and one allowed onto the host's network could reach any machine. Inside this
namespace there is nothing but loopback, so the profiled worker may have TCP (on ncu's ports only, by
Landlock) while the rest of the world stays out of reach. The worker checks that it sees loopback alone
before it opens anything.

Run as a script (standard library only): the profiler's command line starts it before the package's
import path is known.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sH22x"  # struct ifreq: the name, then the flags in a 24-byte union
EXIT_NO_NAMESPACE = 97


def enter_private_network() -> None:
    """This process, from now on, in a network namespace whose only interface is loopback, up. Root keeps
    its user (ncu reads the GPU's counters as whoever runs it); anyone else gets a user namespace, as a
    network namespace needs one."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare: {os.strerror(code)}")
    if flags & CLONE_NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        now = struct.unpack(IFREQ, fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", now | IFF_UP))


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: netns.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        enter_private_network()
    except OSError as exc:  # ncu's own error format, so that the profiler's log reader quotes it
        name = errno.errorcode.get(exc.errno or 0, "")
        print(f"==ERROR== no private network for the profiler ({name or exc}): profiles need network "
              "namespaces (unprivileged user namespaces, or root)", file=sys.stderr)
        return EXIT_NO_NAMESPACE
    os.execvp(command[0], command)
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
