"""The line that says what a timing measured: on which device, by which method, and what the memory plan
changed about it (the report and every front end show it beside the figures)."""

from __future__ import annotations

from kernel_tui.core.evaluator.memory import gib
from kernel_tui.core.evaluator.models import TimingBlock

INTERPRETER_LABEL = "CPU interpreter — timings are not GPU timings"


def timing_label(block: TimingBlock | None, device_name: str = "") -> str:
    if block is None:
        return ""
    if block.method == "interpreter":
        return INTERPRETER_LABEL
    on = f" on {device_name}" if device_name else ""
    if block.method == "window":
        handoff = f", {block.handoff_seconds * 1e6:.0f} µs handoff subtracted" if block.handoff_seconds else ""
        calls = "1 call" if block.inner_repeats == 1 else f"{block.inner_repeats} calls back to back"
        return (f"GPU kernel time{on}: {calls} per window over rotating input sets, "
                f"L2 flushed before each window, timed by the judge across processes{handoff}") + _memory_note(block)
    if block.method == "graph":
        return f"GPU kernel time{on}: CUDA graph replay over {block.rotating_sets} rotating input sets" + _memory_note(block)
    return f"GPU kernel time{on}: L2 flushed ({block.l2_flush_bytes / 2**20:.0f} MiB) before each call" + _memory_note(block)


def _memory_note(block: TimingBlock) -> str:
    """What the memory plan changed about the timing, if anything."""
    m = block.memory
    if m is None or block.rotating_sets >= 2:
        return ""
    if m.cold_anyway:
        return (f"; one input set ({gib(m.call_bytes)} per call, {m.call_bytes / m.l2_bytes:.0f}× the L2: cold in it "
                "anyway)")
    return f"; one input set, as device memory allows ({gib(m.call_bytes)} per call)"
