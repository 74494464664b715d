"""The GPU half of the judge's timing: windows across processes (the protocol is timing.py's docstring).

Every word and event here is the judge's. A worker's stream waits for the gate word and writes the done word;
nothing the worker writes is read as a time. If the worker never writes done (it died, hangs, or will not),
the judge writes the word itself from another stream, so its own stream never waits forever.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from kernel_tui.core.evaluator.checks import CandidateFault
from kernel_tui.core.evaluator.cuda_ipc import SharedDeviceMemory, stream_wait_value, stream_write_value
from kernel_tui.core.evaluator.harness import ArgumentSet
from kernel_tui.core.evaluator.kernel_worker import DONE_OFFSET, GATE_OFFSET
from kernel_tui.core.evaluator.models import TimingBlock
from kernel_tui.core.evaluator.protocol import Call, Command
from kernel_tui.core.evaluator.side import Side, SideFault
from kernel_tui.core.evaluator.streams import can_sleep, gpu_sleep, sleep_warnings
from kernel_tui.core.evaluator.timing import (
    FLUSH_MODE,
    HOLD_MARGIN,
    HOLD_MAX_SECONDS,
    HOLD_MIN_SECONDS,
    PROBE_QUIET,
    ROLES,
    BlockTimer,
    busy,
    first_draw,
    interference_verdict,
    window_calls,
)

SIGNAL_BYTES = 4096
MAX_LAUNCH_SECONDS = 100e-6


@dataclass
class Signals:
    """The gate and done words the judge shares with one worker, and the next sequence number."""

    memory: SharedDeviceMemory
    seq: int = 0

    @classmethod
    def share(cls, side: Side, timeout: float) -> Signals:
        from kernel_tui.core.evaluator.arena import ArenaSpec

        mem = SharedDeviceMemory.allocate(SIGNAL_BYTES, torch.cuda.current_device())
        mem.tensor.zero_()
        torch.cuda.synchronize()
        side.request(Command(op="signals", arena=ArenaSpec(arena=0, kind="cuda", nbytes=SIGNAL_BYTES,
                                                           handle=mem.handle())), timeout)
        return cls(mem)

    def next(self) -> int:
        self.seq += 1
        return self.seq

    def open_gate(self, stream: int, seq: int) -> None:
        stream_write_value(stream, self.memory.word(GATE_OFFSET), seq)

    def wait_done(self, stream: int, seq: int) -> None:
        stream_wait_value(stream, self.memory.word(DONE_OFFSET), seq)

    def unblock(self, seq: int) -> None:
        """Release the judge's stream from a wait the worker will never end (from another stream)."""
        with torch.cuda.stream(torch.cuda.Stream()):
            self.memory.tensor[DONE_OFFSET : DONE_OFFSET + 4].view(torch.int32).fill_(seq)
        torch.cuda.synchronize()


class GpuWindows:
    def __init__(self, timer: BlockTimer) -> None:
        self.t = timer
        self.flush = torch.zeros(max(timer.memory.flush_bytes, 4) // 4, dtype=torch.int32, device="cuda")
        self.sink = torch.zeros((), dtype=torch.int64, device="cuda")
        self.hold = self.probe_hold = self.base_hold = HOLD_MIN_SECONDS
        self.retakes = 0
        self.windows = 0
        self.calls = 1
        self.handoff = 0.0
        self.quiet = 0.0
        self.flags = dict.fromkeys(ROLES, 0)
        self.phases: dict[str, float] = {}
        if not can_sleep():
            timer.warnings += sleep_warnings()

    def _spent(self, phase: str, since: float) -> float:
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - since
        return now

    @property
    def stream(self) -> int:
        return torch.cuda.current_stream().cuda_stream

    # --- one window -----------------------------------------------------------------------------------
    def _wait_end(self, end: torch.cuda.Event, side: Side, signals: Signals, seq: int) -> None:
        deadline = time.monotonic() + self.t.timeout()
        while not end.query():
            if side.exit_status is not None or time.monotonic() > deadline:
                signals.unblock(seq)
                if side.exit_status is None:
                    side.close()
                    raise SideFault("timeout", f"the {side.role}'s timed calls did not finish within "
                                               f"{self.t.timeout():.0f} s: killed (a hang, or far too slow)",
                                    role=side.role)
                raise SideFault("crashed", side.death(), role=side.role)
            time.sleep(50e-6)

    def window(self, side: Side, calls: list[Call], sets: list[ArgumentSet], role: str,
               hold: float) -> tuple[float, bool]:
        """One window: (seconds from start to end, the worker still enqueueing when the gate opened)."""
        from kernel_tui.core.evaluator.shared_sets import UntouchedCheck

        t0 = time.perf_counter()
        signals = self.t.signals[role]
        seq = signals.next()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        untouched = UntouchedCheck(self.t.shared, role, sets, first_draw(self.t.seed, role, self.windows)) if sets else None
        # the outputs as the window closes, to see anything written later; a returning side's are written
        # later by design (delivered after the end event), so nothing is compared for it
        pairs = [] if side.returns else [out.snapshot_pair(role) for s in sets for out in s.outputs.values()]
        self.windows += 1
        t0 = self._spent("window setup", t0)
        _hold_gpu(hold)
        # The inputs arrive only now, after the hold, back to back with the start in the judge's own turn on
        # the GPU: nothing a side runs before its window opens (during a long hold, its context gets turns)
        # has this window's inputs to work on.
        for s in sets:
            s.give_inputs(role)
        self._flush_l2()
        before = untouched.flag() if untouched is not None else None
        start.record()
        signals.open_gate(self.stream, seq)
        # Nothing enqueued from here on may wait for the device (an allocation can): the worker is told to go
        # first, so the stream's wait on its done word always ends.
        side.resume()
        try:
            side.send(Command(op="window", calls=calls, seq=seq))
            signals.wait_done(self.stream, seq)
            end.record()
            for taken, live in pairs:  # the outputs as the window closed: nothing written later goes unseen
                taken.copy_(live)
            try:
                side.reply(self.t.timeout())
            except SideFault:
                signals.unblock(seq)
                raise
            late = start.query()  # the gate opened before both sides had enqueued everything: host time got in
        finally:
            side.stop()
        t0 = self._spent("window enqueue", t0)
        self._wait_end(end, side, signals, seq)
        t0 = self._spent("window wait", t0)
        if sets:
            side.request(Command(op="deliver" if side.returns else "settle"), self.t.timeout())
            t0 = self._spent("settle", t0)
            changed = torch.stack([out.changed_flag(role) for s in sets for out in s.outputs.values()]).any() \
                if pairs else torch.zeros((), dtype=torch.bool)
            good = torch.stack([s.good_flag(role) for s in sets]).all()
            assert before is not None
            self._verify(bool(before), not bool(changed), bool(good), sets, role)
            self._spent("checks", t0)
        return start.elapsed_time(end) / 1e3, late

    def _flush_l2(self) -> None:
        if FLUSH_MODE == "read":
            torch.sum(self.flush, dim=0, dtype=torch.int64, out=self.sink)
        else:
            self.flush.zero_()

    def _verify(self, before: bool, unchanged: bool, good: bool, sets: list[ArgumentSet], role: str) -> None:
        status = "tampering" if role == "candidate" else "invalid_task"
        if not before:
            raise CandidateFault(status, (
                f"side-stream: the {role}'s outputs were written before its timed window opened: its work runs on "
                "a stream that does not wait for the call (or it ran ahead of the gate)"))
        if not unchanged:
            raise CandidateFault(status, f"the {role}'s outputs changed after its timed window closed: work "
                                         "still running after the call was done")
        if good:
            self.t.checked += len(sets) if role == "candidate" else 0
            return
        for s in sets:
            self.t._check(s, role)  # explains (raises) what the fast check saw
        raise CandidateFault(status, f"the {role}'s outputs failed the check after its timed window")

    def sample(self, role: str, sets: list[ArgumentSet]) -> float:
        """A side's window over `sets`, retaken with a longer hold while the worker outran it; seconds per call
        less the handoff."""
        side = self.t.sides[role]
        calls = [self.t.shared.call(s) for s in sets]
        while True:
            t0 = time.perf_counter()
            for s in sets:
                s.prepare_call(role, inputs=False)  # the inputs come with the window (see window())
            self._spent("prepare", t0)
            seconds, late = self.window(side, calls, sets, role, self.hold)
            t0 = time.perf_counter()
            self._probe_after(role)
            self._spent("probe", t0)
            if late and self.hold < HOLD_MAX_SECONDS:
                self.hold = min(HOLD_MAX_SECONDS, 2 * self.hold)
                self.retakes += 1
                continue
            # a longer hold drifts back toward its base once enqueueing is quick again: one slow moment does not
            # slow every later sample
            self.hold = max(self.base_hold, 0.9 * self.hold)
            return max(seconds - self.handoff, 1e-9) / len(sets)

    # --- the probe ------------------------------------------------------------------------------------
    def probe_window(self) -> float:
        probe = self.t.probe
        assert probe is not None
        seconds, self.probe_hold = probe_window(probe, self.t.signals["probe"], self.probe_hold, self.t.timeout())
        return seconds

    def _probe_after(self, role: str) -> None:
        if self.t.probe is not None and busy(self.probe_window(), self.quiet):
            self.flags[role] += 1

    # --- the block ------------------------------------------------------------------------------------
    def run(self) -> TimingBlock:
        t = self.t
        began = time.perf_counter()
        first = max(2, min(t.plan.inner_repeats, t.memory.max_sets))
        t._build(min(first, t.memory.max_sets))
        for role in ROLES:  # compile, autotune, settle clocks
            s = t.sets[0]
            s.prepare_call(role)
            t.sides[role].request(t.call(role, s, repeat=max(1, t.plan.warmup)), t.timeout())
        overhead = {}
        for role in ROLES:
            reply = t.sides[role].request(Command(op="overhead", calls=[t.shared.call(t.sets[0])], repeat=20),
                                          t.timeout())
            overhead[role] = reply.seconds
        capture = t.sides["candidate"].request(Command(op="capture", calls=[t.shared.call(t.sets[0])]), t.timeout())
        if capture.unjoined:
            raise CandidateFault("policy_violation", (
                "side-stream: the candidate forks work onto another stream and never joins it back to the "
                f"calling stream, so the timed stream ends before its kernels do ({capture.unjoined.splitlines()[0][:120]})"))
        if t.calibration is None:
            t.warnings.append("no probe worker: the handoff between processes is not subtracted")
        else:
            self.quiet, self.handoff = t.calibration.quiet, t.calibration.handoff
        # the workers' own word on their launch cost only sizes the hold (a hold too short is retaken);
        # bounded, so that no side can make every hold long
        launch = min(MAX_LAUNCH_SECONDS, max(v or 0.0 for v in overhead.values()))
        self.hold = min(HOLD_MAX_SECONDS, max(HOLD_MIN_SECONDS, HOLD_MARGIN * (len(t.sets) * launch + 300e-6)))
        estimate = statistics.median(self.sample("incumbent", t.sets) for _ in range(3))
        self.flags = dict.fromkeys(ROLES, 0)  # interference counts over the block's own samples
        k = window_calls(estimate, t.plan.inner_repeats, t.memory.max_sets, t.memory.call_bytes)
        limited = k < window_calls(estimate, t.plan.inner_repeats, 1 << 30, t.memory.call_bytes)
        if k > len(t.sets):
            t._build(k - len(t.sets))
        self.calls = len(t.sets)
        self.hold = self.base_hold = min(HOLD_MAX_SECONDS, max(self.hold, HOLD_MARGIN * (self.calls * launch + 300e-6)))
        if limited and self.calls * estimate < 10 * self.handoff:
            t.warnings.append(f"a window holds {self.calls} calls ({self.calls * estimate * 1e6:.0f} µs), not much "
                              f"longer than the {self.handoff * 1e6:.0f} µs handoff subtracted from it: memory allows "
                              "no more input sets")
        self.phases["setup"] = time.perf_counter() - began
        ta, tb, orders = t.samples(lambda role, _i: self.sample(role, t.sets))
        self.phases["samples"] = time.perf_counter() - began - self.phases["setup"]
        found = interference_verdict(self.flags, len(orders))
        if found is not None:
            raise CandidateFault(*found)
        return TimingBlock(
            block=t.block, method="window", shape=t.shape.name, incumbent=ta, candidate=tb, order=orders,
            inner_repeats=self.calls, rotating_sets=self.calls, l2_flush_bytes=self.flush.numel() * 4,
            launch_overhead_incumbent=overhead["incumbent"], launch_overhead_candidate=overhead["candidate"],
            timed_outputs_checked=t.checked, hold_seconds=self.hold if can_sleep() else None,
            hold_retakes=self.retakes, warnings=t.warnings, memory=t.memory,
            handoff_seconds=self.handoff if t.probe is not None else None,
            phase_seconds={k: round(v, 4) for k, v in {**self.phases, "refresh": t.refresh_seconds}.items()},
        )



def _hold_gpu(hold: float) -> None:
    if can_sleep():
        gpu_sleep(hold)


def probe_window(probe: Side, signals: Signals, hold: float, timeout: float) -> tuple[float, float]:
    """One window of the probe's one-element kernel: (seconds, the hold to use next). A window the probe
    outran (its launch enqueued after the gate opened) is retaken with a longer hold."""
    while True:
        seq = signals.next()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _hold_gpu(hold)
        start.record()
        stream = torch.cuda.current_stream().cuda_stream
        signals.open_gate(stream, seq)
        probe.resume()
        try:
            probe.send(Command(op="window", calls=[Call(set_id=-1)], seq=seq))
            signals.wait_done(stream, seq)
            end.record()
            try:
                probe.reply(timeout)
            except SideFault:
                signals.unblock(seq)
                raise
            late = start.query()
        finally:
            probe.stop()
        end.synchronize()
        if not late or hold >= HOLD_MAX_SECONDS:
            return start.elapsed_time(end) / 1e3, hold
        hold = min(HOLD_MAX_SECONDS, 2 * hold)


@dataclass(frozen=True)
class Calibration:
    """The handoff on a quiet GPU, measured before any side's code was loaded: neither side can make it
    longer (which would inflate every difference) or shorter."""

    quiet: float  # a probe window's seconds, median
    handoff: float  # less the probe's own one-element kernel, timed by the judge in its own process


def calibrate(probe: Side, signals: Signals, timeout: float) -> Calibration:
    windows, hold = [], HOLD_MIN_SECONDS
    for _ in range(PROBE_QUIET):
        seconds, hold = probe_window(probe, signals, hold, timeout)
        windows.append(seconds)
    tiny, times = torch.zeros(1, device="cuda"), []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        tiny.fill_(1.0)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    quiet = statistics.median(windows)
    return Calibration(quiet=quiet, handoff=max(0.0, quiet - statistics.median(times)))
