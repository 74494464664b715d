"""The grouped launch order: a 2-D tiled kernel's plain row-major pid mapping rewritten into the grouped
(swizzled) one, with a GROUP_M constexpr that then is a block-family knob of its own.

A structural edit, unlike the other knobs' literals: offered only where the whole pattern is recognised
(one launch, pid // num_pid_n and pid % num_pid_n, a cdiv, a masked row extent) and no name it adds is
taken. In a persistent kernel (persistent.py) the mapping is read in the loop over tiles, from the tile's id.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.astutil import dotted_name
from kernel_tui.core.proposers.transforms.knobs import DEFAULT_GROUP, Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword


class GroupedLaunchOrder:
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution, and
    `_param_kind` (a kernel already grouped has a group-kind constexpr)."""

    text: SourceText
    tl: str | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis (and KnobFamilies)
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _param_kind(self, k: Kernel, param: str) -> str | None: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _persistent_loop(self, k: Kernel) -> ast.For | None: ...

    def _launch_order_knobs(self) -> None:
        for k in self.kernels.values():
            grouped = any(self._param_kind(k, p) == "group" for p in k.constexpr)
            if grouped:
                kid = f"kernel:{k.name}:launch_order"
                self.knobs[kid] = Knob(id=kid, kind="launch_order", label="launch order", value="grouped",
                                       domain=("grouped",), numeric=False)
                continue
            plan = self._row_major_plan(k)
            if plan is None:
                continue
            kid = f"kernel:{k.name}:launch_order"
            self.knobs[kid] = Knob(id=kid, kind="launch_order", label="launch order", value="row-major",
                                   domain=("row-major", "grouped"), numeric=False)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _row_major_plan(self, k: Kernel) -> list[Edit] | None:
        """The edits that give a kernel with the plain row-major pid mapping the grouped one, or None
        when the pattern is not recognised (the applicability check)."""
        if k.tuned:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or "GROUP_M" in launches[0].bindings:
            return None
        launch = launches[0]
        a = k.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or not a.args:
            return None
        used = {n.id for n in self._walk(k.node) if isinstance(n, ast.Name)} | set(k.params)
        tiles = self._persistent_loop(k)  # a persistent kernel maps each tile's id in its loop over tiles
        body = k.node.body if tiles is None else tiles.body
        tile_id = tiles.target.id if tiles is not None and isinstance(tiles.target, ast.Name) else None
        defs: dict[str, ast.AST] = {}
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                defs.setdefault(stmt.targets[0].id, stmt.value)
            if i + 1 >= len(body):
                continue
            pair = self._pid_pair(stmt, body[i + 1])
            if pair is None:
                continue
            first, second, pid, pid_m, pid_n, npn = pair
            pid_def = defs.get(pid)
            if pid_def is None or not (tile_id in self._names(pid_def) or any(
                    isinstance(c, ast.Call) and self._is_tl(c.func, "program_id") for c in self._walk(pid_def))):
                return None
            npn_def = defs.get(npn)
            cdiv = self._cdiv_parts(npn_def) if npn_def is not None else None
            if cdiv is None:
                return None
            _, _, style = cdiv
            bm = self._tile_of(k, pid_m)
            if bm is None or bm not in k.constexpr:
                return None
            m = self._extent_of(k, pid_m, bm)
            if m is None:
                return None
            fresh = ("num_pid_in_group", "group_id", "first_pid_m", "group_size_m", "GROUP_M")
            if any(n in used for n in fresh):
                return None
            reuse = defs.get("num_pid_m")
            if reuse is not None:
                parts = self._cdiv_parts(reuse)
                if parts is None or parts[:2] != (m, bm):
                    return None
            num_pid_m = "num_pid_m"
            lines = []
            if reuse is None:
                if "num_pid_m" in used:
                    return None
                lines.append(f"num_pid_m = {style.format(m, bm)}")
            lines += [
                f"num_pid_in_group = GROUP_M * {npn}",
                f"group_id = {pid} // num_pid_in_group",
                "first_pid_m = group_id * GROUP_M",
                f"group_size_m = min({num_pid_m} - first_pid_m, GROUP_M)",
                f"{pid_m} = first_pid_m + (({pid} % num_pid_in_group) % group_size_m)",
                f"{pid_n} = ({pid} % num_pid_in_group) // group_size_m",
            ]
            start, end = self.text.start(first), self.text.end(second)
            indent = self.text.indent_at(start)
            edits = [Edit(start, end, (self.text.newline + indent).join(lines))]
            last = (a.posonlyargs + a.args)[-1]
            close = self.text.skip_to_close(self.text.end(last))
            if close is None or self.tl is None:
                return None
            edits.append(insert_argument(self.text, (self.text.start(last), self.text.end(last)), close,
                                          f"GROUP_M: {self.tl}.constexpr"))
            edits.append(insert_keyword(self.text, launch.call, f"GROUP_M={DEFAULT_GROUP}"))
            return edits
        return None

    @staticmethod
    def _pid_pair(s1: ast.stmt, s2: ast.stmt):
        def parse(s):
            if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                    and isinstance(s.value, ast.BinOp) and isinstance(s.value.left, ast.Name)
                    and isinstance(s.value.right, ast.Name) and isinstance(s.value.op, (ast.FloorDiv, ast.Mod))):
                return s.targets[0].id, type(s.value.op), s.value.left.id, s.value.right.id
            return None
        p1, p2 = parse(s1), parse(s2)
        if p1 is None or p2 is None or p1[2:] != p2[2:] or p1[1] is p2[1]:
            return None
        div, mod = (p1, p2) if p1[1] is ast.FloorDiv else (p2, p1)
        pid, npn = div[2], div[3]
        if div[0] in (pid, npn) or mod[0] in (pid, npn) or div[0] == mod[0]:
            return None
        return s1, s2, pid, div[0], mod[0], npn

    def _cdiv_parts(self, expr: ast.AST) -> tuple[str, str, str] | None:
        """(N, BLOCK, style) for `tl.cdiv(N, BLOCK)` or `(N + BLOCK - 1) // BLOCK`."""
        if isinstance(expr, ast.Call) and self._is_tl(expr.func, "cdiv") and len(expr.args) == 2:
            n, block = expr.args
            if isinstance(n, ast.Name) and isinstance(block, ast.Name):
                prefix = dotted_name(expr.func) or f"{self.tl}.cdiv"
                return n.id, block.id, prefix + "({}, {})"
            return None  # a call is no floor division either
        if (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.FloorDiv) and isinstance(expr.right, ast.Name)
                and isinstance(expr.left, ast.BinOp) and isinstance(expr.left.op, ast.Sub)
                and isinstance(expr.left.left, ast.BinOp) and isinstance(expr.left.left.op, ast.Add)
                and isinstance(expr.left.left.left, ast.Name) and isinstance(expr.left.left.right, ast.Name)
                and expr.left.left.right.id == expr.right.id and int_value(expr.left.right) == 1):
            return expr.left.left.left.id, expr.right.id, "({0} + {1} - 1) // {1}"
        return None

    def _tile_of(self, k: Kernel, pid_m: str) -> str | None:
        for n in self._walk(k.node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
                for this, other in ((n.left, n.right), (n.right, n.left)):
                    if isinstance(this, ast.Name) and this.id == pid_m and isinstance(other, ast.Name):
                        return other.id
        return None

    def _extent_of(self, k: Kernel, pid_m: str, bm: str) -> str | None:
        """M in `offs_m < M` (or `... % M`) where offs_m comes from pid_m * BLOCK_M."""
        offs: set[str] = set()
        for n in self._walk(k.node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                for b in self._walk(n.value):
                    if (isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult)
                            and {dotted_name(b.left), dotted_name(b.right)} == {pid_m, bm}):
                        offs.add(n.targets[0].id)
        runtime = set(k.params) - k.constexpr
        for n in self._walk(k.node):
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt):
                left = n.left.value if isinstance(n.left, ast.Subscript) else n.left
                right = n.comparators[0]
                if isinstance(left, ast.Name) and left.id in offs and isinstance(right, ast.Name) and right.id in runtime:
                    return right.id
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.right, ast.Name) and n.right.id in runtime:
                if any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult) and {dotted_name(b.left), dotted_name(b.right)} == {pid_m, bm}
                       for b in self._walk(n.left)):
                    return n.right.id
        return None
