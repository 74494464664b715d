"""Is all of a candidate's GPU work ordered on the stream it was called on?

Timing brackets the caller's current stream with events, so work a candidate puts on another stream
(unjoined) escapes the measurement: a kernel there runs during the hold and the events time nothing.
The static policy forbids streams by name; this runtime check catches what it cannot see. It calls the
candidate once with the current stream blocked by a sleep kernel, then reads the outputs from a probe
stream of its own twice, GPU-side so no host latency widens the window:
- while the current stream is still blocked: any output already written came from another stream;
- the moment the current stream's work is done (the probe waits on an event recorded after the call):
  any output still poisoned is being written by work the current stream never waited for.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernel_tui.core.evaluator.harness import INT_SENTINEL, ArgumentSet

BLOCK_SECONDS = 20e-3


def _poisoned(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(t) if t.is_floating_point() else t == INT_SENTINEL


def check_stream_order(candidate: Callable, s: ArgumentSet) -> str | None:
    """None when the candidate's work is ordered on the current stream; else the one-line reason."""
    if not s.outputs or not hasattr(torch.cuda, "_sleep"):
        return None
    current = torch.cuda.current_stream()
    probe = torch.cuda.Stream()
    s.prepare_call()
    torch.cuda.synchronize()
    clock_hz = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "clock_rate", 2_000_000) * 1e3
    torch.cuda._sleep(int(BLOCK_SECONDS * clock_hz))
    candidate(*s.args())
    done = torch.cuda.Event()
    done.record(current)
    with torch.cuda.stream(probe):
        early = [(~_poisoned(o.view)).any() for o in s.outputs.values()]
    probe.synchronize()
    still_blocked = not current.query()  # a candidate that synced on the host leaves nothing to see
    probe.wait_event(done)
    with torch.cuda.stream(probe):
        late = [_poisoned(o.view).any() for o in s.outputs.values()]
    torch.cuda.synchronize()
    names = list(s.outputs)
    for name, written in zip(names, early):
        if still_blocked and bool(written):
            return (f"side-stream: output {name!r} was written while the calling stream was still blocked: "
                    "the candidate's kernels run on another stream, outside the timed one")
    for name, missing in zip(names, late):
        if bool(missing) and not bool(_poisoned(s.outputs[name].view).any()):
            return (f"side-stream: output {name!r} was incomplete when the calling stream finished: the candidate "
                    "left work on another stream that the calling stream never waited for")
    return None
