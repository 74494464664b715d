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

Under Nsight Compute the worker shares a private network namespace with ncu (`netns`: loopback alone),
where it may reach ncu's sockets (TCP on ncu's ports only); it refuses to run if it sees any other
interface. It may also read the folders of what ncu put into it before the sandbox (the libraries mapped
from outside the plan, the folders ncu's variables name: `for_profiled_process`), since ncu loads its
counter library from there once the target runs.

Known limit: a process allowed to run the dynamic loader can ask it to load any readable program. Such a
program is still inside every layer above (same filesystem, network and signal confinement), so it gains
nothing the candidate's own Python could not do.
"""

from kernel_tui.core.evaluator.sandbox.confine import SandboxRefused, apply, landlock_abi
from kernel_tui.core.evaluator.sandbox.guard import Guard
from kernel_tui.core.evaluator.sandbox.models import SandboxPlan, SandboxReport
from kernel_tui.core.evaluator.sandbox.plan import (
    build_plan,
    compiler_toolchain,
    for_profiled_process,
    for_profiler,
    for_worker,
    libcuda_dir,
    with_inductor,
)

__all__ = [
    "Guard", "SandboxPlan", "SandboxRefused", "SandboxReport", "apply", "build_plan", "compiler_toolchain",
    "for_profiled_process", "for_profiler", "for_worker", "landlock_abi", "libcuda_dir", "with_inductor",
]
