"""What the judge and a worker say to each other (and what the caller writes for the judge to fork a worker by). Commands go from the trusted judge to a worker; replies come
back from a process that runs untrusted code, so a reply is validated field by field, bounded in size, and
can only ever say something against its own side (a failure, a rule it broke): never a verdict, never a time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.evaluator.sandbox.models import SandboxPlan, SandboxReport

Text = Annotated[str, StringConstraints(max_length=4000)]
Line = Annotated[str, StringConstraints(max_length=600)]
# What a worker may say went wrong with its own side. Everything about correctness and time is the judge's.
WorkerStatus = Literal["compile_error", "runtime_error", "policy_violation", "sandbox_violation", "evaluator_fault"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArenaSpec(_Frozen):
    """How a worker opens an arena (a CPU arena's descriptor travels beside this message)."""

    arena: int
    kind: Literal["memfd", "cuda"]
    nbytes: int = Field(gt=0)
    handle: str = ""  # the CUDA IPC handle, hex


class TensorPlace(_Frozen):
    """Where one launch argument lives in an arena."""

    arena: int
    offset: int = Field(ge=0)
    dtype: str
    shape: list[int]


class WorkerSetup(BaseModel):
    """What the judge gives a worker when it forks it (written by the caller beside the judge's request)."""

    model_config = ConfigDict(frozen=True)
    role: str  # candidate, incumbent, probe
    source: str  # the side's module ('' for the probe)
    entrypoint: str
    device: str
    enforce_policy: bool = True  # the host-op recorder on (off for the task's own PyTorch code)
    sandbox: SandboxPlan | None = None  # None: unconfined, said in every result
    folder: str  # the worker's own, fresh folder (its HOME, TMPDIR and only writable place with the cache)
    triton_cache: str
    # A trusted PyTorch side (the reference called as a user calls it, allocating its own results) returns its
    # outputs instead of writing them: the launch arguments at these positions receive them on `deliver`,
    # after the timed region. Only ever set by the caller for sources it wrote or the task's eager baseline:
    # work done at delivery is never timed, so no candidate may choose it.
    returns: list[int] | None = None




class Argument(_Frozen):
    """One launch argument of a set: a tensor in an arena, or a scalar whose value comes with each call."""

    place: TensorPlace | None = None
    scalar: str | None = None


class Call(_Frozen):
    set_id: int
    scalars: dict[str, int | float] = Field(default_factory=dict)


class Command(_Frozen):
    op: Literal["load", "arena", "signals", "set", "drop", "call", "window", "overhead", "capture", "facts", "settle",
                "deliver", "exit"]
    arena: ArenaSpec | None = None  # arena, signals
    set_id: int | None = None  # set
    args: list[Argument] = Field(default_factory=list)  # set
    sets: list[int] = Field(default_factory=list)  # drop
    arenas: list[int] = Field(default_factory=list)  # drop
    calls: list[Call] = Field(default_factory=list)  # call, window, overhead, capture
    seq: int | None = None  # call, window (GPU): wait for the gate word to reach it, write it to done after
    repeat: int = 1  # call: each call this many times (warm-up); overhead: launches per measurement
    hold: bool = False  # call: a returning side keeps its results for `deliver` (a window always does)
    shape: str = ""  # call: the task shape, for the compiled kernels' facts
    nonce: int = 0  # numbers the command; its reply must carry the same: nothing early, late or twice


class Oom(_Frozen):
    requested: int | None = Field(default=None, ge=0)
    held: int = Field(default=0, ge=-(2**62), le=2**62)


class Reply(_Frozen):
    """A worker's answer. `ok` False always carries a status and a reason."""

    ok: bool
    nonce: int = 0  # the command's it answers
    status: WorkerStatus | None = None
    reason: Text = ""
    oom: Oom | None = None
    seconds: float | None = Field(default=None, ge=0.0, le=3600.0)  # host seconds (launch overhead)
    violations: list[Line] = Field(default_factory=list, max_length=20)  # what the sandbox's audit hook saw
    forbidden: Line | None = None  # a host-side torch op the recorder saw
    unjoined: Line | None = None  # capture: work forked off the calling stream and never joined back
    kernels: list[KernelFacts] = Field(default_factory=list, max_length=64)
    sandbox: SandboxReport | None = None
    peak_memory_bytes: int | None = Field(default=None, ge=0)

    def model_post_init(self, _context) -> None:
        if not self.ok and (self.status is None or not self.reason):
            raise ValueError("a failure must say its status and reason")
