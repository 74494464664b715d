"""Warp specialization: one loop of a tl.dot kernel written `tl.range(..., warp_specialize=True)`, so that
Triton's compiler splits its work among groups of warps, some issuing the next tiles' loads while others run
the multiply-adds of this one, instead of every warp doing both in turn.

Offered per kernel, as which of its loops is specialized: "off", "K loop" (the loop a tl.dot accumulates in),
"tile loop" (a persistent grid's loop over the tiles, persistent.py), or "loop N" where a kernel has several
such loops. A loop qualifies where it is a `range` or `tl.range` loop with a tl.dot in its body (at any depth),
a positional first argument and no `**kwargs` or starred one, and any `warp_specialize=` it has written as a literal True or False. Only
one loop of a kernel at a time: the compiler specializes one loop, not one inside another. The kernel must run
at least MIN_WARPS_TO_SPECIALIZE warps (a sanity bound, so no warps move breaks it either), and must not be
autotuned (its configs own the warps). Not offered where the installed Triton predates the keyword.

Semantics-preserving by construction: the keyword tells the compiler how to schedule the loop, not what it
computes. A plain `range` loop becomes `tl.range` to carry it (the two iterate alike). Turning it off removes
the keyword where it was True.

Triton's CPU interpreter drops tl.range's keywords, so on the CPU the move changes nothing it can time
(search_steps.INTERPRETER_IGNORES); on a GPU, whether the compiler's partition pays depends on the kernel's
loads (tensor descriptors, tensor_descriptors.py, are what its Hopper tutorials pair it with) and stages.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import (
    MIN_WARPS_TO_SPECIALIZE,
    Kernel,
    Knob,
    Launch,
    triton_supports_warp_specialize,
)
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_keyword, remove_keyword

OFF = "off"
TILE_LOOP = "tile loop"
K_LOOP = "K loop"
KEYWORD = "warp_specialize"


class WarpSpecialization:
    """Mixed into Analysis: reads its kernels and launches, tree walks, name resolution and the launch options
    the sanity bounds read."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    _editors: dict[str, Callable[[int | str], list[Edit]]]
    _constraints: list[tuple[str, Callable[[dict], float | None]]]

    if TYPE_CHECKING:  # provided by Analysis, PersistentGrid and SanityBounds
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _persistent_loop(self, k: Kernel) -> ast.For | None: ...
        def _options(self, assign: dict, launch: Launch) -> tuple[int | None, int | None]: ...

    def _warp_specialize_knobs(self) -> None:
        if self.tl is None or not triton_supports_warp_specialize():
            return
        for k in self.kernels.values():
            if k.tuned or not k.has_dot:
                continue
            loops = self._specializable_loops(k)
            if loops is None or not loops:
                continue
            on = [name for name, (_, kw) in loops.items() if kw is not None and _is_true(kw)]
            if len(on) > 1:
                continue  # two loops specialized already: not a state this family makes, so none it moves
            kid = f"kernel:{k.name}:{KEYWORD}"
            self.knobs[kid] = Knob(id=kid, kind=KEYWORD, label=k.name, value=on[0] if on else OFF,
                                   domain=(OFF, *loops), numeric=False)

            def edits(new: int | str, loops: dict[str, tuple[ast.Call, ast.keyword | None]] = loops) -> list[Edit]:
                return self._specialize_edits(loops, str(new))

            self._editors[kid] = edits
            self._warps_bound(k, kid)

    def _specializable_loops(self, k: Kernel) -> dict[str, tuple[ast.Call, ast.keyword | None]] | None:
        """The kernel's loops with a tl.dot in them, by name, each with its `warp_specialize=` keyword (None: not
        written); None where one of them is not in a form this family edits."""
        tiles = self._persistent_loop(k)
        found: list[tuple[ast.For, ast.Call, ast.keyword | None]] = []
        for loop in sorted((n for n in self._walk(k.node) if isinstance(n, ast.For)), key=lambda n: (n.lineno, n.col_offset)):
            if not any(isinstance(c, ast.Call) and self._is_tl(c.func, "dot") for s in loop.body for c in self._walk(s)):
                continue
            call = loop.iter
            if not isinstance(call, ast.Call) or not (self._builtin_range(call) or self._is_tl(call.func, "range")):
                return None  # a static_range, or an iterator of the kernel's own, around the dot
            if not call.args or any(x.arg is None for x in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                return None
            kw = next((x for x in call.keywords if x.arg == KEYWORD), None)
            if kw is not None and not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)):
                return None
            found.append((loop, call, kw))
        inner = [f for f in found if f[0] is not tiles]
        names: dict[str, tuple[ast.Call, ast.keyword | None]] = {}
        for loop, call, kw in found:
            if loop is tiles:
                names[TILE_LOOP] = (call, kw)
            else:
                names[K_LOOP if len(inner) == 1 else f"loop {inner.index((loop, call, kw)) + 1}"] = (call, kw)
        return names

    def _builtin_range(self, call: ast.Call) -> bool:
        return isinstance(call.func, ast.Name) and call.func.id == "range" and "range" not in self.aliases

    def _specialize_edits(self, loops: dict[str, tuple[ast.Call, ast.keyword | None]], new: str) -> list[Edit]:
        """`warp_specialize=True` on the loop named `new` (none for "off"), and off on every other loop."""
        edits: list[Edit] = []
        for name, (call, kw) in loops.items():
            if name == new:
                if kw is not None:
                    edits.append(Edit(self.text.start(kw.value), self.text.end(kw.value), "True"))
                    continue
                edits.append(insert_keyword(self.text, call, f"{KEYWORD}=True"))
                if self._builtin_range(call):
                    edits.append(Edit(self.text.start(call.func), self.text.end(call.func), f"{self.tl}.range"))
            elif kw is not None and _is_true(kw):
                edits.append(remove_keyword(self.text, call, kw))  # never the first argument: the loops have args
        return edits

    def _warps_bound(self, k: Kernel, kid: str) -> None:
        """A specialized loop needs MIN_WARPS_TO_SPECIALIZE warps in every launch of its kernel."""
        launches = [ln for ln in self.launches if ln.kernel is k]

        def warps(assign: dict) -> float | None:
            if assign.get(kid, OFF) == OFF:
                return None
            counts = [self._options(assign, ln)[0] for ln in launches]
            return 1.0 if any(w is not None and w < MIN_WARPS_TO_SPECIALIZE for w in counts) else None

        self._constraints.append((f"{kid}:warps", warps))


def _is_true(kw: ast.keyword) -> bool:
    return isinstance(kw.value, ast.Constant) and kw.value.value is True


def describe(knob: Knob, new: int | str, kernels: int) -> str:
    """The move's text: which loop is specialized, or that it no longer is."""
    where = f" of {knob.label}" if kernels > 1 else ""
    if new == OFF:
        return f"warp specialization off ({knob.value}{where})"
    return f"warp-specialized {new}{where} (tl.range warp_specialize=True)"
