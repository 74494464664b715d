"""The unmasked K loop: a reduction loop's bounds mask, all true whenever K is a multiple of the loop's block,
made a compile-time constant for those shapes, so that the loads along K need no mask (the compiler drops a
constant-true mask and can widen the loads). A guard at launch, `EVEN_K=K % BLOCK_K == 0`, keeps the masked
loop for every other shape: the kernel is specialised per value of the guard, and each specialisation
computes exactly what the original did.

A structural edit, offered only where the whole pattern is recognised in a kernel with one launch:

    offs_k = tl.arange(0, BLOCK_K)               # anywhere in the kernel
    for k_start in range(0, K, BLOCK_K):         # or tl.range; K a runtime parameter, BLOCK_K a constexpr one
                                                 # (or a split K loop's range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K))
        k_idx = k_start + offs_k                 # (or offs_k + k_start)
        mask_k = k_idx < K                       # one line, at the loop's top level

and the launch passes BLOCK_K by a name (a literal there would not follow a later change of the block, and
the guard would go stale), K by any expression. `mask_k = k_idx < K` becomes a constexpr branch:
`tl.full([BLOCK_K], 1, tl.int1)` when EVEN_K, the original comparison otherwise.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import EVEN_K_GUARD, Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.split_k import split_block
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword

GUARD = EVEN_K_GUARD


class EvenKLoop:
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution."""

    text: SourceText
    tl: str | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _stores(self, node: ast.AST) -> Counter[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...

    def _even_k_knobs(self) -> None:
        for k in self.kernels.values():
            kid = f"kernel:{k.name}:k_mask"
            if GUARD in k.constexpr:  # applied already: nothing left to offer, but say what the kernel does
                self.knobs[kid] = Knob(id=kid, kind="k_mask", label="K loop", value="unmasked when even",
                                       domain=("unmasked when even",), numeric=False)
                continue
            plan = self._even_k_plan(k)
            if plan is None:
                continue
            self.knobs[kid] = Knob(id=kid, kind="k_mask", label="K loop", value="masked",
                                   domain=("masked", "unmasked when even"), numeric=False)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _even_k_plan(self, k: Kernel) -> list[Edit] | None:
        """The edits that give `k` its guarded unmasked K loop, or None where the pattern is not all there."""
        if k.tuned or self.tl is None:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or GUARD in launches[0].bindings:
            return None
        launch = launches[0]
        a = k.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or not a.args:
            return None
        if any(isinstance(n, ast.Name) and n.id == GUARD for tree in (k.node, launch.host) for n in self._walk(tree)):
            return None
        runtime = set(k.params) - k.constexpr
        aranges = self._aranges(k)
        found = None
        for loop in (n for n in self._walk(k.node) if isinstance(n, ast.For)):
            found = self._loop_mask(loop, runtime, k.constexpr, aranges)
            if found is not None:
                break
        if found is None:
            return None
        stmt, mask, extent, block = found
        k_bound, b_bound = launch.bindings.get(extent), launch.bindings.get(block)
        if k_bound is None or not isinstance(b_bound, ast.Name):
            return None
        if stmt.lineno != stmt.end_lineno:
            return None
        start, end = self.text.start(stmt), self.text.end(stmt)
        indent, nl, tl = self.text.indent_at(start), self.text.newline, self.tl
        original = self.text.text(start, end)
        branch = (f"if {GUARD}:{nl}{indent}    {mask} = {tl}.full([{block}], 1, {tl}.int1){nl}"
                  f"{indent}else:{nl}{indent}    {original}")
        last = (a.posonlyargs + a.args)[-1]
        close = self.text.skip_to_close(self.text.end(last))
        if close is None:
            return None
        k_text = self.text.text(self.text.start(k_bound), self.text.end(k_bound))
        if not isinstance(k_bound, ast.Name):
            k_text = f"({k_text})"
        return [
            Edit(start, end, branch),
            insert_argument(self.text, (self.text.start(last), self.text.end(last)), close, f"{GUARD}: {tl}.constexpr"),
            insert_keyword(self.text, launch.call, f"{GUARD}={k_text} % {b_bound.id} == 0"),
        ]

    def _aranges(self, k: Kernel) -> dict[str, str]:
        """name -> BLOCK for `name = tl.arange(0, BLOCK)` assignments of the kernel, names bound once only."""
        out: dict[str, str] = {}
        counts: dict[str, int] = {}
        for n in self._walk(k.node):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                for x in self._walk(t):
                    if isinstance(x, ast.Name):
                        counts[x.id] = counts.get(x.id, 0) + 1
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.Call) and self._is_tl(n.value.func, "arange")
                    and len(n.value.args) == 2 and int_value(n.value.args[0]) == 0
                    and isinstance(n.value.args[1], ast.Name) and not n.value.keywords):
                out[n.targets[0].id] = n.value.args[1].id
        return {name: block for name, block in out.items() if counts.get(name) == 1}

    def _loop_mask(self, loop: ast.For, runtime: set[str], constexpr: set[str],
                   aranges: dict[str, str]) -> tuple[ast.Assign, str, str, str] | None:
        """(the mask's statement, its name, K, BLOCK_K) for a loop of the recognised shape."""
        it = loop.iter
        if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and len(it.args) == 3 and not loop.orelse):
            return None
        plain = isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords
        if not plain and not self._is_tl(it.func, "range"):  # tl.range's keywords (unrolling) keep the iteration
            return None
        lo, extent, step = it.args
        walked = split_block(lo, step)  # BLOCK of range(0, K, BLOCK), or of a split K loop (split_k.py)
        if walked is None or not isinstance(extent, ast.Name):
            return None
        if extent.id not in runtime or walked.id not in constexpr:
            return None
        var, block = loop.target.id, walked.id
        rebound = {x.id for n in self._walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                   for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) for x in self._walk(t)
                   if isinstance(x, ast.Name)}
        if var in rebound or extent.id in rebound or block in rebound:
            return None
        stores = self._stores(loop)

        index = None
        for stmt in loop.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            if (index is None and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
                    and var in (_name(value.left), _name(value.right))
                    and aranges.get(_name(value.right if _name(value.left) == var else value.left) or "") == block):
                if stores[name] != 1:
                    return None
                index = name
                continue
            if (index is not None and isinstance(value, ast.Compare) and len(value.ops) == 1
                    and isinstance(value.ops[0], ast.Lt) and _name(value.left) == index
                    and _name(value.comparators[0]) == extent.id):
                if stores[name] != 1:
                    return None
                return stmt, name, extent.id, block
        return None


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None
