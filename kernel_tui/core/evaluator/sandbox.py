"""The OS sandbox around every evaluation worker: it holds when the static policy misses.

A candidate is untrusted code (a model wrote it, or a person pasted it), and its host code runs in the
worker. The static policy keeps a candidate honest about *how* it computes; this module keeps whatever
slips past it from reaching the rest of the machine. The caller builds a `SandboxPlan` (what the worker may
read, write and execute) and the worker applies it to itself, first thing, before any candidate code is
loaded. Layers, each independent of the others, none needing root:

- no new privileges (`PR_SET_NO_NEW_PRIVS`): nothing exec'd can gain rights;
- a user and a network namespace: no network at all, and no capability over the host even for root;
- a seccomp filter that refuses `socket()` (a Unix socket reaches other services through the filesystem,
  which a network namespace does not cover; on a GPU only Unix sockets are allowed, since the CUDA driver
  opens one) and io_uring, which can open sockets without that call; on the CPU, also any new process;
- Landlock: reads only of what Python, torch, triton, the compiler and the GPU need; writes only in the
  worker's own folder and the Triton cache; execution only of the compiler Triton runs (ptxas, the C
  compiler and its helpers); no TCP; no signals to, or abstract sockets of, processes outside the sandbox;
- resource limits: processes, file size, core dumps, and address space on the CPU.

Where the running kernel lacks a feature, the report says which protection is missing; nothing becomes
silently weaker. An audit hook mirrors the same rules inside Python so that an attempt is *named*
(`sandbox-write: ...`) even when the candidate catches the error the kernel gave it.

Known limit: a process allowed to run the dynamic loader can ask it to load any readable program. Such a
program is still inside every layer above (same filesystem, network and signal confinement), so it gains
nothing the candidate's own Python could not do.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import glob
import os
import platform
import resource
import shutil
import struct
import subprocess
import sys
import types
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# --- what crosses the process boundary ------------------------------------------------------------


class SandboxPlan(BaseModel):
    """What a worker may touch. Built by the caller, applied by the worker to itself."""

    model_config = ConfigDict(frozen=True)
    read: list[str] = Field(default_factory=list)  # directories and files, read only
    write: list[str] = Field(default_factory=list)  # directories: the worker's folder, the Triton cache
    execute: list[str] = Field(default_factory=list)  # files: the compiler toolchain Triton runs
    devices: list[str] = Field(default_factory=list)  # device files: read, write and ioctl
    max_processes: int = 512  # threads count too: CUDA, OpenMP and the compiler need some
    max_file_bytes: int = 4 * 2**30
    max_address_space: int | None = None  # CPU only: CUDA reserves far more address space than it uses
    unix_sockets: bool = False  # the CUDA driver opens a Unix socket at initialisation (measured on an H200)


class SandboxReport(BaseModel):
    """What was in force for one worker, what was missing and why, and what the candidate tried."""

    model_config = ConfigDict(frozen=True)
    active: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    violations: list[str] = Field(default_factory=list)  # "rule: detail", first ones only

    @property
    def complete(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        if not self.active and self.missing:
            return "sandbox off: " + "; ".join(self.missing)
        return "sandbox: " + ", ".join(self.active) + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")


# --- building the plan (caller side; never imports torch or triton) -------------------------------

# Files under /etc that the loader, Python and the compiler read; nothing else there (shadow, keys, ...).
ETC_FILES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf", "passwd", "group",
    "host.conf", "os-release", "gai.conf",
)
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/proc", "/sys")
DEVICE_GLOBS = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
    "/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/kfd", "/dev/dri/*",
)


def _package_dir(name: str) -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _which(name: str) -> str | None:
    found = shutil.which(name)
    return os.path.realpath(found) if found else None


@functools.cache
def compiler_toolchain() -> tuple[str, ...]:
    """The executables Triton runs to build a GPU kernel: ptxas and friends from its own package, the C
    compiler it builds launchers with (and the programs that compiler runs), and the dynamic loader those
    programs need. Not ldconfig: it is a shell script on some systems, so the caller finds libcuda for
    Triton instead (`libcuda_dir`)."""
    files: set[str] = set()
    triton = _package_dir("triton")
    if triton is not None:
        files.update(os.path.realpath(p) for p in glob.glob(str(triton / "backends" / "*" / "bin" / "*")))
    for var in ("TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_HIP_LLD_PATH"):
        if os.environ.get(var):
            files.add(os.path.realpath(os.environ[var]))
    # Triton takes $CC, else gcc, else clang; `cc` too, for other builders: each driver and its helpers
    drivers = {os.path.realpath(d) for d in (os.environ.get("CC"), *map(shutil.which, ("gcc", "clang", "cc"))) if d}
    for cc in sorted(drivers):
        files.add(cc)
        for prog in ("cc1", "as", "collect2", "ld", "lto-wrapper"):
            try:
                out = subprocess.run([cc, f"-print-prog-name={prog}"], capture_output=True, text=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                continue
            path = out.stdout.strip()
            resolved = os.path.realpath(path) if os.path.isabs(path) else _which(path)
            if resolved and os.path.isfile(resolved):
                files.add(resolved)
    for loader in glob.glob("/lib*/ld-linux*.so*") + glob.glob("/lib/*/ld-linux*.so*"):
        files.add(os.path.realpath(loader))
    return tuple(sorted(p for p in files if os.path.isfile(p)))


@functools.cache
def libcuda_dir() -> str | None:
    """The folder of libcuda.so.1, as Triton would find it with `ldconfig -p`; asked here, in the trusted
    caller, and handed to workers as TRITON_LIBCUDA_PATH so that no worker needs to run ldconfig."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", shutil.which("ldconfig")):
        if not ldconfig or not os.path.exists(ldconfig):
            continue
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in out.splitlines():
            if line.strip().startswith("libcuda.so.1 ") and "=>" in line:
                return os.path.dirname(line.split("=>", 1)[1].strip())
    return None


def _install_prefixes(executables) -> list[str]:
    """Where each compiler program lives, read as a whole: a C compiler reads its headers, specs and
    start files from beside its programs (/opt/gcc/bin/gcc -> /opt/gcc)."""
    out = []
    for exe in executables:
        folder = os.path.dirname(exe)
        out.append(os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder)
    return out


def _existing(paths) -> list[str]:
    out: list[str] = []
    for p in paths:
        if p and os.path.exists(p):
            real = os.path.realpath(p)
            if real not in out:
                out.append(real)
    return out


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def _library_paths(python_paths: list[str]) -> list[str]:
    """The import path minus folders that hold more than libraries: a checkout of kernel-tui (its
    workspaces live there; the package itself is added alone), the current folder and the home folder."""
    skip = {os.path.realpath(os.getcwd()), os.path.realpath(os.path.expanduser("~"))}
    return [
        p for p in python_paths
        if os.path.realpath(p) not in skip and not os.path.isfile(os.path.join(p, "kernel_tui", "__init__.py"))
    ]


def build_plan(device: str, triton_cache: Path, python_paths: list[str]) -> SandboxPlan:
    """The plan for every worker of one evaluator; `for_worker` adds each worker's own folder."""
    cuda_dirs = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), os.environ.get("ROCM_PATH"), "/opt/rocm"]
    ld_dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    package = Path(__file__).resolve().parents[2]  # kernel_tui itself, not the folder that holds it
    execute = list(compiler_toolchain()) if device == "cuda" else []
    read = _existing([
        *SYSTEM_READ, *(f"/etc/{f}" for f in ETC_FILES), sys.prefix, sys.base_prefix, sys.exec_prefix,
        *_library_paths(python_paths), str(package), *cuda_dirs, *ld_dirs, *_install_prefixes(execute),
        libcuda_dir() if device == "cuda" else None,
    ])
    devices = _existing(p for pattern in DEVICE_GLOBS for p in glob.glob(pattern))
    memory = _memory_bytes()
    return SandboxPlan(
        read=read, write=[str(Path(triton_cache).resolve())], devices=devices, execute=execute,
        max_address_space=memory // 2 if device == "cpu" and memory else None, unix_sockets=device == "cuda",
    )


def for_worker(plan: SandboxPlan, workdir: Path) -> SandboxPlan:
    return plan.model_copy(update={"write": [str(Path(workdir).resolve()), *plan.write]})


# --- applying it (worker side) --------------------------------------------------------------------

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on x86-64 and arm64.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
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
    "x86_64": {"socket": 41, "clone": 56, "fork": 57, "vfork": 58, "io_uring_setup": 425, "clone3": 435},
    "aarch64": {"socket": 198, "clone": 220, "io_uring_setup": 425, "clone3": 435},
}
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x10000


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


def _namespaces(libc) -> tuple[str, str | None]:
    """A new user namespace (mapped to the same ids) and a new network namespace. The user namespace
    needs a process with one thread: the fork server's children and a fresh worker both are, here."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        why = _err("unshare(user, net)")
        if ctypes.get_errno() == errno.EINVAL:
            why += f" with {len(os.listdir('/proc/self/task'))} threads"
        # root can still leave the network where a user namespace cannot be had
        if os.geteuid() == 0 and libc.unshare(CLONE_NEWNET) == 0:
            return "no network (network namespace)", None
        return "no network", why
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    except OSError as exc:
        return "no network (user and network namespaces)", f"user namespace id map ({exc.strerror})"
    return "no network (user and network namespaces)", None


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
        rel = lambda target: labels[target] - at - 1 if target else 0  # noqa: E731
        out.append(struct.pack("HBBI", code, rel(jt), rel(jf), k))
        at += 1
    return b"".join(out)


def _seccomp(libc, no_processes: bool, unix_sockets: bool = False) -> str | None:
    machine = platform.machine()
    if machine not in AUDIT_ARCH:
        return f"no syscall table for {machine}"
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
    program += [(jeq, nr["io_uring_setup"], "deny", None)]
    if unix_sockets:
        program += [(jeq, nr["socket"], "socket", None)]
    else:
        program += [(jeq, nr["socket"], "deny", None)]
    if no_processes:  # threads yes, processes no: the interpreter needs no compiler
        program += [(jeq, nr[name], "deny", None) for name in ("fork", "vfork") if name in nr]
        program += [(jeq, nr["clone3"], "nosys", None), (jeq, nr["clone"], "clone", "allow"), ("clone",),
                    (ld, 16, None, None),  # low word of clone's flags
                    (jset, CLONE_THREAD, "allow", "deny")]
    program += [(ret, 0x7FFF0000, None, None)]
    if unix_sockets:
        program += [("socket",), (ld, 16, None, None), (jeq, 1, "allow", "deny")]  # AF_UNIX only
    program += [("allow",), (ret, 0x7FFF0000, None, None),  # SECCOMP_RET_ALLOW
                ("deny",), (ret, 0x00050000 | errno.EACCES, None, None),  # SECCOMP_RET_ERRNO
                ("nosys",), (ret, 0x00050000 | errno.ENOSYS, None, None)]  # glibc then falls back to clone
    raw = _bpf(program)
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
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
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
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return [], [_err("Landlock restrict_self")]
    finally:
        os.close(ruleset)
    active = [f"Landlock ABI {abi} (filesystem)"]
    missing = []
    if abi < 2:
        missing.append(f"Landlock ABI {abi}: renames across folders are not controlled")
    if handled_net:
        active.append("Landlock TCP")
    if scoped:
        active.append("Landlock scopes (signals, abstract sockets)")
    else:
        missing.append(f"Landlock ABI {abi} < 6: signals and abstract sockets outside the sandbox are not scoped")
    if abi < 5:
        missing.append(f"Landlock ABI {abi} < 5: device ioctls are not restricted")
    return active, missing


def apply(plan: SandboxPlan) -> SandboxReport:
    """Confine this process by `plan`, as far as the kernel allows; say what is in force and what is not."""
    sys.dont_write_bytecode = True  # importing must not try to write into read-only package folders
    libc = _libc()
    active: list[str] = []
    missing: list[str] = []

    def layer(name: str, why: str | None) -> None:
        (missing.append(f"{name}: {why}") if why else active.append(name))

    layer("no new privileges", _no_new_privs(libc))
    layer(*_namespaces(libc))
    on, off = _limits(plan)
    active += on
    missing += off
    no_processes = not plan.execute
    what = ("Unix sockets only" if plan.unix_sockets else "no sockets") + (", no new processes" if no_processes else "")
    layer(f"{what} (seccomp)", _seccomp(libc, no_processes, plan.unix_sockets))
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


# --- naming what the candidate tried ---------------------------------------------------------------

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# audit events that change the filesystem, and which of their arguments are paths
FS_CHANGES = {
    "os.mkdir": (0,), "os.rmdir": (0,), "os.remove": (0,), "os.rename": (0, 1), "os.link": (0, 1),
    "os.symlink": (1,), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
    "os.mkfifo": (0,), "os.mknod": (0,), "os.setxattr": (0,), "os.removexattr": (0,), "shutil.rmtree": (0,),
}
EXEC_EVENTS = {"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "pty.spawn"}


STDLIB = os.path.dirname(os.__file__) + os.sep


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


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
            self._record("sandbox-native", f"{event} — raw native calls go around every check")

    def _open(self, path, mode, flags) -> None:
        if isinstance(path, int) or path is None:
            return
        path = os.fsdecode(path)
        real = os.path.realpath(path)
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & WRITE_FLAGS)
        if writing:
            self._write("write to", path)
        elif not writing and not _under(real, self.readable) and real != "/dev" and self._from_candidate():
            # only the candidate's own reads are named: libraries probe optional files (package metadata,
            # say), and the kernel refuses those quietly either way
            self._record("sandbox-read", f"read of {path} — outside what an evaluation needs")

    def _write(self, what: str, path: str) -> None:
        real = os.path.realpath(path)
        if not _under(real, self.plan.write) and not _under(real, self.plan.devices):
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
