"""The memory plan: how much device memory one evaluation may use, and on what.

Paired timing holds rotating argument sets — each one call's inputs and their snapshots, the guarded
outputs and a copy of their poison, the expected answer and the previous one (stale poison) — plus an L2
flush buffer, and it must leave room for what the reference and the kernels allocate for themselves. A
small problem gets many sets, so that no call meets its inputs warm in the L2; a problem of several GB
gets as few as one, which costs nothing: a tensor many times the L2 cannot be warm in it anyway, and the
timing label says so. A task that cannot fit even one set is refused before any round is spent.

Nothing here imports torch: check-task plans in the caller's process from a device's free memory, and the
worker plans again from what is free when it starts timing.
"""

from __future__ import annotations

import math
import os
import re

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.format import memory_bytes
from kernel_tui.core.task import TaskSpec

GiB = 2**30
GUARD = 256  # elements on each side of an output (the harness's guard bands)
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4,
               "int64": 8, "bool": 1}
# Part of the free memory that no plan counts on: the allocator's rounding and fragmentation, Triton's
# own buffers, another process's growth.
HEADROOM = 0.10
# The last resort, for a problem that even the smallest plan cannot fit beside a tenth kept free: a fixed amount
# kept free instead. A tenth of an 80 GiB card is 8 GiB, far more than those causes need with the few
# multi-GiB tensors of such a problem (the side processes' contexts are already out of the free memory measured):
# KernelBench's 4096 x 393216 elementwise problems need 73.25 GiB under the smallest plan, and an H100 has
# about 78 GiB free, 70.7 usable at a tenth. Never in a retry: that would plan more than the plan that ran out.
LAST_RESORT_HEADROOM = 2 * GiB
# Room left for what the reference and the kernels allocate beyond their arguments (an eager PyTorch
# reference of several ops holds intermediates the size of its output): this many times one call's tensors,
# and never less than MIN_WORKSPACE.
WORKSPACE_CALLS = 2
MIN_WORKSPACE = 1 * GiB
# The checks work in chunks (harness.CHECK_CHUNK elements, float64 and masks): their scratch, at most.
CHECK_SCRATCH = 1 * GiB
MAX_SETS = 512  # a CUDA-graph replay's calls, each on a set of its own
FLUSH_MIN_BYTES = 256 * 2**20
# One call's tensors at least this many times the L2: no rotation is needed to keep them cold.
COLD_FACTOR = 4
# Each retry after the evaluator ran out of memory is smaller: level 1 two sets at most, SMALLEST one set
# without a precomputed stale answer, with up to twice the room for the kernels (what the first plan's
# budget leaves: no retry needs more memory than the plan it follows).
SMALLEST = 2
MAX_LEVEL = SMALLEST


class MemoryPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    shape: str
    call_bytes: int  # inputs, parameters and outputs of one call
    input_bytes: int
    set_bytes: int  # one rotating set as the harness holds it
    workspace_bytes: int  # kept free for the reference's and the kernels' own allocations
    scratch_bytes: int  # the reference's input copies and the checks' chunks
    flush_bytes: int
    max_sets: int  # rotating sets that fit (0: the task does not fit)
    stale: bool  # another input's answer precomputed as the first stale poison
    budget_bytes: int  # free device memory when planned, less the headroom
    l2_bytes: int
    level: int = 0  # 0 the first plan; each retry after the evaluator ran out of memory is smaller
    last_resort: bool = False  # the smallest plan with LAST_RESORT_HEADROOM kept free, not a tenth

    def peak_bytes(self, sets: int | None = None) -> int:
        n = self.max_sets if sets is None else sets
        return n * self.set_bytes + self.workspace_bytes + self.scratch_bytes + self.flush_bytes

    @property
    def fits(self) -> bool:
        return self.max_sets >= 1

    @property
    def cold_anyway(self) -> bool:
        return self.l2_bytes > 0 and self.call_bytes >= COLD_FACTOR * self.l2_bytes

    def summary(self, sets: int | None = None) -> str:
        n = self.max_sets if sets is None else sets
        text = (f"shape {self.shape}: up to {n} input set(s) × {gib(self.set_bytes)} + {gib(self.workspace_bytes)} room for the "
                f"kernels + {gib(self.flush_bytes + self.scratch_bytes)} flush and scratch = "
                f"{gib(self.peak_bytes(n))} of {gib(self.budget_bytes)} usable")
        if self.level:
            kept = f", {gib(LAST_RESORT_HEADROOM)} kept free" if self.last_resort else ""
            text += f" (reduced plan, level {self.level}{kept})"
        return text

    def refusal(self) -> str:
        need = self.peak_bytes(1)
        return (f"shape {self.shape} does not fit in device memory: one argument set takes {gib(self.set_bytes)} "
                f"({gib(self.call_bytes)} per call, with snapshots, poison and expected answers), plus "
                f"{gib(self.workspace_bytes)} room for the kernels and {gib(self.flush_bytes + self.scratch_bytes)} "
                f"flush and scratch, {gib(need)} in all; {gib(self.budget_bytes)} is usable")


def gib(n: int | float) -> str:
    return memory_bytes(n)


def _bytes_of(spec: TaskSpec, dims: dict[str, int], kinds: set[str], *, guard: bool = False) -> int:
    total = 0
    for t in spec.tensors:
        if t.kind in kinds:
            n = math.prod(spec.tensor_shape(t, dims)) + (2 * GUARD if guard else 0)
            total += n * DTYPE_BYTES[t.dtype]
    return total


def set_bytes(spec: TaskSpec, dims: dict[str, int], *, stale: bool = True, sides: int = 2) -> int:
    """Device bytes one ArgumentSet holds after compute_expected: the judge's inputs (the truth) and each
    side's copy of them, the judge's copy of each output's poison and each side's guarded storage, the
    expected answer, and the previous inputs' answer (stale poison) when `stale`. Timing holds two sides
    (the incumbent and the candidate, each in memory of its own) and a snapshot of each output taken the
    moment a timed window closes."""
    args = _bytes_of(spec, dims, {t.kind for t in spec.tensors if t.is_argument_tensor})
    guarded = _bytes_of(spec, dims, {"output"}, guard=True)
    answer = _bytes_of(spec, dims, {"output"})
    snapshot = 1 if sides > 1 else 0
    return (1 + sides) * args + (1 + sides + snapshot) * guarded + answer * (2 if stale else 1)


def fill_bytes(spec: TaskSpec, dims: dict[str, int]) -> int:
    """The most one argument tensor's fill holds beside the tensor (harness.ArgumentSet): its values drawn as
    float32 with one temporary, or as int64, then converted to its dtype."""
    most = 0
    for t in spec.tensors:
        if t.is_argument_tensor:
            size = DTYPE_BYTES[t.dtype]
            most = max(most, math.prod(spec.tensor_shape(t, dims)) * (8 + (0 if t.dtype == "float32" else size)))
    return most


def plan(spec: TaskSpec, shape: str, dims: dict[str, int], *, free_bytes: int, l2_bytes: int,
         level: int = 0, last_resort: bool = False) -> MemoryPlan:
    """The plan for timing `shape` with `free_bytes` of device memory free (`last_resort`: the smallest plan,
    keeping LAST_RESORT_HEADROOM free where that is less than a tenth)."""
    level = SMALLEST if last_resort else min(level, MAX_LEVEL)
    smallest = level >= SMALLEST
    inputs = _bytes_of(spec, dims, {t.kind for t in spec.tensors if t.is_argument_tensor})
    call = inputs + _bytes_of(spec, dims, {"output"})
    one_set = set_bytes(spec, dims, stale=not smallest)
    scratch = call + CHECK_SCRATCH  # the reference's copies of the inputs and its answer, and the checks
    # the room for the kernels is free while the sets are built: it holds a fill's temporaries too
    workspace = max(MIN_WORKSPACE, WORKSPACE_CALLS * call, fill_bytes(spec, dims) - scratch)
    flush = max(2 * l2_bytes, FLUSH_MIN_BYTES) if l2_bytes else 0
    headroom = free_bytes * HEADROOM
    budget = int(free_bytes - (min(headroom, LAST_RESORT_HEADROOM) if last_resort else headroom))
    if smallest:  # twice the room where the budget has it to give beyond one set, down to one call's where not
        least = max(MIN_WORKSPACE, call, fill_bytes(spec, dims) - scratch)
        workspace = max(least, min(2 * workspace, budget - one_set - scratch - flush))
    room = budget - workspace - scratch - flush
    affordable = max(0, room // max(one_set, 1))
    # level 1: two sets at most (still rotating); SMALLEST: one, without a precomputed stale answer
    max_sets = min(affordable, MAX_SETS, {0: MAX_SETS, 1: 2}.get(level, 1))
    return MemoryPlan(
        shape=shape, call_bytes=call, input_bytes=inputs, set_bytes=one_set, workspace_bytes=workspace,
        scratch_bytes=scratch, flush_bytes=flush, max_sets=int(max_sets), stale=not smallest,
        budget_bytes=budget, l2_bytes=l2_bytes, level=level, last_resort=last_resort,
    )


def fitting_plan(spec: TaskSpec, shape: str, dims: dict[str, int], *, free_bytes: int, l2_bytes: int,
                 level: int = 0) -> MemoryPlan:
    """The plan at `level`, or the smallest where that one cannot hold even one set: one set without the stale
    answer costs nothing a problem of several GB needs (it is cold in the L2 anyway), and refusing it would
    leave such a problem unmeasurable (KernelBench's RMSNorm, 7 GiB in and out, on a 141 GB GPU). Where even
    that cannot fit, and this is a first plan (not a retry), the last resort: the smallest with less kept free."""
    first = plan(spec, shape, dims, free_bytes=free_bytes, l2_bytes=l2_bytes, level=level)
    if first.fits or level >= SMALLEST:
        return first
    smallest = plan(spec, shape, dims, free_bytes=free_bytes, l2_bytes=l2_bytes, level=SMALLEST)
    if smallest.fits or level > 0:
        return smallest
    squeezed = plan(spec, shape, dims, free_bytes=free_bytes, l2_bytes=l2_bytes, last_resort=True)
    return squeezed if squeezed.fits else smallest  # a refusal says what the usual plan needs


_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": GiB, "gb": 10**9, "gib": GiB, "t": 2**40, "tb": 10**12, "tib": 2**40}


def parse_bytes(text: str) -> int:
    """'40GiB', '512 MiB', '1e9' -> bytes (KernelTuiError, one line, otherwise)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in _UNITS:
        raise KernelTuiError(f"not an amount of memory: {text!r} (e.g. 40GiB, 512MiB, or bytes)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


_CUDA_ASKED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_CPU_ASKED = re.compile(r"tried to allocate ([0-9]+) bytes")
_OOM_WORDS = ("out of memory", "can't allocate memory", "ALLOC_FAILED", "OutOfMemory")


def is_out_of_memory(exc: BaseException) -> bool:
    """Device (or, under the CPU interpreter, host) memory ran out; Triton's shared-memory limit is not
    this (it is a compile error)."""
    if type(exc).__name__ == "OutOfResources":
        return False
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        isinstance(exc, MemoryError) or any(w in str(exc) for w in _OOM_WORDS))


def requested_bytes(exc: BaseException) -> int | None:
    """What the failed allocation asked for, from the allocator's message, when it says."""
    text = str(exc)
    if m := _CUDA_ASKED.search(text):
        return int(float(m.group(1)) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": GiB, "TiB": 2**40}[m.group(2)])
    if m := _CPU_ASKED.search(text):
        return int(m.group(1))
    return None


def first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def free_bytes(device: str, budget: int | None) -> int:
    """Memory this worker may plan with: what the device has free (the host's available memory under
    the CPU interpreter), capped by the request's budget."""
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()  # what this process cached but no longer holds is free for the plan
        free = torch.cuda.mem_get_info()[0]
    else:
        free = host_free_bytes()
    return min(free, budget) if budget is not None else free


def host_free_bytes() -> int:
    """The host memory a CPU-interpreter worker may plan with: what the kernel says is available (half the
    physical memory where it cannot be read), and no more than half the address-space limit, if any."""
    import resource

    free = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return min(free, soft // 2) if soft != resource.RLIM_INFINITY else free


def blame_out_of_memory(side: str, cause: str, requested: int | None, held: int,
                        plan: MemoryPlan, what: str) -> tuple[str, str]:
    """(status, reason) for a side's call that ran out of memory: the candidate's fault when it asked for
    more than the room the plan keeps for a kernel's own allocations, or when it fails even under the
    smallest plan; otherwise the evaluator's buffers left too little, and the evaluation is retried smaller."""
    if side == "candidate":
        asked = (requested or 0) + max(held, 0)
        if asked > plan.workspace_bytes:
            return "runtime_error", (
                f"{what}: the candidate ran out of memory asking for {gib(asked)} beyond its arguments; the evaluator "
                f"keeps {gib(plan.workspace_bytes)} free for a kernel's own allocations ({cause})")
        if plan.level >= MAX_LEVEL:
            return "runtime_error", (
                f"{what}: the candidate ran out of memory even under the evaluator's smallest plan "
                f"({plan.summary(1)}) ({cause})")
    return "evaluator_fault", evaluator_out_of_memory(what, cause, plan, side)


def evaluator_out_of_memory(what: str, error: BaseException | str, plan: MemoryPlan | None, side: str = "") -> str:
    during = f" in the {side}'s call" if side else ""
    planned = f" ({plan.summary()})" if plan is not None else ""
    cause = error if isinstance(error, str) else first_line(error)
    return f"{what}: the evaluator ran out of memory{during} with its own buffers{planned}: {cause}"
