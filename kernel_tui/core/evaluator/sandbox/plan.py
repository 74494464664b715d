"""Building the plan, in the trusted caller (never imports torch or triton): what a worker may read,
write and execute, found from this machine and the import path."""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kernel_tui
from kernel_tui.core.evaluator.sandbox.models import SandboxPlan

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


def under(path: str, roots: list[str]) -> bool:
    """Whether `path` is one of `roots` or inside one (by path text: both sides already resolved)."""
    path = os.path.normpath(path)
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in map(os.path.normpath, roots))


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
        files |= _driver_programs(cc, ("cc1", "as", "collect2", "ld", "lto-wrapper"))
    for loader in glob.glob("/lib*/ld-linux*.so*") + glob.glob("/lib/*/ld-linux*.so*"):
        files.add(os.path.realpath(loader))
    return tuple(sorted(p for p in files if os.path.isfile(p)))


def _driver_programs(driver: str, programs: tuple[str, ...]) -> set[str]:
    """The programs a compiler driver runs, as it names them (`-print-prog-name`), resolved."""
    found = set()
    for prog in programs:
        try:
            out = subprocess.run([driver, f"-print-prog-name={prog}"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        path = out.stdout.strip()
        resolved = os.path.realpath(path) if os.path.isabs(path) else _which(path)
        if resolved and os.path.isfile(resolved):
            found.add(resolved)
    return found


@functools.cache
def inductor_toolchain() -> tuple[str, ...]:
    """What torch.compile's Inductor runs besides Triton's toolchain: the C++ compiler (CPU kernels, and its
    probe of the vector instruction sets) with the programs it runs, and the tools torch bundles (the ptxas
    Inductor points Triton at on a GPU), this Python (Inductor loads its vector-ISA probe in a child
    interpreter) and openssl (it hashes precompiled headers with it). Only for the trusted torch.compile side
    of a score; what they run stays inside every layer."""
    files: set[str] = {*compiler_toolchain(), os.path.realpath(sys.executable)}
    files.update(p for p in map(_which, ("openssl",)) if p)
    drivers = {os.path.realpath(d) for d in (os.environ.get("CXX"), *map(shutil.which, ("g++", "c++", "clang++"))) if d}
    for cxx in sorted(drivers):
        files.add(cxx)
        files |= _driver_programs(cxx, ("cc1plus", "cc1", "as", "collect2", "ld", "lto-wrapper"))
    torch_dir = _package_dir("torch")
    if torch_dir is not None:
        files.update(os.path.realpath(p) for p in glob.glob(str(torch_dir / "bin" / "*")))
    return tuple(sorted(p for p in files if os.path.isfile(p) and os.access(p, os.X_OK)))


def with_inductor(plan: SandboxPlan) -> SandboxPlan:
    """A plan that lets Inductor build its kernels: its compilers may run (so processes may be started), and
    their install trees be read."""
    execute = sorted({*plan.execute, *inductor_toolchain()})
    return plan.model_copy(update={"execute": execute, "read": _existing([*plan.read, *_install_prefixes(execute)])})


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
    package = Path(kernel_tui.__file__).resolve().parent  # kernel_tui itself, not the folder that holds it
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


# Where a profiler names the folders it loads libraries from into the process it starts: Nsight Compute's
# counter library folder, the CUDA (and NVTX) injection variables (one path each) and the loader's preload
# list (paths separated by colons or spaces, as the loader reads it).
PROFILER_VARS = ("NV_COMPUTE_PROFILER_PERFWORKS_DIR", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")
PRELOAD_VAR = "LD_PRELOAD"
# Folders a profiler's tree never widens to, nor to any folder above them: what other processes and users
# keep there is none of the worker's business (a stray variable or mapping must not open them).
NEVER_WIDENED = ("/tmp", "/var/tmp", "/dev/shm", "/home", "/root")


def _mapped_files(maps: str) -> list[str]:
    """The files mapped into a process, from its /proc/PID/maps text (a path may hold spaces; a deleted
    file's path may now name another file, so it is left out)."""
    files = (parts[5] for ln in maps.splitlines() if len(parts := ln.split(maxsplit=5)) == 6)
    return list(dict.fromkeys(f for f in files if f.startswith("/") and not f.endswith(" (deleted)")))


def _too_broad(folder: str, plan: SandboxPlan) -> bool:
    """A folder that holds (or is) what the worker may write, or a shared or personal folder: never read whole."""
    return any(under(inside, [folder]) for inside in [*plan.write, *NEVER_WIDENED, str(Path.home())])


def profiler_trees(plan: SandboxPlan, environ: dict[str, str], maps: str) -> list[str]:
    """The folders of what a profiler put into this process before the sandbox: the libraries mapped from
    outside the plan's reads (ncu preloads its injection libraries) and the folders its variables name,
    each with the install tree above it that holds the profiler (a folder within three levels holding an
    `ncu`). ncu loads its counter library from there only after the sandbox is in force: without read
    access, it reports LibraryNotLoaded (measured on an H200 with ncu 2025.3.1)."""
    named = [environ.get(var, "").strip() for var in PROFILER_VARS]
    named = [e for e in [*named, *re.split(r"[:\s]+", environ.get(PRELOAD_VAR, ""))] if os.path.isabs(e)]
    folders = [e if os.path.isdir(e) else os.path.dirname(e) for e in named if os.path.exists(e)]
    folders += [os.path.dirname(f) for f in _mapped_files(maps) if not under(f, plan.read) and os.path.isfile(f)]
    trees: list[str] = []
    for folder in _existing(folders):
        trees.append(folder)
        for up in list(Path(folder).parents)[:3]:
            if (up / "ncu").is_file():
                trees.append(str(up))
                break
    return [t for t in _existing(trees) if not under(t, plan.read) and not _too_broad(t, plan)]


def for_profiled_process(plan: SandboxPlan, environ: dict[str, str], maps: str | None = None) -> SandboxPlan:
    """In the worker, before the plan is applied: a profiled worker may also read the profiler's trees
    (`profiler_trees`; ncu set up this process, and no candidate code has run in it yet). `maps`: this
    process's /proc/self/maps, read when not given."""
    if not plan.profiler_ports:
        return plan
    if maps is None:
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                maps = f.read()
        except OSError:
            maps = ""
    extra = profiler_trees(plan, environ, maps)
    return plan.model_copy(update={"read": [*plan.read, *extra]}) if extra else plan


def for_profiler(plan: SandboxPlan, ncu: str, ports: tuple[int, int]) -> SandboxPlan:
    """A worker started by Nsight Compute loads ncu's injection libraries and sections from its install
    tree (the `ncu` on PATH is often a link or a wrapper script into /opt/nvidia/nsight-compute/<version>),
    and talks to ncu over TCP on `ports` (first, count) inside the private network they share."""
    trees = _existing([os.path.dirname(os.path.abspath(ncu)), os.path.dirname(os.path.realpath(ncu))])
    return plan.model_copy(update={"read": [*plan.read, *(t for t in trees if t not in plan.read)],
                                   "profiler_ports": ports})
