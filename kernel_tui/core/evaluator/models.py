"""What crosses the process boundary between the caller and an evaluation worker."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.evaluator.memory import MemoryPlan, evaluator_out_of_memory, is_out_of_memory
from kernel_tui.core.evaluator.sandbox import SandboxPlan, SandboxReport
from kernel_tui.core.gate import Verdict

# How a worker or the judge begins its refusal to run code unconfined (a sandbox layer this machine lacks): a
# fact of the machine, the same for every later run of the session
UNCONFINED_REFUSAL = "candidates would not be confined on this machine"


class Status(StrEnum):  # StrEnum: shown as its value ("ok"), in f-strings too
    ok = "ok"
    compile_error = "compile_error"
    runtime_error = "runtime_error"
    incorrect = "incorrect"
    timeout = "timeout"
    crashed = "crashed"
    policy_violation = "policy_violation"
    invalid_task = "invalid_task"
    cancelled = "cancelled"
    sandbox_violation = "sandbox_violation"  # tried to reach outside the worker (files, network, processes)
    # acted on the evaluation itself: wrote its outputs outside its timed window, left work running on the
    # device after its turn, sent the judge something that is not a message of the protocol
    tampering = "tampering"
    # the evaluator's own failure (it ran out of device memory for its buffers): nothing is said of the
    # candidate, and the round is not judged
    evaluator_fault = "evaluator_fault"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


# window: the judge times a worker's calls across processes (graph and flush: records made before)
TimingMethod = Literal["window", "graph", "flush", "interpreter"]


class TimingPlan(_Frozen):
    pairs: int = 25
    inner_repeats: int = 5
    warmup: int = 10
    method: Literal["auto", "graph", "flush"] = "auto"
    seed: int = 0


class WorkerRequest(_Frozen):
    """One worker process: optional correctness of the candidate, optional one timing block."""

    task: dict  # TaskSpec dumped by alias, revalidated in the worker
    reference_source: str
    generator_source: str | None = None  # the task's input generator, when it has one
    candidate_source: str
    incumbent_source: str | None = None
    device: Literal["cpu", "cuda"]
    check_correctness: bool = True
    timing: TimingPlan | None = None
    block: int = 0
    enforce_policy: bool = True  # False: host-side torch calls are allowed (timing a torch reference)
    sys_path: list[str] = Field(default_factory=list)
    sandbox: SandboxPlan | None = None  # None: the worker runs unconfined, and its result says so
    memory_level: int = 0  # 0: the first memory plan; each retry after the evaluator ran out of memory is smaller
    memory_budget: int | None = None  # bytes the worker may count as free (None: what the device reports)
    # profile: after warm-up calls, one call of the candidate at the timing shape between cudaProfilerStart
    # and Stop (a profiler wrapping the worker records that range alone); nothing is checked or timed
    profile: bool = False
    timeout_seconds: float = 180.0  # the judge's own limit for the block (the caller kills it a little later)
    # run the sides even where essential confinement (user namespaces, Landlock) is missing: --unconfined
    allow_unconfined: bool = False
    # the task's own PyTorch baseline (the user's code, not a candidate's): run even where a layer is missing
    trusted: bool = False
    # drawn by the caller for each block, read by the judge only after its workers are forked: every input,
    # poison and check position derives from it, so no side can know the inputs it will be timed on
    secret: int = 0


class CaseResult(_Frozen):
    shape: str
    seed: int
    passed: bool
    values: Literal["drawn", "edge"] = "drawn"  # edge: the draw with zeros, subnormals and tail values planted
    max_abs_error: float | None = None
    detail: str = ""


class TimingBlock(_Frozen):
    """Paired samples from one process, seconds per call."""

    block: int
    method: TimingMethod
    shape: str
    incumbent: list[float]
    candidate: list[float]
    order: list[str]  # "AB" or "BA" per pair
    inner_repeats: int
    rotating_sets: int = 1
    l2_flush_bytes: int = 0
    launch_overhead_incumbent: float | None = None
    launch_overhead_candidate: float | None = None
    timed_outputs_checked: int = 0
    hold_seconds: float | None = None  # flush mode: how long the GPU was held while the host enqueued
    hold_retakes: int = 0  # samples retaken with a longer hold because enqueueing outran it
    # what this process could not do as designed (no GPU hold, a partial stream-order check), one line each
    warnings: list[str] = Field(default_factory=list)
    memory: MemoryPlan | None = None  # how the block's device memory was planned
    # window timing: the cross-process handoff measured by the probe and subtracted from each window
    handoff_seconds: float | None = None
    phase_seconds: dict[str, float] = Field(default_factory=dict)  # where the block's wall time went

    @field_validator("incumbent", "candidate")
    @classmethod
    def _times(cls, v: list[float]) -> list[float]:
        """A time is positive and finite, or it is no time: such a block is refused, never judged."""
        if not all(0.0 < t < float("inf") for t in v):
            raise ValueError("every sample must be a positive, finite number of seconds")
        return v


class Environment(_Frozen):
    device: Literal["cpu", "cuda"]
    device_name: str
    python: str
    torch: str
    triton: str
    l2_bytes: int | None = None
    sm_count: int | None = None
    vendor: str = ""


class WorkerResult(_Frozen):
    status: Status
    reason: str
    cases: list[CaseResult] = Field(default_factory=list)
    timing: TimingBlock | None = None
    # the same process's blocks at the task's further benchmark shapes (benchmark.shapes after the first)
    more_timings: list[TimingBlock] = Field(default_factory=list)
    environment: Environment | None = None
    seconds: dict[str, float] = Field(default_factory=dict)  # load, correctness, timing
    sandbox: SandboxReport | None = None
    # the most device memory PyTorch's tensors took at once (max_memory_allocated; GPU only): the allocator's
    # cache may hold more of the device than this
    peak_memory_bytes: int | None = None
    memory_retries: list[str] = Field(default_factory=list)  # set by the caller: see EvalResult
    retry_smaller: bool = True  # an evaluator_fault a smaller memory plan may cure (not a task that cannot fit)
    kernels: list[KernelFacts] = Field(default_factory=list)  # the candidate's compiled kernels (GPU only)
    secret: int | None = None  # the block's secret seed, told once the block is over (to reproduce its draws)


class ShapeFigure(_Frozen):
    """One benchmark shape's share of an evaluation with several: its weight in the gate's geometric mean
    and what its own pairs say."""

    shape: str
    weight: float
    improvement: float  # 1 - geometric mean of t_candidate / t_incumbent over the shape's pairs
    incumbent_seconds: float
    candidate_seconds: float


class EvalResult(_Frozen):
    """The outcome of one evaluation: policy, correctness, timing blocks and the gate's verdict."""

    status: Status
    reason: str
    device: Literal["cpu", "cuda"]
    timing_label: str = ""
    cases: list[CaseResult] = Field(default_factory=list)
    blocks: list[TimingBlock] = Field(default_factory=list)
    confirmation: list[TimingBlock] = Field(default_factory=list)
    more_blocks: list[TimingBlock] = Field(default_factory=list)  # further benchmark shapes, every process
    shapes: list[ShapeFigure] = Field(default_factory=list)  # per benchmark shape, when there are several
    verdict: Verdict | None = None
    candidate_seconds: float | None = None  # median kernel time per call
    incumbent_seconds: float | None = None
    launch_overhead_seconds: float | None = None
    environment: Environment | None = None
    policy_rule: str | None = None
    seconds: dict[str, float] = Field(default_factory=dict)
    sandbox: SandboxReport | None = None  # what confined the first worker (and what was missing)
    peak_memory_bytes: int | None = None  # the largest of its worker processes' (GPU only)
    # the evaluator's own out-of-memory retries, one line each: what failed and the smaller plan it retried with
    memory_retries: list[str] = Field(default_factory=list)
    kernels: list[KernelFacts] = Field(default_factory=list)  # the candidate's compiled kernels (GPU only)

    @property
    def accepted(self) -> bool:
        return self.verdict is not None and self.verdict.accepted


def last_resort(exc: BaseException, who: str) -> WorkerResult:
    """An exception nothing else caught in a trusted process (`who`: judge, worker), as a result rather than a
    silent death: out of memory is the evaluator's own fault, anything else a crash named with its line."""
    import traceback

    if is_out_of_memory(exc):
        return WorkerResult(status=Status.evaluator_fault, reason=evaluator_out_of_memory("evaluation", exc, None))
    tail = traceback.format_exc().strip().splitlines()[-1]
    return WorkerResult(status=Status.crashed, reason=f"{who} error: {type(exc).__name__}: {exc} [{tail}]")
