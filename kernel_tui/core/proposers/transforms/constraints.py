"""Register and shared-memory sanity bounds: every assignment the search is offered keeps them.

Bounds are functions of a whole assignment (a block and its launch's warps together), measured as log2 of
the excess, so a source that already breaks one may still move, but never further out.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import (
    DEFAULT_NUM_STAGES,
    DEFAULT_NUM_WARPS,
    MAX_ACCUMULATOR_PER_THREAD,
    MAX_ELEMENTS_PER_THREAD,
    MIN_ACCUMULATOR_PER_THREAD,
    MIN_ELEMENTS_PER_WARP,
    OPERAND_BYTES,
    SHARED_MEMORY_BYTES,
    Kernel,
    Knob,
    Launch,
)
from kernel_tui.core.proposers.transforms.names import int_value


@dataclass(frozen=True)
class DotTile:
    """One tl.dot launch's tile under an assignment: its output tile (BLOCK_M·BLOCK_N), its K step, warps and
    stages; None where the source does not say."""

    kernel: str
    output: int | None
    k_step: int | None
    num_warps: int | None
    num_stages: int | None

    @property
    def accumulator_per_thread(self) -> float | None:
        """The fp32 accumulator's registers per thread: the output tile over the launch's threads."""
        return self.output / (32 * self.num_warps) if self.output and self.num_warps else None


class SanityBounds:
    """Mixed into Analysis: reads the knobs, kernels and launches its discovery found (and `_param_kind`)."""

    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    consts: dict[str, ast.Constant]
    _constraints: list[tuple[str, Callable[[dict], float | None]]]

    if TYPE_CHECKING:  # provided by KnobFamilies
        def _param_kind(self, k: Kernel, param: str) -> str | None: ...

    def _sanity_constraints(self) -> None:
        for launch in self.launches:
            self._launch_constraints(launch)
        for k in self.kernels.values():
            evict, cache = f"kernel:{k.name}:eviction_policy", f"kernel:{k.name}:cache_modifier"
            if evict not in self.knobs and cache not in self.knobs:
                continue
            # ptxas (Triton 3.6, sm_90a) rejects a load carrying both hints: measured on an H200, all 72 such
            # vector_add configurations failed to assemble. A hint the kernel's loads carry with no knob to
            # move it (Inductor mixes evict_first and evict_last in one kernel) is there whatever the search sets
            fixed = {opt: f"kernel:{k.name}:{opt}" not in self.knobs
                     and any(kw.arg == opt for call in k.loads for kw in call.keywords)
                     for opt in ("eviction_policy", "cache_modifier")}

            def both(assign: dict, evict=evict, cache=cache, fixed=fixed) -> float | None:
                has_evict = fixed["eviction_policy"] or bool(assign.get(evict))
                has_cache = fixed["cache_modifier"] or bool(assign.get(cache))
                return 1.0 if has_evict and has_cache else None

            self._constraints.append((f"kernel:{k.name}:load-hints", both))

    def _value(self, assign: dict, kid: str, fixed: ast.AST | None, default: int | None) -> int | None:
        if kid in assign:
            v = assign[kid]
            return v if isinstance(v, int) else None
        if fixed is not None:
            return int_value(fixed)
        return default

    def _param_value(self, assign: dict, launch: Launch, param: str) -> int | None:
        prefix = f"launch:{launch.kernel.name}:{launch.ordinal}"
        expr = launch.bindings.get(param)
        if isinstance(expr, ast.Name) and expr.id in self.consts:
            return self._value(assign, f"const:{expr.id}", self.consts[expr.id], None)
        if expr is not None:
            return self._value(assign, f"{prefix}:{param}", expr, None)
        if param in self.consts:
            return self._value(assign, f"const:{param}", self.consts[param], None)
        return None

    def _options(self, assign: dict, launch: Launch) -> tuple[int | None, int | None]:
        prefix = f"launch:{launch.kernel.name}:{launch.ordinal}"
        w_kw, s_kw = launch.options.get("num_warps"), launch.options.get("num_stages")
        w = self._value(assign, f"{prefix}:num_warps", w_kw.value if w_kw else None, None if w_kw else DEFAULT_NUM_WARPS)
        s = self._value(assign, f"{prefix}:num_stages", s_kw.value if s_kw else None, None if s_kw else DEFAULT_NUM_STAGES)
        return w, s

    def dot_tiles(self, assign: dict) -> list[DotTile]:
        """The tile of every tl.dot launch under `assign` (what the accumulator bound reads)."""
        out = []
        for launch in self.launches:
            k = launch.kernel
            shapes = sorted(p for p, r in k.roles.items() if "shape" in r and self._param_kind(k, p) == "block")
            if not k.has_dot or not shapes:
                continue
            g = _known([self._param_value(assign, launch, p) for p in shapes if "pid" in k.roles[p]])
            kk = _known([self._param_value(assign, launch, p) for p in shapes if "pid" not in k.roles[p]])
            w, s = self._options(assign, launch)
            out.append(DotTile(k.name, _prod(g) if g else None, _prod(kk) if kk else None, w, s))
        return out

    def _launch_constraints(self, launch: Launch) -> None:
        k = launch.kernel
        prefix = f"launch:{k.name}:{launch.ordinal}"
        shapes = sorted(p for p, r in k.roles.items() if "shape" in r and self._param_kind(k, p) == "block")
        if not shapes:
            return
        if k.has_dot:
            grid_tiles = [p for p in shapes if "pid" in k.roles[p]]
            k_tiles = [p for p in shapes if "pid" not in k.roles[p]]

            def accumulator(assign: dict) -> float | None:
                vals = [self._param_value(assign, launch, p) for p in grid_tiles]
                w, _ = self._options(assign, launch)
                known = _known(vals)
                if not vals or known is None or w is None:
                    return None
                per_thread = _prod(known) / (32 * w)
                return _excess(per_thread, MIN_ACCUMULATOR_PER_THREAD, MAX_ACCUMULATOR_PER_THREAD)

            def shared_memory(assign: dict) -> float | None:
                g = _known([self._param_value(assign, launch, p) for p in grid_tiles])
                kk = _known([self._param_value(assign, launch, p) for p in k_tiles])
                _, s = self._options(assign, launch)
                if not g or not kk:
                    return None
                stages = max(1, s or DEFAULT_NUM_STAGES)
                used = sum(x * _prod(kk) for x in g) * OPERAND_BYTES * stages
                return _excess(used, 0, SHARED_MEMORY_BYTES)

            self._constraints.append((f"{prefix}:accumulator", accumulator))
            self._constraints.append((f"{prefix}:shared-memory", shared_memory))
        else:
            def registers(assign: dict) -> float | None:
                vals = _known([self._param_value(assign, launch, p) for p in shapes])
                w, _ = self._options(assign, launch)
                if vals is None or w is None:
                    return None
                n = _prod(vals)
                return _excess(n, MIN_ELEMENTS_PER_WARP * w, MAX_ELEMENTS_PER_THREAD * 32 * w)

            self._constraints.append((f"{prefix}:registers", registers))


def _excess(x: float, lo: float, hi: float) -> float:
    """0 within [lo, hi], else log2 of how far outside."""
    if x <= 0:
        return math.inf
    if x > hi:
        return math.log2(x / hi)
    if lo > 0 and x < lo:
        return math.log2(lo / x)
    return 0.0


def _known(values: list[int | None]) -> list[int] | None:
    """The values, or None where any of them is unknown."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def _prod(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out
