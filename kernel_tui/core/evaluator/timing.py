"""Paired, interleaved timing of the incumbent (A) and the candidate (B), by the judge, across processes.

Each side runs in a worker of its own; the judge owns the memory they work on, every clock that is read and
every check that is made. A side's work is timed from the judge's own stream with the judge's own events.

On a GPU, one sample of a side is a *window*: the judge's stream holds the GPU (a sleep kernel) while the
worker enqueues K calls, each on an input set of its own, behind a gate; then the judge flushes the L2,
checks that the side's outputs still hold their poison, records its start event and opens the gate (a stream
memory write into a word the worker's stream waits on). The worker's stream runs the K calls back to back
and writes the done word; the judge's stream, waiting on that word, records its end event and at once checks
every output. So the window holds all of the side's GPU work between gate and done, whatever stream it
used: kernels of different processes do not run at once (they take turns on the GPU), and outputs written
before the gate fail the first check, outputs finished after the window the second.

Handing the GPU from the judge's process to a worker's and back costs two context switches: about 290 µs
on an H200, whatever the kernel, within a few µs (bench/results/2026-12-01-h200-judge). Each window
therefore runs K calls, K chosen so that the window lasts WINDOW_SECONDS or more, and the handoff is
subtracted: measured on the spot, through the same protocol, by a probe worker that runs nothing but a
one-element kernel (trusted code: neither side can make it longer or shorter). The same probe runs after
every window: if it takes much longer than on a quiet GPU, work was still running in another process,
and a candidate that leaves work running after its turn (to slow the incumbent's) is named.

Inputs are refreshed every pair, so a candidate that caches work once it has seen its buffers fails; the
poison differs on every call (harness.py). A side's buffers are written by the judge only just before that
side's own turn.

On the CPU (Triton's interpreter) a sample is one call at a time, timed by the judge around the worker's
answer; between its turns a worker is stopped, with every thread and process it started, so nothing it
leaves running competes with the other side.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable

import numpy as np
import torch

from kernel_tui.core.evaluator.checks import CandidateFault
from kernel_tui.core.evaluator.draw import derive
from kernel_tui.core.evaluator.harness import ArgumentSet
from kernel_tui.core.evaluator.memory import MemoryPlan
from kernel_tui.core.evaluator.models import TimingBlock, TimingPlan
from kernel_tui.core.evaluator.protocol import Command
from kernel_tui.core.evaluator.shared_sets import SharedSets
from kernel_tui.core.evaluator.side import Side
from kernel_tui.core.task import ShapeCase, TaskSpec

ROLES = ("incumbent", "candidate")
INTERPRETER_SETS = 2  # calls alternate between two sets: no call meets the buffers of the one before
# A window this long puts the handoff's few µs of spread (between kernels, measured on an H200) under 1% of it,
# and the difference between two sides' spreads far under that (KERNEL_TUI_WINDOW_SECONDS: for measuring).
WINDOW_SECONDS = float(os.environ.get("KERNEL_TUI_WINDOW_SECONDS", "5e-4"))
# How the L2 is emptied before a window: "write" zeroes a buffer twice its size (its lines are left dirty, to be
# written back while the window's first calls run), "read" reads it (clean lines, nothing to write back).
FLUSH_MODE = os.environ.get("KERNEL_TUI_FLUSH", "write")
# And no more than this many bytes of inputs and outputs in one window: the K sets together are what a
# window's calls touch, and a footprint of gigabytes costs the calls TLB misses a single call never meets
# (a window of 78 sets, 3.7 GB, read vector_add at 33.6 µs per call; one flushed call reads 23.7 µs).
WINDOW_BYTES = 1 << 30
MAX_WINDOW_CALLS = 512
HOLD_MIN_SECONDS = 500e-6
HOLD_MAX_SECONDS = 50e-3
HOLD_MARGIN = 3.0
PROBE_QUIET = 15  # probe windows before the first sample: the handoff on a quiet GPU
# a probe window this much longer than on a quiet GPU means another process's work was running
BUSY_FACTOR, BUSY_SLACK = 1.5, 20e-6
Progress = Callable[[str, int, int], None]


def abba_orders(pairs: int, seed: int) -> list[str]:
    start = np.random.default_rng(seed).integers(2)
    return ["AB" if (i + start) % 2 == 0 else "BA" for i in range(pairs)]


def l2_bytes(device: str) -> int:
    """The GPU's L2 size (0 on the CPU)."""
    if device == "cpu":
        return 0
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)


class BlockTimer:
    def __init__(self, spec: TaskSpec, shape: ShapeCase, device: str, reference: Callable, plan: TimingPlan,
                 block: int, progress: Progress, *, memory: MemoryPlan, shared: SharedSets,
                 sides: dict[str, Side], timeout: Callable[[], float], probe: Side | None = None,
                 signals: dict | None = None, secret: int = 0, calibration=None) -> None:
        self.spec, self.shape, self.device, self.reference = spec, shape, device, reference
        self.plan, self.block, self.progress, self.memory = plan, block, progress, memory
        self.shared, self.sides, self.timeout, self.probe = shared, sides, timeout, probe
        self.signals = signals or {}  # role -> timing_gpu.Signals
        self.calibration = calibration  # timing_gpu.Calibration: the handoff, measured before any side loaded
        self.seed = derive(secret, "timing", plan.seed, block, shape.name)  # unknown to both sides
        self.sets: list[ArgumentSet] = []
        self.checked = 0
        self.warnings: list[str] = []
        self.refresh_seconds = 0.0

    # --- shared ---------------------------------------------------------------------------------------
    def _build(self, count: int) -> None:
        # Each side's buffers sit at their own addresses, and placement alone can shift a kernel's time by a
        # few tenths of a percent (an A/A on an H200 read -0.2% and -0.3%, the same side slower both times):
        # which side's arena comes first alternates from block to block, so that no side keeps the better one.
        roles = list(ROLES) if self.block % 2 == 0 else list(reversed(ROLES))
        new = self.shared.build(self.shape.dims, [derive(self.seed, "set", len(self.sets) + i) for i in range(count)],
                                roles, stale=self.memory.stale)
        for s in new:
            s.compute_expected(self.reference)
        self.sets += new

    def _refresh(self, sample: int) -> None:
        t0 = time.perf_counter()
        for i, s in enumerate(self.sets):
            s.fill(derive(self.seed, "refresh", sample, i))
            s.compute_expected(self.reference)
        self.refresh_seconds += time.perf_counter() - t0

    def _check(self, s: ArgumentSet, role: str) -> None:
        """Both sides are checked the same way, so the work between samples is the same whichever ran last."""
        try:
            s.check(f"timed call of the {role}", role, error=False)
        except CandidateFault as fault:
            if role == "candidate":
                raise
            raise CandidateFault("invalid_task", f"the incumbent failed a timed call: {fault.reason}") from None
        self.checked += role == "candidate"


    def samples(self, one: Callable[[str, int], float]) -> tuple[list[float], list[float], list[str]]:
        orders = abba_orders(self.plan.pairs, self.seed)
        ta: list[float] = []
        tb: list[float] = []
        for i, order in enumerate(orders):
            self._refresh(i)
            for who in order:
                role = "incumbent" if who == "A" else "candidate"
                (ta if who == "A" else tb).append(one(role, i))
            self.progress("timing", i + 1, len(orders))
        return ta, tb, orders

    def call(self, role: str, s: ArgumentSet, **kw) -> Command:
        return Command(op="call", calls=[self.shared.call(s)], shape=self.shape.name, **kw)

    # --- CPU interpreter ------------------------------------------------------------------------------------
    def run_interpreter(self) -> TimingBlock:
        """The block on the CPU interpreter: one call per sample, timed until the side is stopped (a GPU's
        windows are timing_gpu.GpuWindows, over the same timer)."""
        n_sets = max(1, min(INTERPRETER_SETS, self.memory.max_sets))
        self._build(n_sets)
        for role in ROLES:  # warm-up: the interpreter's own first-call costs
            for _ in range(max(1, min(self.plan.warmup, 2))):
                self.sets[0].prepare_call(role)
                self.sides[role].request(self.call(role, self.sets[0]), self.timeout())
        calls = 0

        def one(role: str, _i: int) -> float:
            nonlocal calls
            side, total = self.sides[role], 0.0
            for _ in range(self.plan.inner_repeats):
                s = self.sets[calls % n_sets]
                calls += 1
                s.prepare_call(role)
                side.resume()
                stopped = None
                try:
                    t0 = time.perf_counter()
                    side.send(self.call(role, s, hold=True))
                    side.reply(self.timeout())
                finally:
                    stopped = side.stop()  # before the check: nothing the side left running writes after this
                # until the side was stopped: an early answer stops no clock while its work goes on
                total += (stopped or time.perf_counter()) - t0
                if side.returns:  # the copy into the outputs, after the clock stopped
                    side.request(Command(op="deliver"), self.timeout())
                self._check(s, role)
            return total / self.plan.inner_repeats

        ta, tb, orders = self.samples(one)
        return TimingBlock(
            block=self.block, method="interpreter", shape=self.shape.name, incumbent=ta, candidate=tb,
            order=orders, inner_repeats=self.plan.inner_repeats, rotating_sets=n_sets,
            timed_outputs_checked=self.checked, memory=self.memory,
        )


def window_calls(kernel_seconds: float, inner: int, max_sets: int, call_bytes: int = 0) -> int:
    """Calls per window: enough for WINDOW_SECONDS, at least `inner`, within WINDOW_BYTES of footprint (unless
    `inner` calls alone pass it), as many sets as memory allows."""
    wanted = max(inner, math.ceil(WINDOW_SECONDS / max(kernel_seconds, 1e-7)))
    if call_bytes:
        wanted = min(wanted, max(inner, WINDOW_BYTES // call_bytes))
    return max(1, min(wanted, MAX_WINDOW_CALLS, max_sets))


def busy(probe_seconds: float, quiet: float) -> bool:
    return probe_seconds > BUSY_FACTOR * quiet + BUSY_SLACK


def interference_verdict(flags: dict[str, int], windows: int) -> tuple[str, str] | None:
    """(status, reason) when probes after the windows found the GPU busy: the candidate's doing when it
    happens after its windows and not after the incumbent's; the machine's when after both."""
    cand, inc = flags.get("candidate", 0), flags.get("incumbent", 0)
    if cand >= 2 and cand > 2 * inc:
        return "tampering", (f"the candidate left work running on the GPU after its timed calls ({cand} of "
                             f"{windows} probes right after its windows found the GPU busy, {inc} after the "
                             "incumbent's): work that outlasts its turn slows the other side")
    if cand + inc > windows // 2:
        return "evaluator_fault", (f"another process kept the GPU busy during timing ({cand + inc} of {2 * windows} "
                                   "probes found it so): the block is not judged")
    return None


def first_draw(seed: int, role: str, k: int) -> random.Random:
    return random.Random(f"untouched:{seed}:{role}:{k}")

