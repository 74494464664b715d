"""Applying the plan, in the worker, to itself: no new privileges, namespaces, resource limits,
seccomp and Landlock, each reported as in force or missing (with why)."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct
import sys

from kernel_tui.core.evaluator.sandbox.models import SandboxPlan, SandboxReport

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on x86-64 and arm64.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH, LANDLOCK_RULE_NET_PORT = 1, 2
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

# seccomp: refuse socket() and io_uring_setup(); on the CPU also every new process (threads stay).
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {
    "x86_64": {"socket": 41, "clone": 56, "fork": 57, "vfork": 58, "unshare": 272, "setns": 308,
               "io_uring_setup": 425, "clone3": 435},
    "aarch64": {"socket": 198, "clone": 220, "unshare": 97, "setns": 268, "io_uring_setup": 425, "clone3": 435},
}
# clone()'s flags for new namespaces: a child in a namespace of its own would be out of the judge's reach
# (it stops and kills a worker with every process in the worker's user namespace)
CLONE_NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x10000
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; 0 where it has none (or it is disabled)."""
    try:
        abi = _libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    except (AttributeError, OSError):
        return 0
    return max(0, int(abi))


def _err(what: str) -> str:
    e = ctypes.get_errno()
    return f"{what} ({errno.errorcode.get(e, e)})"


def _no_new_privs(libc) -> str | None:
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return _err("no_new_privs")
    return None


def _namespaces(libc, network: bool = True) -> list[tuple[str, str | None]]:
    """A new user namespace (mapped to the same ids), a new IPC namespace (System V and POSIX message queues
    made here vanish with the worker and never meet another process's) and, with `network`, a new network
    namespace. The user namespace needs a process with one thread: the judge's children are, here (a worker
    under ncu may not be: its injection library starts threads)."""
    uid, gid = os.getuid(), os.getgid()
    if not network:  # the profiler's private network is this worker's already: keep it, drop the rights
        # ncu's injection library starts threads before any of this runs, and a process with threads cannot
        # enter a user namespace: netns.py made one before ncu started, except for root, whom ncu needs as
        # root (the GPU's counters are root's unless the driver allows every user)
        if in_child_user_namespace():
            return [("user namespace (made before the profiler started)", None)]
        if libc.unshare(CLONE_NEWUSER) != 0:
            if ctypes.get_errno() == errno.EINVAL and os.geteuid() == 0:
                return [("user namespace", "not under Nsight Compute as root: its threads run in the worker before "
                                           "the worker can confine itself, and the private network made for it keeps "
                                           "root's user so that it can read the GPU's counters (profile as a user "
                                           "the driver allows, or --unconfined)")]
            return [("user namespace", _unshare_failed("unshare(user)"))]
        return [_map_ids(uid, gid, "user namespace")]
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC) != 0:
        why = _unshare_failed("unshare(user, net, ipc)")
        # root can still leave the network where a user namespace cannot be had: that keeps root's
        # capabilities over the host, so the layer is reported missing, never active
        if os.geteuid() == 0 and libc.unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0:
            return [("no network, no shared IPC (network and IPC namespaces)", None),
                    ("user namespace", f"{why}: the worker keeps root's capabilities over the host")]
        return [("no network", why)]
    return [_map_ids(uid, gid, "no network, no shared IPC (user, network and IPC namespaces)")]


def in_child_user_namespace(uid_map: str = "/proc/self/uid_map") -> bool:
    """Whether this process is in a user namespace other than the host's (whose map is the full range)."""
    try:
        with open(uid_map) as f:
            rows = [line.split() for line in f.read().splitlines() if line.strip()]
    except OSError:
        return False
    return rows != [["0", "0", "4294967295"]]


def _unshare_failed(what: str) -> str:
    """Why unshare failed; EINVAL for a user namespace means this process has threads."""
    invalid = ctypes.get_errno() == errno.EINVAL
    why = _err(what)
    return why + (f" with {len(os.listdir('/proc/self/task'))} threads" if invalid else "")


def _map_ids(uid: int, gid: int, name: str) -> tuple[str, str | None]:
    """Inside a new user namespace: the same ids as outside, and no supplementary groups."""
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    except OSError as exc:
        return name, f"user namespace id map ({exc.strerror})"
    return name, None


def _bpf(program: list[tuple]) -> bytes:
    """Assemble (label,) markers and (code, k, jump_if_true, jump_if_false) instructions, jumps by label."""
    labels, at = {}, 0
    for ins in program:
        if len(ins) == 1:
            labels[ins[0]] = at
        else:
            at += 1
    out, at = [], 0
    for ins in program:
        if len(ins) == 1:
            continue
        code, k, jt, jf = ins
        true_jump = labels[jt] - at - 1 if jt else 0  # jumps count instructions after this one
        false_jump = labels[jf] - at - 1 if jf else 0
        if not (0 <= true_jump <= 255 and 0 <= false_jump <= 255):  # classic BPF jumps forward, by a byte
            raise ValueError(f"seccomp program: instruction {at} jumps {true_jump}/{false_jump}")
        out.append(struct.pack("HBBI", code, true_jump, false_jump, k))
        at += 1
    return b"".join(out)


def seccomp_program(machine: str, no_processes: bool, unix_sockets: bool = False, inet: bool = False) -> bytes:
    """The filter, assembled: no sockets (AF_UNIX only, with `unix_sockets`; also AF_INET and AF_INET6,
    with `inet`), no io_uring, no new namespaces (unshare, setns, clone with a namespace flag; clone3, whose
    flags a filter cannot read, answers ENOSYS and glibc falls back to clone), and with `no_processes` no
    fork/vfork and clone only for threads."""
    unix_sockets = unix_sockets or inet
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    nr = SYSCALLS[machine]
    program: list[tuple] = [
        (ld, 4, None, None),  # seccomp_data.arch
        (jeq, AUDIT_ARCH[machine], "native", "deny"),  # another ABI's table: refuse, never misread numbers
        ("native",),
        (ld, 0, None, None),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        program.append((jge, X32_SYSCALL_BIT, "deny", None))
    program += [(jeq, nr["io_uring_setup"], "deny", None), (jeq, nr["unshare"], "deny", None),
                (jeq, nr["setns"], "deny", None), (jeq, nr["clone3"], "nosys", None)]
    program += [(jeq, nr["socket"], "socket" if unix_sockets else "deny", None)]
    if no_processes:  # threads yes, processes no: the interpreter needs no compiler
        program += [(jeq, nr[name], "deny", None) for name in ("fork", "vfork") if name in nr]
    program += [(jeq, nr["clone"], "clone", "allow"), ("clone",), (ld, 16, None, None)]  # low word of the flags
    if no_processes:
        program += [(jset, CLONE_THREAD, "threads", "deny"), ("threads",)]
    program += [(jset, CLONE_NEW_NAMESPACES, "deny", "allow")]
    if unix_sockets:  # jumps go forward only: the socket test sits before the one allow return
        program += [("socket",), (ld, 16, None, None)]  # the address family
        if inet:  # under a profiler only, whose private network has nothing but loopback
            program += [(jeq, AF_INET, "allow", None), (jeq, AF_INET6, "allow", None)]
        program += [(jeq, AF_UNIX, "allow", "deny")]
    program += [("allow",), (ret, 0x7FFF0000, None, None),  # SECCOMP_RET_ALLOW
                ("deny",), (ret, 0x00050000 | errno.EACCES, None, None),  # SECCOMP_RET_ERRNO
                ("nosys",), (ret, 0x00050000 | errno.ENOSYS, None, None)]  # glibc then falls back to clone
    return _bpf(program)


def _seccomp(libc, no_processes: bool, unix_sockets: bool = False, inet: bool = False) -> str | None:
    machine = platform.machine()
    if machine not in AUDIT_ARCH:
        return f"no syscall table for {machine}"
    raw = seccomp_program(machine, no_processes, unix_sockets, inet)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(raw) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return _err("prctl")
    return None


def _limits(plan: SandboxPlan) -> tuple[list[str], list[str]]:
    """(active, missing) resource limits."""
    active, missing = [], []
    wanted = [
        (resource.RLIMIT_NPROC, plan.max_processes, "processes"),
        (resource.RLIMIT_FSIZE, plan.max_file_bytes, "file size"),
        (resource.RLIMIT_CORE, 0, "no core dumps"),
    ]
    if plan.max_address_space:
        wanted.append((resource.RLIMIT_AS, plan.max_address_space, "memory"))
    for which, value, name in wanted:
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
            active.append(name)
        except (ValueError, OSError) as exc:
            missing.append(f"limit on {name} ({exc})")
    if os.geteuid() == 0 and "processes" in active:
        active.remove("processes")
        if plan.execute:  # without exec rights seccomp refuses every new process instead
            missing.append("process limit: the kernel does not apply it to root; run kernel-tui as a user to bound processes")
    return ([f"limits ({', '.join(active)})"] if active else []), missing


def _landlock(libc, plan: SandboxPlan, abi: int) -> tuple[list[str], list[str]]:
    """(active, missing) after restricting this process with Landlock."""
    fs = _fs_rights(abi)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    # abstract Unix sockets belong to a network namespace: under a profiler that is the private one it
    # shares with ncu alone, which may talk to the worker that way
    scoped = (SCOPE_SIGNAL | (0 if plan.profiler_ports else SCOPE_ABSTRACT_UNIX_SOCKET)) if abi >= 6 else 0
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    attr = struct.pack("QQQ", fs, handled_net, scoped)[:size]
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return [], [_err("Landlock ruleset")]
    read = FS_READ_FILE | FS_READ_DIR
    write = fs & ~(FS_EXECUTE | FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_IOCTL_DEV)
    device = (FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV | FS_TRUNCATE) & fs
    rules = (
        [(p, read) for p in plan.read]
        + [(p, write) for p in plan.write]
        + [(p, FS_EXECUTE | FS_READ_FILE) for p in plan.execute]
        + [(p, device) for p in plan.devices]
        + [("/dev", FS_READ_DIR)]
        # the CUDA driver names its threads (/proc/self/task/TID/comm); this process's own threads only
        + [("/proc/self/task", FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_TRUNCATE)]
    )
    skipped = []
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                skipped.append(path)
                continue
            try:
                if not os.path.isdir(path):
                    rights &= FILE_ONLY
                rule = struct.pack("=Qi", rights & fs, fd)
                if libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.c_char_p(rule), 0) != 0:
                    skipped.append(path)
            finally:
                os.close(fd)
        if handled_net and plan.profiler_ports:  # TCP on the profiler's ports only, both ways
            first, count = plan.profiler_ports
            for port in range(first, first + count):
                rule = struct.pack("=QQ", handled_net, port)
                if libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_NET_PORT, ctypes.c_char_p(rule), 0) != 0:
                    return [], [_err(f"Landlock rule for TCP port {port}")]
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return [], [_err("Landlock restrict_self")]
    finally:
        os.close(ruleset)
    active = [f"Landlock ABI {abi} (filesystem)"]
    missing = []
    if abi < 2:
        missing.append(f"Landlock ABI {abi}: renames across folders are not controlled")
    if handled_net:
        ports = plan.profiler_ports
        active.append(f"Landlock TCP (ports {ports[0]}–{ports[0] + ports[1] - 1} only)" if ports else "Landlock TCP")
    if scoped:
        active.append("Landlock scopes (signals)" if plan.profiler_ports else "Landlock scopes (signals, abstract sockets)")
    else:
        missing.append(f"Landlock ABI {abi} < 6: signals and abstract sockets outside the sandbox are not scoped")
    if abi < 5:
        missing.append(f"Landlock ABI {abi} < 5: device ioctls are not restricted")
    return active, missing


class SandboxRefused(RuntimeError):
    """The plan cannot be applied safely here: the worker must not go on."""


def network_interfaces() -> list[str]:
    """The names of this process's network interfaces (its network namespace's)."""
    import socket

    return sorted(name for _, name in socket.if_nameindex())


def apply(plan: SandboxPlan) -> SandboxReport:
    """Confine this process by `plan`, as far as the kernel allows; say what is in force and what is not."""
    sys.dont_write_bytecode = True  # importing must not try to write into read-only package folders
    libc = _libc()
    active: list[str] = []
    missing: list[str] = []

    def layer(name: str, why: str | None) -> None:
        (missing.append(f"{name}: {why}") if why else active.append(name))

    layer("no new privileges", _no_new_privs(libc))
    if plan.profiler_ports:
        if (interfaces := network_interfaces()) != ["lo"]:  # never open TCP where it could leave the machine
            raise SandboxRefused(f"a profiled worker must run in the profiler's private network (loopback only); "
                                 f"this one sees {', '.join(interfaces) or 'no interface'}")
        active.append("no network (the profiler's private loopback)")
        for name, why in _namespaces(libc, network=False):
            layer(name, why)
    else:
        for name, why in _namespaces(libc):
            layer(name, why)
    on, off = _limits(plan)
    active += on
    missing += off
    no_processes = not plan.execute
    inet = plan.profiler_ports is not None
    what = ("Unix and loopback TCP sockets only" if inet else "Unix sockets only" if plan.unix_sockets else "no sockets") \
        + (", no new processes" if no_processes else "")
    layer(f"{what} (seccomp)", _seccomp(libc, no_processes, plan.unix_sockets, inet))
    if plan.unix_sockets:
        missing.append("Unix sockets: allowed for the CUDA driver, and Landlock cannot confine them by path here")
    abi = landlock_abi()
    if abi <= 0:
        missing.append("Landlock: not available in this kernel, so reads, writes and execution are not confined")
    else:
        on, off = _landlock(libc, plan, abi)
        active += on
        missing += off
    return SandboxReport(active=active, missing=missing)


