"""Paired, interleaved timing of incumbent (A) and candidate (B) inside one worker process.

On a GPU the kernel is timed, not the launcher. Triton's host-side launch costs about as much as a small
kernel, so events around a plain launch measure the launcher. Two ways around it:
- flush: the GPU is first held busy (a sleep kernel) while the host enqueues every call of the sample,
  each preceded by a memset of at least twice the L2 size; the events then bracket kernels that were
  already queued, L2 cold, whatever the host costs. (Measured on an H200: without the hold, per-call
  syncs let host latency into the events and an A/A pair read 34 vs 69 µs; with it, 23.8 vs 23.9 µs.)
- graph: the calls are captured once in a CUDA graph over rotating input sets that together exceed
  twice the L2, and replayed back to back; no host code runs between kernels. It measures pipelined
  throughput (kernels overlap head and tail), so it reads lower than flush for the same kernel.
`auto` takes flush, the faithful single-call figure, unless the kernel is too short for the event
timer's resolution. Host launch overhead is reported as its own figure. Whatever ran last, each
measurement starts from the same state: outputs poisoned, inputs snapshotted, L2 flushed; and both
sides' outputs are checked afterwards, so neither side's checking work leaks into the other's time.
(Measured on an H200: checking only the candidate's outputs made graph-mode A/A pairs read +1.5%.)
Inputs are refreshed every pair, so a candidate that skips or caches work once it has seen its
buffers fails. The outputs' poison differs on every prepared call (harness.py: NaN, random values and
the previous inputs' answer, in segments drawn from the seed and call index), so a candidate that skips
work where its output already looks written fails a timed call as it fails correctness; the poison is
made on the device before the hold, outside the events, with no host sync.
Graph mode therefore gives every call of a replay a set of its own: a set called twice in one replay
would meet, the second time, the candidate's own last output for the same inputs (poisoning between
the calls would put a copy inside the timed graph), and a kernel that recognises its own output could
skip the work.
How many sets there are is the memory plan's to say (memory.py): a problem of several GB gets as few as
one, and then one call per flush sample. A kernel call that runs out of memory is reported as
KernelOutOfMemory with what it asked for, so the worker can tell the candidate's appetite from the
evaluator's own buffers.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from kernel_tui.core.evaluator.harness import ArgumentSet, CandidateFault, tensor_bytes
from kernel_tui.core.evaluator.memory import MemoryPlan, is_out_of_memory, requested_bytes
from kernel_tui.core.evaluator.memory import plan as memory_plan
from kernel_tui.core.evaluator.models import TimingBlock, TimingPlan
from kernel_tui.core.evaluator.recorder import HostOpRecorder
from kernel_tui.core.evaluator.streams import can_sleep, gpu_sleep, sleep_warnings
from kernel_tui.core.task import ShapeCase, TaskSpec

MAX_ROTATING_SETS = 32
INTERPRETER_SETS = 2  # calls alternate between two sets: no call meets the buffers of the one before
MAX_GRAPH_CALLS = 512
GRAPH_MIN_SECONDS = 200e-6  # one replay lasts at least this long, so graph launch cost vanishes
# Below this flushed kernel time the event timer's ~0.5 µs resolution is too coarse for one call.
GRAPH_BELOW_SECONDS = 5e-6
# The GPU sleeps while the host enqueues a flush-mode sample. The hold is sized from the measured host
# launch cost (x HOLD_MARGIN). Whenever enqueueing took longer than HOLD_USE of it, the events could
# have bracketed an idle GPU waiting for the host: the sample is retaken with the hold doubled. A longer
# hold drifts back toward the base once enqueueing is quick again, so one host hiccup (measured on an
# H200: a few per process) does not slow every later sample.
HOLD_MIN_SECONDS = 250e-6
HOLD_MAX_SECONDS = 50e-3
HOLD_MARGIN = 4.0
HOLD_USE = 0.8
Progress = Callable[[str, int, int], None]


def abba_orders(pairs: int, seed: int) -> list[str]:
    start = np.random.default_rng(seed).integers(2)
    return ["AB" if (i + start) % 2 == 0 else "BA" for i in range(pairs)]


class KernelOutOfMemory(Exception):
    """A kernel call (either side) ran out of memory; `requested` is what the failed allocation asked for
    (None when the allocator did not say), `held` what the call had allocated before it failed."""

    def __init__(self, side: str, error: BaseException, requested: int | None, held: int) -> None:
        super().__init__(str(error))
        self.side, self.error, self.requested, self.held = side, error, requested, held


def l2_bytes(device: str) -> int:
    """The GPU's L2 size (0 on the CPU)."""
    if device == "cpu":
        return 0
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)


def _allocated() -> int:
    return torch.cuda.memory_allocated() if torch.cuda.is_initialized() else 0


def watch_memory(side: str, fn: Callable) -> Callable:
    """`fn`, raising KernelOutOfMemory when it runs out of memory."""

    def call(*args):
        before = _allocated()
        try:
            return fn(*args)
        except Exception as exc:
            if is_out_of_memory(exc):
                raise KernelOutOfMemory(side, exc, requested_bytes(exc), _allocated() - before) from exc
            raise

    return call


class _Kernel:
    """One side (A or B) of the comparison: its entrypoint and a recorder of host torch ops."""

    def __init__(self, name: str, fn: Callable, verify: bool) -> None:
        self.name, self.fn, self.verify = name, watch_memory(name, fn), verify
        self.recorder = HostOpRecorder()
        self.enforce = verify
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_calls = 0

    def call(self, args: list) -> None:
        with self.recorder:
            self.fn(*args)
        self.raise_on_host_ops()

    def raise_on_host_ops(self) -> None:
        if self.recorder.forbidden and self.enforce:
            op = self.recorder.forbidden[0]
            raise CandidateFault("policy_violation", f"torch-compute: host code ran {op} during a timed call")


class BlockTimer:
    def __init__(
        self,
        spec: TaskSpec,
        shape: ShapeCase,
        device: str,
        reference: Callable,
        plan: TimingPlan,
        block: int,
        progress: Progress,
        *,
        memory: MemoryPlan | None = None,
        enforce_policy: bool = True,
    ) -> None:
        self.spec, self.shape, self.device, self.reference = spec, shape, device, reference
        self.plan, self.block, self.progress = plan, block, progress
        # no plan given (tests, benchmarks): as if memory were plentiful
        self.memory = memory or memory_plan(spec, shape.name, shape.dims, free_bytes=2**50, l2_bytes=l2_bytes(device))
        # flush mode gives each call of a sample a set of its own: no more calls than sets
        self.inner = max(1, min(plan.inner_repeats, self.memory.max_sets))
        self.enforce_policy = enforce_policy
        self.seed = plan.seed * 1000 + block * 100 + 7
        self.sets: list[ArgumentSet] = []
        self.checked = 0
        self.hold_seconds = self.hold_base = HOLD_MIN_SECONDS
        self.hold_retakes = 0
        self.holds = can_sleep()  # else flush samples run unheld, and the block says so

    # --- shared ---------------------------------------------------------------------------------
    def _refresh(self, sample: int) -> None:
        for i, s in enumerate(self.sets):
            s.fill(self.seed + sample * len(self.sets) + i)
            s.compute_expected(self.reference)

    def _check(self, s: ArgumentSet, kernel: _Kernel) -> None:
        """Both sides are checked, so the work between samples is the same whichever ran last."""
        try:
            s.check(f"timed call of the {kernel.name}", error=False)
        except CandidateFault as fault:
            if kernel.verify:
                raise
            raise CandidateFault("invalid_task", f"the incumbent failed a timed call: {fault.reason}") from None
        self.checked += kernel.verify

    def run(self, inc_fn: Callable, cand_fn: Callable) -> TimingBlock:
        a, b = _Kernel("incumbent", inc_fn, verify=False), _Kernel("candidate", cand_fn, verify=True)
        b.enforce = self.enforce_policy
        if self.device == "cpu":
            return self._run_interpreter(a, b)
        return self._run_gpu(a, b)

    def _samples(self, a: _Kernel, b: _Kernel, one: Callable[[_Kernel, int], float]) -> tuple[list[float], list[float], list[str]]:
        orders = abba_orders(self.plan.pairs, self.seed)
        ta: list[float] = []
        tb: list[float] = []
        for i, order in enumerate(orders):
            self._refresh(i)
            for who in order:
                kernel = a if who == "A" else b
                (ta if who == "A" else tb).append(one(kernel, i))
            self.progress("timing", i + 1, len(orders))
        return ta, tb, orders

    # --- CPU interpreter ------------------------------------------------------------------------
    def _build(self, seed: int) -> ArgumentSet:
        return ArgumentSet.build(self.spec, self.shape.dims, self.device, seed, stale=self.memory.stale)

    def _run_interpreter(self, a: _Kernel, b: _Kernel) -> TimingBlock:
        n_sets = max(1, min(INTERPRETER_SETS, self.memory.max_sets))
        self.sets = [self._build(self.seed + i) for i in range(n_sets)]
        calls = 0
        for kernel in (a, b):
            for _ in range(max(1, min(self.plan.warmup, 2))):
                s = self.sets[0]
                s.prepare_call()
                kernel.call(s.args())

        def one(kernel: _Kernel, _i: int) -> float:
            nonlocal calls
            total = 0.0
            for _ in range(self.plan.inner_repeats):
                s = self.sets[calls % n_sets]
                calls += 1
                s.prepare_call()
                t0 = time.perf_counter()
                kernel.call(s.args())
                total += time.perf_counter() - t0
                self._check(s, kernel)
            return total / self.plan.inner_repeats

        ta, tb, orders = self._samples(a, b, one)
        return TimingBlock(
            block=self.block, method="interpreter", shape=self.shape.name, incumbent=ta, candidate=tb,
            order=orders, inner_repeats=self.plan.inner_repeats, rotating_sets=n_sets,
            timed_outputs_checked=self.checked, memory=self.memory,
        )

    # --- GPU ------------------------------------------------------------------------------------
    def _run_gpu(self, a: _Kernel, b: _Kernel) -> TimingBlock:
        l2 = l2_bytes(self.device)
        bytes_per_call = tensor_bytes(self.spec, self.shape.dims)
        wanted = max(2, min(MAX_ROTATING_SETS, math.ceil(2 * l2 / max(bytes_per_call, 1)) + 1))
        n_sets = max(1, min(wanted, self.memory.max_sets))
        self.sets = [self._build(self.seed + i) for i in range(n_sets)]
        flush = torch.empty(max(self.memory.flush_bytes, 4) // 4, dtype=torch.int32, device=self.device)
        self._refresh(-1)
        for kernel in (a, b):  # warm-up: compile, autotune, settle clocks
            for j in range(max(1, self.plan.warmup)):
                s = self.sets[j % n_sets]
                s.prepare_call()
                kernel.call(s.args())
            torch.cuda.synchronize()
        overhead = {k.name: self._launch_overhead(k) for k in (a, b)}
        # memset + two event records + the call, for each call of a sample
        self.hold_seconds = self.hold_base = min(HOLD_MAX_SECONDS, max(
            HOLD_MIN_SECONDS, HOLD_MARGIN * self.inner * (max(overhead.values()) + 20e-6)))
        self._ensure_sets(self.inner)  # flush mode checks every call on its own set
        kernel_s = statistics.median(self._flush_sample(a, flush) for _ in range(3))
        method = self.plan.method
        if method == "auto":
            method = "graph" if kernel_s < GRAPH_BELOW_SECONDS else "flush"
        if method == "graph":
            calls = max(self.inner, math.ceil(GRAPH_MIN_SECONDS / max(kernel_s, 1e-7)))
            calls = min(max(calls, len(self.sets)), MAX_GRAPH_CALLS)
            # a set of its own for every call of a replay, so each call meets fresh poison; together the
            # sets hold what the kernel moves in GRAPH_MIN_SECONDS (about 1 GB on an H200) plus the
            # harness's copies of it, as far as the memory plan allows
            self._ensure_sets(calls)
            calls = len(self.sets)
            try:
                for kernel in (a, b):
                    self._capture(kernel, calls)
            except (CandidateFault, KernelOutOfMemory):
                raise
            except Exception:  # noqa: BLE001 - not capturable, for any reason: fall back to flushing, still kernel-only
                torch.cuda.synchronize()
                method = "flush"
        one = (lambda k, _i: self._graph_sample(k, flush)) if method == "graph" else (lambda k, _i: self._flush_sample(k, flush))
        ta, tb, orders = self._samples(a, b, one)
        return TimingBlock(
            block=self.block, method=method, shape=self.shape.name, incumbent=ta, candidate=tb,
            order=orders, inner_repeats=a.graph_calls if method == "graph" else self.inner,
            rotating_sets=len(self.sets), l2_flush_bytes=flush.numel() * 4 if method == "flush" else 0,
            launch_overhead_incumbent=overhead["incumbent"], launch_overhead_candidate=overhead["candidate"],
            timed_outputs_checked=self.checked,
            hold_seconds=self.hold_seconds if method == "flush" and self.holds else None,
            hold_retakes=self.hold_retakes, warnings=sleep_warnings(), memory=self.memory,
        )

    def _launch_overhead(self, kernel: _Kernel, calls: int = 20, repeats: int = 5) -> float:
        """Host seconds per launch call, with the GPU never starving the host."""
        s = self.sets[0]
        per_call = []
        for _ in range(repeats):
            torch.cuda.synchronize()
            args = s.args()
            t0 = time.perf_counter()
            for _ in range(calls):
                kernel.fn(*args)
            per_call.append((time.perf_counter() - t0) / calls)
            torch.cuda.synchronize()
        return statistics.median(per_call)

    def _ensure_sets(self, count: int) -> None:
        while len(self.sets) < min(count, self.memory.max_sets):
            s = self._build(self.seed + len(self.sets))
            s.fill(self.seed + 10_000 + len(self.sets))
            s.compute_expected(self.reference)
            self.sets.append(s)

    def _hold_gpu(self) -> None:
        """Keep the GPU busy so the host can enqueue a whole sample before any of it runs."""
        if self.holds:
            gpu_sleep(self.hold_seconds)

    def _flush_sample(self, kernel: _Kernel, flush: torch.Tensor) -> float:
        while True:
            seconds, enqueue = self._flush_sample_once(kernel, flush)
            if not self.holds:  # no hold to lengthen: a retake could not help
                return seconds
            if enqueue <= HOLD_USE * self.hold_seconds or self.hold_seconds >= HOLD_MAX_SECONDS:
                if enqueue < 0.25 * self.hold_seconds:
                    self.hold_seconds = max(self.hold_base, 0.8 * self.hold_seconds)
                return seconds
            self.hold_seconds = min(HOLD_MAX_SECONDS, 2 * self.hold_seconds)
            self.hold_retakes += 1

    def _flush_sample_once(self, kernel: _Kernel, flush: torch.Tensor) -> tuple[float, float]:
        n = self.inner
        used = [self.sets[j % len(self.sets)] for j in range(n)]
        for s in {id(s): s for s in used}.values():
            s.prepare_call()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        argv = [s.args() for s in used]
        self._hold_gpu()
        t0 = time.perf_counter()
        for (start, end), args in zip(events, argv):
            flush.zero_()
            start.record()
            with kernel.recorder:
                kernel.fn(*args)
            end.record()
        enqueue = time.perf_counter() - t0
        events[-1][1].synchronize()
        kernel.raise_on_host_ops()
        for s in {id(s): s for s in used}.values():
            self._check(s, kernel)
        return sum(start.elapsed_time(end) for start, end in events) / 1e3 / n, enqueue

    def _capture(self, kernel: _Kernel, calls: int) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for s in self.sets:
                kernel.fn(*s.args())
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with kernel.recorder:
            with torch.cuda.graph(graph):
                for j in range(calls):
                    kernel.fn(*self.sets[j % len(self.sets)].args())
        kernel.raise_on_host_ops()
        kernel.graph, kernel.graph_calls = graph, calls

    def _graph_sample(self, kernel: _Kernel, flush: torch.Tensor) -> float:
        for s in self.sets:
            s.prepare_call()
        flush.zero_()  # the same L2 state before every replay, whichever side ran last
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        assert kernel.graph is not None  # captured when the block was prepared
        kernel.graph.replay()
        end.record()
        end.synchronize()
        for s in self.sets:
            self._check(s, kernel)
        return start.elapsed_time(end) / 1e3 / kernel.graph_calls
