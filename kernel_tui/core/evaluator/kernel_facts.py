"""What the compiler made of a candidate's kernels: registers and spills per thread, shared memory, warps
and stages, the occupancy those allow on this GPU, and a digest of the machine code.

Read in the worker after the candidate ran (every kernel it launched is compiled by then), from Triton's
own caches of compiled kernels, found by attribute so that a Triton that keeps them elsewhere yields no
facts rather than an error. The occupancy is the CUDA occupancy calculation: resident blocks per SM are
bounded by threads, registers (allocated per warp in units of REG_UNIT), shared memory (plus what the
driver reserves per block) and the block limit; occupancy is resident warps over the SM's maximum.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.evaluator.machine_code import code_digest

REG_UNIT = 256  # registers are allocated to a warp in units of 256
WARP = 32


class DeviceLimits(BaseModel):
    """Per-SM limits (Hopper's where the device does not say)."""

    model_config = ConfigDict(frozen=True)
    max_threads: int = 2048
    registers: int = 65536
    shared_bytes: int = 233472  # 228 KiB
    reserved_shared_per_block: int = 1024
    max_blocks: int = 32


class KernelFacts(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    registers: int | None = None  # per thread
    spills: int | None = None  # registers spilled per thread
    shared_bytes: int | None = None  # per block
    num_warps: int | None = None
    num_stages: int | None = None
    blocks_per_sm: int | None = None
    occupancy: float | None = None  # resident warps / the SM's maximum
    limited_by: str | None = None  # threads, registers, shared memory or blocks
    shape: str | None = None  # the task shape this variant was first compiled for (each shape may get its own)
    code: str | None = None  # a digest of its machine code (machine_code.py): the same digest, the same program

    def summary(self) -> str:
        parts = [self.name + (f" [shape {self.shape}]" if self.shape else "")]
        if self.registers is not None:
            parts.append(f"{self.registers} regs" + (f" ({self.spills} spilled)" if self.spills else ""))
        if self.shared_bytes is not None:
            parts.append(f"{self.shared_bytes / 1024:.1f} KiB shared")
        if self.num_warps is not None:
            parts.append(f"{self.num_warps} warps" + (f", {self.num_stages} stages" if self.num_stages else ""))
        if self.occupancy is not None:
            parts.append(f"occupancy {self.occupancy:.0%} ({self.blocks_per_sm} blocks/SM, {self.limited_by})")
        return ", ".join(parts)


def occupancy(registers: int, num_warps: int, shared_bytes: int, limits: DeviceLimits) -> tuple[int, float, str]:
    """(resident blocks per SM, occupancy, what limits it) for one block of `num_warps` warps."""
    regs_per_warp = math.ceil(max(registers, 1) * WARP / REG_UNIT) * REG_UNIT
    bounds = {
        "threads": limits.max_threads // (num_warps * WARP),
        "registers": (limits.registers // regs_per_warp) // num_warps,
        "blocks": limits.max_blocks,
    }
    if shared_bytes:  # a block without shared memory is not bounded by it
        bounds["shared memory"] = limits.shared_bytes // (shared_bytes + limits.reserved_shared_per_block)
    limiter = min(bounds, key=lambda k: bounds[k])
    blocks = max(0, bounds[limiter])
    return blocks, blocks * num_warps * WARP / limits.max_threads, limiter


def _jit_functions(obj: Any) -> list[Any]:
    """The JITFunction under an autotuner or heuristics wrapper (each keeps what it wraps in `.fn`)."""
    seen: list[Any] = []
    while obj is not None and obj not in seen:
        seen.append(obj)
        obj = getattr(obj, "fn", None)
    return [o for o in seen if hasattr(o, "device_caches") or hasattr(o, "cache")]


def _compiled(fn: Any) -> list[Any]:
    """Every compiled kernel a JITFunction holds, whatever the Triton version keeps them in."""
    out: list[Any] = []
    caches = getattr(fn, "device_caches", None) or getattr(fn, "cache", None) or {}
    for per_device in list(caches.values()) if isinstance(caches, dict) else []:
        parts = per_device if isinstance(per_device, tuple) else (per_device,)
        for part in parts:
            if isinstance(part, dict):
                out += [k for k in part.values() if hasattr(k, "metadata")]
    return out


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _variants(kernels: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, compiled kernel) for every compiled variant of the named kernel objects, in compile order."""
    return [(name, compiled) for name, obj in sorted(kernels.items())
            for fn in _jit_functions(obj) for compiled in _compiled(fn)]


class FirstShapes:
    """Which task shape each compiled variant was first compiled for. Triton compiles a kernel again for
    arguments it specialises differently (sizes divisible by 16 or not, a stride of 1), so a ragged
    correctness shape can get a variant the timed shape never runs: noted after each shape's first call."""

    def __init__(self, kernels: dict[str, Any]) -> None:
        self.kernels = kernels
        self.first: dict[int, str] = {}  # id of the compiled kernel (alive as long as its cache) -> shape

    def note(self, shape: str) -> None:
        for _, compiled in _variants(self.kernels):
            self.first.setdefault(id(compiled), shape)


def facts_of(kernels: dict[str, Any], limits: DeviceLimits, shapes: FirstShapes | None = None) -> list[KernelFacts]:
    """Facts of every compiled variant of the named kernel objects (a module's @triton.jit functions),
    each with the shape it was first compiled for where `shapes` noted one."""
    out: list[KernelFacts] = []
    for name, compiled in _variants(kernels):
        meta = compiled.metadata
        regs, warps = _int(getattr(compiled, "n_regs", None)), _int(getattr(meta, "num_warps", None))
        shared = _int(getattr(meta, "shared", None))
        facts = KernelFacts(name=str(getattr(meta, "name", name) or name), registers=regs,
                            spills=_int(getattr(compiled, "n_spills", None)), shared_bytes=shared,
                            num_warps=warps, num_stages=_int(getattr(meta, "num_stages", None)),
                            shape=shapes.first.get(id(compiled)) if shapes else None, code=code_digest(compiled))
        if regs is not None and warps:
            blocks, occ, limiter = occupancy(regs, warps, shared or 0, limits)
            facts = facts.model_copy(update={"blocks_per_sm": blocks, "occupancy": occ, "limited_by": limiter})
        if facts not in out:
            out.append(facts)
    return out


def device_limits() -> DeviceLimits:
    """This GPU's per-SM limits, as torch reports them (Hopper's for what it does not)."""
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    d = DeviceLimits()
    return DeviceLimits(
        max_threads=int(getattr(p, "max_threads_per_multi_processor", 0) or d.max_threads),
        registers=int(getattr(p, "regs_per_multiprocessor", 0) or d.registers),
        shared_bytes=int(getattr(p, "shared_memory_per_multiprocessor", 0) or d.shared_bytes),
    )
