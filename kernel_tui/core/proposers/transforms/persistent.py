"""The persistent grid: a kernel launched with one program per tile made to launch one program per
streaming multiprocessor (never more than the tiles), each looping over the tiles `program_id,
program_id + programs, ...` and running the kernel's body on each as the tile's own program did. Fewer,
longer-lived programs: no launch and scheduling cost per tile, and one tile's loads may overlap the
previous tile's epilogue. The tile order stays the kernel's own (a grouped order stays grouped: the pid
mapping is inside the loop).

A structural edit, offered only where the whole pattern is recognised in a kernel with one launch:

    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)  # 1-D: a one-element tuple bound once in
    kernel[grid](a, ...)                                          # the host function, or written in place

    pid = tl.program_id(axis=0)  # the kernel's only program id read, at its body's top level; no return,
    ...                          # no tl.num_programs, no parameter rebound (a second tile would see it)

becomes

    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        pid = tile_id
        ...                      # the body as it was, one level in

    num_tiles = grid[0]
    kernel[(persistent_programs(a, num_tiles),)](a, ..., num_tiles=num_tiles)

Each tile runs exactly the statements its own program ran, with the same program id, so the kernel computes
what it did: semantics-preserving by construction. `a` is a tensor the kernel loads from or stores to (a
pointer parameter at the root of a load's or store's address); the program count comes from a module-level
helper the edit adds: the device's SM count, read once per device into NUM_SMS, when the tensor is on a
GPU, CPU_PROGRAMS on Triton's CPU interpreter.

On the interpreter a loop variable is a Python int where `tl.program_id` gives a tensor: a program id used
other than as a plain name (`tl.program_id(0).to(tl.int64)`, or a pid whose attributes are read) becomes
`tl.cast(tile_id, tl.int32)`, program_id's own type, rather than `tile_id`.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword

ONE_PER_TILE = "one program per tile"
PERSISTENT = "persistent"
# Programs of a persistent launch off a GPU. The interpreter runs programs one after another, so their count
# costs no time there; fewer than the tiles of most shapes, so that each program loops (and the loop is tested).
CPU_PROGRAMS = 3
# The names the edit adds; none may be taken anywhere in the source.
FRESH_NAMES = ("tile_id", "num_tiles", "NUM_SMS", "PROGRAMS_PER_SM", "persistent_programs")
# Programs per SM of a persistent launch: a kernel whose blocks fit several to an SM (a small tile: 7 per SM
# for 64×64 fp16 tiles with 4 warps on an H200) needs as many programs per SM to keep the SM's slots full; one
# per SM ran that kernel 6× slower. Not a knob the search moves: it follows the compiled kernel's blocks per
# SM in every candidate (occupancy.py), as EVEN_K follows the block it guards.
PROGRAMS_PER_SM = "PROGRAMS_PER_SM"
ONE_PER_SM = "one per SM"  # how a grid move's text ends: occupancy.py says the count it sets instead
# Calls whose first argument (or `base=`) is an address: the roots of one are the kernel's tensors.
ADDRESS_FUNCS = ("load", "store", "make_block_ptr", "make_tensor_descriptor", "advance", "multiple_of",
                 "max_contiguous", "max_constancy", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg",
                 "atomic_cas", "atomic_and", "atomic_or", "atomic_xor")
SCALAR_ANNOTATIONS = {"int", "float", "bool"}

HELPER = '''NUM_SMS = {{}}  # streaming multiprocessors per CUDA device index, read at its first persistent launch
PROGRAMS_PER_SM = 1  # programs of a persistent launch on each SM: as many as its blocks that fit on one


def persistent_programs(tensor, tiles):
    """The programs of a persistent launch on `tensor`'s device: PROGRAMS_PER_SM per streaming multiprocessor,
    never more than the tiles; {cpu} on the CPU, where Triton's interpreter runs the programs one after another."""
    device = tensor.device
    if device.type != "cuda":
        return min(tiles, {cpu})
    if device.index not in NUM_SMS:
        NUM_SMS[device.index] = {torch}.cuda.get_device_properties(device).multi_processor_count
    return min(tiles, NUM_SMS[device.index] * PROGRAMS_PER_SM)
'''


class PersistentGrid:
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    tree: ast.Module | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _stores(self, node: ast.AST) -> Counter[str]: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _is_range(self, call: ast.Call) -> bool: ...

    def _persistent_grid_knobs(self) -> None:
        for k in self.kernels.values():
            kid = f"kernel:{k.name}:grid"
            if self._persistent_loop(k) is not None:  # applied already: say what the kernel does
                self.knobs[kid] = Knob(id=kid, kind="grid", label=k.name, value=PERSISTENT, domain=(PERSISTENT,),
                                       numeric=False)
                continue
            plan = self._persistent_plan(k)
            if plan is None:
                continue
            self.knobs[kid] = Knob(id=kid, kind="grid", label=k.name, value=ONE_PER_TILE,
                                   domain=(ONE_PER_TILE, PERSISTENT), numeric=False)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _persistent_loop(self, k: Kernel) -> ast.For | None:
        """The loop over tiles of a kernel made persistent: its whole body (a docstring aside)."""
        body = _without_docstring(k.node.body)
        if len(body) != 1 or not isinstance(body[0], ast.For):
            return None
        loop = body[0]
        it = loop.iter
        if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and self._is_range(it)
                and len(it.args) == 3 and not loop.orelse):
            return None
        first, _, step = it.args
        return loop if (isinstance(first, ast.Call) and self._is_tl(first.func, "program_id")
                        and isinstance(step, ast.Call) and self._is_tl(step.func, "num_programs")) else None

    def _persistent_plan(self, k: Kernel) -> list[Edit] | None:
        """The edits that make `k` persistent, or None where the pattern is not all there."""
        torch = next((alias for alias, full in self.aliases.items() if full == "torch"), None)
        if k.tuned or self.tl is None or self.tree is None or torch is None:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or launches[0].host not in self.tree.body:
            return None
        launch = launches[0]
        a = k.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or not a.args:
            return None
        taken = {n.id for n in self._walk(self.tree) if isinstance(n, ast.Name)} | set(self.aliases)
        taken |= {n.name for n in self._walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        taken |= {n.arg for n in self._walk(self.tree) if isinstance(n, ast.arg)}
        if taken & set(FRESH_NAMES):
            return None
        if any(isinstance(n, (ast.Return, ast.Global, ast.Nonlocal, ast.Lambda)) for n in self._walk(k.node)):
            return None
        stores = self._stores(k.node)
        if set(stores) & set(k.params):  # a parameter rebound: the next tile would start from the new value
            return None
        pid = self._pid_read(k, stores)
        tiles = self._tile_count(launch)
        tensor = self._device_tensor(k, launch)
        if pid is None or tiles is None or tensor is None:
            return None
        body = self._wrapped_body(k, *pid)
        host = self._host_edits(launch, tiles, tensor, torch)
        last = (a.posonlyargs + a.args)[-1]
        close = self.text.skip_to_close(self.text.end(last))
        if body is None or host is None or close is None:
            return None
        signature = insert_argument(self.text, (self.text.start(last), self.text.end(last)), close, "num_tiles")
        return [signature, body, *host]

    def _pid_read(self, k: Kernel, stores: Counter[str]) -> tuple[ast.Call, str] | None:
        """The kernel's one program id read, `pid = tl.program_id(0)` (or an expression of it) at the body's
        top level, and the text that stands for it in the loop."""
        reads = [c for c in self._walk(k.node) if isinstance(c, ast.Call) and self._is_tl(c.func, "program_id", "num_programs")]
        if len(reads) != 1 or not self._is_tl(reads[0].func, "program_id"):
            return None
        call = reads[0]
        axis0 = (len(call.args) == 1 and int_value(call.args[0]) == 0 and not call.keywords) or (
            not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "axis"
            and int_value(call.keywords[0].value) == 0)
        stmt = next((s for s in k.node.body if any(n is call for n in self._walk(s))), None)
        if not axis0 or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                             and isinstance(stmt.targets[0], ast.Name)):
            return None
        name = stmt.targets[0].id
        if stores[name] != 1:
            return None
        held = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
                   for n in self._walk(k.node))
        plain = stmt.value is call and not held
        return call, "tile_id" if plain else f"{self.tl}.cast(tile_id, {self.tl}.int32)"

    def _tile_count(self, launch: Launch) -> str | None:
        """The tile count at the launch, as text: the one element of a 1-D grid tuple written in the
        subscript, or `grid[0]` for a name the host function binds once, to such a tuple."""
        grid = launch.call.func.slice if isinstance(launch.call.func, ast.Subscript) else None
        if isinstance(grid, ast.Tuple):
            if len(grid.elts) != 1 or isinstance(grid.elts[0], ast.Starred):
                return None
            elt = grid.elts[0]
            text = self.text.text(self.text.start(elt), self.text.end(elt))
            return text if elt.lineno == elt.end_lineno else f"({text})"
        if not isinstance(grid, ast.Name):
            return None
        host = launch.host
        if grid.id in {p.arg for p in self._walk(host.args) if isinstance(p, ast.arg)}:
            return None
        binds = [n for n in self._walk(host) if isinstance(n, ast.Name) and n.id == grid.id and not isinstance(n.ctx, ast.Load)]
        assign = next((n for n in self._walk(host) if isinstance(n, ast.Assign) and len(n.targets) == 1
                       and isinstance(n.targets[0], ast.Name) and n.targets[0].id == grid.id), None)
        if len(binds) != 1 or assign is None or not isinstance(assign.value, ast.Tuple):
            return None
        elts = assign.value.elts
        return f"{grid.id}[0]" if len(elts) == 1 and not isinstance(elts[0], ast.Starred) else None

    def _device_tensor(self, k: Kernel, launch: Launch) -> str | None:
        """The name the launch passes for the kernel's first tensor: a runtime parameter at the root of an
        address the kernel loads from or stores to, passed by a name that is no scalar of the host."""
        defs: dict[str, list[ast.AST]] = {}
        for n in self._walk(k.node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                defs.setdefault(n.targets[0].id, []).append(n.value)
        roots: set[str] = set()
        for c in self._walk(k.node):
            if isinstance(c, ast.Call) and self._is_tl(c.func, *ADDRESS_FUNCS):
                base = next((kw.value for kw in c.keywords if kw.arg in ("pointer", "base")), None)
                for expr in ([c.args[0]] if c.args else []) + ([base] if base is not None else []):
                    roots |= self._address_roots(expr, defs, set())
        scalars = {p.arg for p in launch.host.args.args
                   if isinstance(p.annotation, ast.Name) and p.annotation.id in SCALAR_ANNOTATIONS}
        for p in k.params:
            bound = launch.bindings.get(p)
            if p in roots and p not in k.constexpr and isinstance(bound, ast.Name) and bound.id not in scalars:
                return bound.id
        return None

    def _address_roots(self, expr: ast.AST, defs: dict[str, list[ast.AST]], seen: set[str]) -> set[str]:
        """The names an address is an offset from: the operands of its sums, through local assignments (a
        product, `row * stride`, is an offset; a call is none but the address functions')."""
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return set()
            seen.add(expr.id)
            out = {expr.id}
            for value in defs.get(expr.id, []):
                out |= self._address_roots(value, defs, seen)
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return self._address_roots(expr.left, defs, seen) | self._address_roots(expr.right, defs, seen)
        if isinstance(expr, ast.Subscript):
            return self._address_roots(expr.value, defs, seen)
        if isinstance(expr, ast.Call) and self._is_tl(expr.func, *ADDRESS_FUNCS) and expr.args:
            return self._address_roots(expr.args[0], defs, seen)
        return set()

    def _wrapped_body(self, k: Kernel, call: ast.Call, pid_text: str) -> Edit | None:
        """The kernel's body (its docstring aside) one level into the loop over tiles, the program id read
        replaced by the tile's."""
        body = _without_docstring(k.node.body)
        if not body or self.tl is None:
            return None
        first, last = body[0], body[-1]
        start = self.text.offset(first.lineno, 0)
        indent = self.text.indent_at(self.text.start(first))
        if self.text.text(start, self.text.start(first)) != indent:
            return None  # the body starts on the def's line, or after another statement
        for stmt in body:  # re-indenting a string that spans lines would change it
            for n in self._walk(stmt):
                if isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno:
                    if isinstance(n, ast.JoinedStr) or isinstance(n.value, (str, bytes)):
                        return None
        data, s, e = self.text.data, self.text.start(call), self.text.end(call)
        region = (data[start:s] + pid_text.encode("utf-8") + data[e:self.text.end(last)]).decode("utf-8")
        unit = "\t" if "\t" in indent else "    "
        lines = [line if not line.strip() else unit + line for line in region.splitlines(keepends=True)]
        tl = self.tl
        head = f"{indent}for tile_id in {tl}.range({tl}.program_id(0), num_tiles, {tl}.num_programs(0)):{self.text.newline}"
        return Edit(start, self.text.end(last), head + "".join(lines))

    def _host_edits(self, launch: Launch, tiles: str, tensor: str, torch: str) -> list[Edit] | None:
        """The host side: the helper before the host function, the tile count before the launch, the grid
        of one program per SM, and the tile count passed."""
        stmt = next((n for n in self._walk(launch.host) if isinstance(n, ast.Expr) and n.value is launch.call), None)
        grid = launch.call.func.slice if isinstance(launch.call.func, ast.Subscript) else None
        if stmt is None or grid is None:
            return None
        start = self.text.start(stmt)
        indent = self.text.indent_at(start)
        if self.text.text(self.text.offset(stmt.lineno, 0), start) != indent:
            return None
        nl = self.text.newline
        host = launch.host
        top = host.decorator_list[0] if host.decorator_list else host
        helper = HELPER.format(cpu=CPU_PROGRAMS, torch=torch).replace("\n", nl)
        return [
            Edit(self.text.offset(top.lineno, 0), self.text.offset(top.lineno, 0), helper + nl + nl),
            Edit(start, start, f"num_tiles = {tiles}{nl}{indent}"),
            Edit(self.text.start(grid), self.text.end(grid), f"(persistent_programs({tensor}, num_tiles),)"),
            insert_keyword(self.text, launch.call, "num_tiles=num_tiles"),
        ]


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def programs_per_sm(source: str) -> tuple[int, tuple[int, int]] | None:
    """The module's `PROGRAMS_PER_SM = <int>` (bound once, at its top level): its value and its span."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = [node for node in tree.body if isinstance(node, ast.Assign) and len(node.targets) == 1
             and isinstance(node.targets[0], ast.Name) and node.targets[0].id == PROGRAMS_PER_SM]
    value = int_value(found[0].value) if len(found) == 1 else None
    if value is None:
        return None
    text = SourceText(source)
    return value, (text.start(found[0].value), text.end(found[0].value))


def with_programs_per_sm(source: str, value: int) -> str | None:
    """The source with PROGRAMS_PER_SM set to `value` (None where it holds no such binding)."""
    found = programs_per_sm(source)
    if found is None:
        return None
    start, end = found[1]
    return source[:start] + str(value) + source[end:]
