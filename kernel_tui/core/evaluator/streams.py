"""Is all of a candidate's GPU work ordered on the stream it was called on?

Timing brackets the caller's current stream with events, so work a candidate puts on another stream
(unjoined) escapes the measurement: a kernel there runs during the hold and the events time nothing.
The static policy forbids streams by name; this runtime check catches what it cannot see. It calls the
candidate once with the current stream blocked by a sleep kernel, then reads the outputs from a probe
stream of its own while the current stream is still blocked: any output already written came from
another stream. A stream forked off the current one (it waits on it) and never joined back passes that
probe, so one call is also captured in a CUDA graph: ending a capture with an unjoined fork fails.

Blocking a stream takes torch.cuda._sleep, a private function a torch build may lack. Without it the probe
cannot run, only the capture does, and `sleep_warnings` says so: every timing block carries its lines, so
the result and the report show what was not checked (timing's hold of the GPU needs the sleep too).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import torch

from kernel_tui.core.evaluator.harness import INT_SENTINEL, ArgumentSet
from kernel_tui.core.evaluator.memory import is_out_of_memory

BLOCK_SECONDS = 20e-3


@functools.cache
def _sleep_cycles_per_second() -> float:
    """torch.cuda._sleep counts clock cycles: measure how many pass per second on this GPU rather
    than trust a clock-rate property whose unit differs between versions."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    torch.cuda._sleep(2_000_000)
    end.record()
    end.synchronize()
    return 2_000_000 / max(start.elapsed_time(end) / 1e3, 1e-6)


def can_sleep() -> bool:
    return hasattr(torch.cuda, "_sleep")


def sleep_warnings() -> list[str]:
    """What this process cannot do for want of torch.cuda._sleep, one line each (none when it has it)."""
    if can_sleep():
        return []
    missing = f"torch.cuda._sleep is missing from torch {torch.__version__}"
    return [
        (f"{missing}: the GPU is not held while the host enqueues a flush-mode sample, so those timings may "
         "include host launch time"),
        (f"{missing}: the stream-order check cannot block the calling stream, so it catches only work forked "
         "onto another stream and never joined back, not work on an unrelated stream"),
    ]


def gpu_sleep(seconds: float) -> None:
    """Occupy the current stream for about `seconds` (one single-thread kernel)."""
    torch.cuda._sleep(int(seconds * _sleep_cycles_per_second()))


def _poisoned(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(t) if t.is_floating_point() else t == INT_SENTINEL


def _capture_error(candidate: Callable, s: ArgumentSet) -> str | None:
    """Capture one call in a CUDA graph. A stream forked off the calling one joins the capture, and
    ending a capture with a fork that never joined back fails deterministically, unlike any race
    between a probe and the stray kernel."""
    s.prepare_call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            candidate(*s.args())
    except Exception as exc:
        if is_out_of_memory(exc) or type(exc).__name__ == "KernelOutOfMemory":
            raise  # whose memory it was is the worker's to say, not a passed check
        torch.cuda.synchronize()
        text = str(exc)
        return text if "join" in text.lower() else None
    finally:
        del graph
    return None


def check_stream_order(candidate: Callable, s: ArgumentSet) -> str | None:
    """None when the candidate's work is ordered on the current stream; else the one-line reason.
    The candidate must have been called once already (compiled: the blocked stream must not wait on
    the compiler). Without torch.cuda._sleep only the capture runs (see `sleep_warnings`)."""
    if not s.outputs:
        return None
    stray = _stray_output(candidate, s) if can_sleep() else None
    if stray is not None:
        return (f"side-stream: output {stray!r} was written while the calling stream was still blocked: "
                "the candidate's kernels run on another stream, outside the timed one")
    unjoined = _capture_error(candidate, s)
    if unjoined:
        return ("side-stream: the candidate forks work onto another stream and never joins it back to the "
                f"calling stream, so the timed stream ends before its kernels do ({unjoined.splitlines()[0][:120]})")
    return None


def _stray_output(candidate: Callable, s: ArgumentSet) -> str | None:
    """The first output written while the calling stream was blocked, if any: written from another stream."""
    current = torch.cuda.current_stream()
    probe = torch.cuda.Stream()
    s.prepare_call()
    torch.cuda.synchronize()
    gpu_sleep(BLOCK_SECONDS)
    candidate(*s.args())
    # Read the outputs from the probe stream, again and again while the calling stream sleeps: work on
    # an unrelated stream may start late, but it starts long before the sleep ends.
    stray = None
    give_up = time.perf_counter() + BLOCK_SECONDS / 2
    while stray is None and time.perf_counter() < give_up:
        with torch.cuda.stream(probe):
            written = [(~_poisoned(o.view)).any() for o in s.outputs.values()]
        probe.synchronize()
        if current.query():
            break  # the sleep is over (a candidate that synced on the host): nothing left to see
        stray = next((name for name, w in zip(s.outputs, written) if bool(w)), None)
        time.sleep(BLOCK_SECONDS / 40)
    torch.cuda.synchronize()
    return stray
