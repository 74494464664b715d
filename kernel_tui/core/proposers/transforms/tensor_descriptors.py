"""Tensor-descriptor loads: a tl.dot kernel's pointer loads of its A and B tiles made loads through device-side
tensor descriptors, which Hopper GPUs serve with the TMA unit (one instruction moves a whole tile into shared
memory, no address per element in registers). Out-of-bounds elements of a descriptor load read as zero, which
is what the masked loads with `other=0` gave: each descriptor's shape is the bounds its load's mask compared
with. A guard at launch, `USE_TMA`, holds where TMA can address the operands (the inner stride 1, the outer
stride and the base address 16-byte aligned); the pointer loads stay in the constexpr branch for every other
layout, so the kernel computes exactly what it did for any input.

A structural edit, offered only where the whole pattern is recognised in a kernel with one launch and one
tl.dot, `tl.dot(a_tile, b_tile, ...)`, in a loop (the K loop) whose body holds, next to one another:

    a_ptrs = a_ptr + offs_m[:, None] * stride_am + k_idx[None, :] * stride_ak  # the terms in any order
    b_ptrs = b_ptr + k_idx[:, None] * stride_bk + offs_n[None, :] * stride_bn
    a_tile = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)  # load hints allowed
    b_tile = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)

where each index is an offset plus an arange, `offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)` or
`k_idx = k_start + offs_k` with `offs_k = tl.arange(0, BLOCK_K)`, each bound once, its offset's names bound at
most once (and not in the K loop unless the index is); each mask is `index < bound` (or the EVEN_K constant of
even_k.py); bounds, strides and pointers are parameters the kernel never rebinds, and the launch passes each
pointer as a tensor by name. The edit:

    if USE_TMA:  # before the K loop
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
        b_desc = ...
    for k_start in range(0, K, BLOCK_K):
        ...
        if USE_TMA:
            a_tile = a_desc.load([pid_m * BLOCK_M, k_start])
            b_tile = b_desc.load([k_start, pid_n * BLOCK_N])
        else:
            ...  # the four statements as they were

The inner stride is written `1`, which the guard makes it: Triton checks the last stride of a descriptor when it
compiles, and a runtime parameter is the constant 1 there only while Triton specialises integers equal to 1.
The store stays a masked pointer store. Descriptors made on the GPU need global scratch memory, which Triton
asks an allocator for at each launch: a module-level helper sets `triton.set_allocator` before each launch on
a GPU (Triton keeps the allocator in a context variable, so a thread sees only the one it set). Triton's CPU
interpreter runs descriptor loads with no allocator.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import EVEN_K_GUARD, TMA_GUARD, Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword

POINTERS = "pointers"
DESCRIPTORS = "tensor descriptors"
HINTS = ("eviction_policy", "cache_modifier")  # load hints a descriptor load goes without: no change to a value
# The names the edit adds; none may be taken anywhere in the source.
FRESH_NAMES = (TMA_GUARD, "a_desc", "b_desc", "tma_scratch", "set_tma_allocator")

HELPER = '''def tma_scratch(size, alignment, stream):
    """Global memory for the tensor descriptors a kernel makes on the GPU: Triton asks for it at each launch."""
    return {torch}.empty(size, device="cuda", dtype={torch}.int8)


def set_tma_allocator(tensor):
    """Triton's allocator set to tma_scratch, before each launch on a GPU: Triton keeps it in a context variable,
    which a thread that launches sees only when it set it itself."""
    if tensor.device.type == "cuda":
        {triton}.set_allocator(tma_scratch)
'''


@dataclass(frozen=True)
class Index:
    """`name = offset + tl.arange(0, block)`: a tile's rows or columns."""

    name: str
    offset: str  # the offset's source text
    block: str


@dataclass(frozen=True)
class Operand:
    """One tile tl.dot reads, as its pointer load finds it."""

    tile: str
    ptrs: ast.Assign
    load: ast.Assign
    base: str  # the pointer parameter
    tensor: str  # the name the launch passes for it
    rows: Index
    cols: Index
    strides: tuple[str, str]
    shape: tuple[str, str]


class TensorDescriptorLoads:
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    tree: ast.Module | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis (and EvenKLoop)
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _stores(self, node: ast.AST) -> Counter[str]: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _is_range(self, call: ast.Call) -> bool: ...
        def _aranges(self, k: Kernel) -> dict[str, str]: ...

    def _tensor_descriptor_knobs(self) -> None:
        for k in self.kernels.values():
            kid = f"kernel:{k.name}:loads"
            if TMA_GUARD in k.constexpr:  # applied already: nothing left to offer, but say what the kernel does
                self.knobs[kid] = Knob(id=kid, kind="loads", label=k.name, value=DESCRIPTORS, domain=(DESCRIPTORS,),
                                       numeric=False)
                continue
            plan = self._tma_plan(k)
            if plan is None:
                continue
            self.knobs[kid] = Knob(id=kid, kind="loads", label=k.name, value=POINTERS,
                                   domain=(POINTERS, DESCRIPTORS), numeric=False)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _tma_branches(self, k: Kernel) -> tuple[set[int], set[int]]:
        """The ids of the nodes in the descriptor branch and in the pointer branch (`else`) of a kernel's
        `if USE_TMA:` statements."""
        if TMA_GUARD not in k.constexpr:
            return set(), set()
        ifs = [n for n in self._walk(k.node) if isinstance(n, ast.If) and _name(n.test) == TMA_GUARD]
        return ({id(x) for n in ifs for s in n.body for x in self._walk(s)},
                {id(x) for n in ifs for s in n.orelse for x in self._walk(s)})

    def _tma_plan(self, k: Kernel) -> list[Edit] | None:
        """The edits that load `k`'s tl.dot operands through tensor descriptors, or None where the pattern is
        not all there."""
        torch = next((alias for alias, full in self.aliases.items() if full == "torch"), None)
        triton = next((alias for alias, full in self.aliases.items() if full == "triton"), None)
        if k.tuned or self.tl is None or self.tree is None or torch is None or triton is None or len(k.dots) != 1:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or TMA_GUARD in launches[0].bindings:
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
        dot = k.dots[0]
        if len(dot.args) < 2 or not all(isinstance(x, ast.Name) for x in dot.args[:2]):
            return None
        loops = [n for n in self._walk(k.node) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
                 and self._is_range(n.iter) and any(s is dot for s in self._walk(n))]
        if not loops:
            return None
        loop = loops[-1]  # the innermost (a persistent kernel's loop over tiles holds the K loop)
        stores = self._stores(k.node)
        operands = [self._tma_operand(k, launch, loop, stores, _name(x) or "") for x in dot.args[:2]]
        if operands[0] is None or operands[1] is None:
            return None
        return self._tma_edits(k, launch, loop, (operands[0], operands[1]), torch, triton)

    def _tma_operand(self, k: Kernel, launch: Launch, loop: ast.For, stores: Counter[str], tile: str) -> Operand | None:
        """The operand loaded into `tile` at the K loop's top level, where its load has the recognised form."""
        load = _assign_of(loop.body, tile)
        if load is None or stores[tile] != 1 or not isinstance(load.value, ast.Call):
            return None
        call = load.value
        keywords = {kw.arg: kw.value for kw in call.keywords}
        if not (self._is_tl(call.func, "load") and len(call.args) == 1 and isinstance(call.args[0], ast.Name)
                and None not in keywords and {"mask", "other"} <= set(keywords) <= {"mask", "other", *HINTS}):
            return None
        other = keywords["other"]
        if not (isinstance(other, ast.Constant) and type(other.value) in (int, float) and other.value == 0):
            return None
        ptrs_name = call.args[0].id
        ptrs = _assign_of(loop.body, ptrs_name)
        uses = [n for n in self._walk(k.node) if isinstance(n, ast.Name) and n.id == ptrs_name]
        if ptrs is None or stores[ptrs_name] != 1 or len(uses) != 2 or loop.body.index(ptrs) > loop.body.index(load):
            return None
        address = self._tma_address(k, ptrs.value, stores)
        mask = _broadcast_pair(keywords["mask"])
        if address is None or mask is None:
            return None
        base, (row, row_stride), (col, col_stride) = address
        bound = launch.bindings.get(base)
        rows, cols = self._tma_index(k, loop, row, stores), self._tma_index(k, loop, col, stores)
        shape = (self._tma_bound(k, mask[0], row, stores), self._tma_bound(k, mask[1], col, stores))
        if not isinstance(bound, ast.Name) or rows is None or cols is None or shape[0] is None or shape[1] is None:
            return None
        return Operand(tile=tile, ptrs=ptrs, load=load, base=base, tensor=bound.id, rows=rows, cols=cols,
                       strides=(row_stride, col_stride), shape=(shape[0], shape[1]))

    def _tma_address(self, k: Kernel, value: ast.AST, stores: Counter[str]
                     ) -> tuple[str, tuple[str, str], tuple[str, str]] | None:
        """`base + row[:, None] * row_stride + col[None, :] * col_stride` (the terms in any order, each product
        either way round): base, (row, row_stride), (col, col_stride), each a name."""
        terms = _sum_terms(value)
        if len(terms) != 3:
            return None
        runtime = {p for p in k.params if p not in k.constexpr and stores[p] == 0}
        base = [t.id for t in terms if isinstance(t, ast.Name)]
        row = [p for t in terms if (p := _scaled(t, 0)) is not None]
        col = [p for t in terms if (p := _scaled(t, 1)) is not None]
        if len(base) != 1 or len(row) != 1 or len(col) != 1:
            return None
        if not ({base[0], row[0][1], col[0][1]} <= runtime) or len({base[0], row[0][1], col[0][1]}) != 3:
            return None
        return base[0], row[0], col[0]

    def _tma_index(self, k: Kernel, loop: ast.For, name: str, stores: Counter[str]) -> Index | None:
        """`name = offset + tl.arange(0, BLOCK)` (either way round; the arange itself or a name bound once to
        it), bound once, its offset the same where the tile loads as where the index was bound."""
        defs = [n for n in self._walk(k.node) if isinstance(n, ast.Assign) and len(n.targets) == 1
                and _name(n.targets[0]) == name]
        if stores[name] != 1 or len(defs) != 1:
            return None
        value = defs[0].value
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
            return None
        aranges = self._aranges(k)
        for offset, arange in ((value.left, value.right), (value.right, value.left)):
            if isinstance(arange, ast.Name) and arange.id in aranges and stores[arange.id] == 1:
                block = aranges[arange.id]
            elif (isinstance(arange, ast.Call) and self._is_tl(arange.func, "arange") and len(arange.args) == 2
                  and int_value(arange.args[0]) == 0 and isinstance(arange.args[1], ast.Name) and not arange.keywords):
                block = arange.args[1].id
            else:
                continue
            if block not in k.constexpr or stores[block] or offset.lineno != offset.end_lineno:
                return None
            in_loop = {id(n) for n in self._walk(loop)}
            for n in self._names(offset):  # the offset's names keep the value the index saw
                if stores[n] > 1 or n in self.kernels:
                    return None
                bound_in_loop = any(isinstance(x, ast.Name) and x.id == n and isinstance(x.ctx, ast.Store)
                                    and id(x) in in_loop for x in self._walk(k.node))
                if bound_in_loop and id(defs[0]) not in in_loop:
                    return None
            return Index(name=name, offset=self.text.text(self.text.start(offset), self.text.end(offset)), block=block)
        return None

    def _tma_bound(self, k: Kernel, mask: str, index: str, stores: Counter[str]) -> str | None:
        """The bound of `mask = index < bound` (a parameter the kernel never rebinds), where every binding of
        the mask is that comparison, or the constant true of an EVEN_K branch (even_k.py) beside it."""
        bounds: set[str] = set()
        for n in self._walk(k.node):
            if isinstance(n, (ast.AugAssign, ast.AnnAssign)) and _name(n.target) == mask:
                return None
            if not (isinstance(n, ast.Assign) and any(mask in self._names(t) for t in n.targets)):
                continue
            if len(n.targets) != 1 or _name(n.targets[0]) != mask:
                return None
            v = n.value
            bound = _name(v.comparators[0]) if isinstance(v, ast.Compare) and len(v.ops) == 1 else None
            if isinstance(v, ast.Compare) and isinstance(v.ops[0], ast.Lt) and _name(v.left) == index and bound:
                bounds.add(bound)
            elif not self._even_k_true(k, n):
                return None
        if len(bounds) != 1:
            return None
        found = bounds.pop()
        return found if found in k.params and found not in k.constexpr and stores[found] == 0 else None

    def _even_k_true(self, k: Kernel, stmt: ast.Assign) -> bool:
        """`mask = tl.full(...)` as the body of an `if EVEN_K:` whose else binds the mask otherwise."""
        if EVEN_K_GUARD not in k.constexpr or not isinstance(stmt.value, ast.Call):
            return False
        if not self._is_tl(stmt.value.func, "full"):
            return False
        return any(isinstance(n, ast.If) and _name(n.test) == EVEN_K_GUARD and n.body == [stmt]
                   and len(n.orelse) == 1 for n in self._walk(k.node))

    def _tma_edits(self, k: Kernel, launch: Launch, loop: ast.For, operands: tuple[Operand, Operand],
                   torch: str, triton: str) -> list[Edit] | None:
        """The descriptors before the K loop, the branch in it, the guard's parameter, and the host side."""
        body = loop.body
        stmts = [body.index(s) for op in operands for s in (op.ptrs, op.load)]
        first, last = min(stmts), max(stmts)
        if sorted(stmts) != list(range(first, last + 1)):
            return None  # the four statements next to one another
        block = body[first: last + 1]
        start, end = self.text.offset(block[0].lineno, 0), self.text.end(block[-1])
        loop_line = self.text.offset(loop.lineno, 0)
        indent, outer = self.text.indent_at(self.text.start(block[0])), self.text.indent_at(self.text.start(loop))
        if self.text.text(start, self.text.start(block[0])) != indent or self.text.text(loop_line, self.text.start(loop)) != outer:
            return None  # a statement after another on its line
        for stmt in block:  # re-indenting a string that spans lines would change it
            if any(isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno for n in self._walk(stmt)):
                return None
        nl, tl = self.text.newline, self.tl
        unit = "\t" if "\t" in indent else "    "
        region = self.text.text(start, end)
        moved = "".join(line if not line.strip() else unit + line for line in region.splitlines(keepends=True))
        named = sorted(zip("ab", operands, strict=True), key=lambda pair: body.index(pair[1].load))
        loads = "".join(f"{indent}{unit}{op.tile} = {name}_desc.load([{op.rows.offset}, {op.cols.offset}]){nl}"
                        for name, op in named)
        branch = f"{indent}if {TMA_GUARD}:{nl}{loads}{indent}else:{nl}{moved}"
        descs = "".join(
            f"{outer}{unit}{name}_desc = {tl}.make_tensor_descriptor({op.base}, shape=[{op.shape[0]}, {op.shape[1]}], "
            f"strides=[{op.strides[0]}, 1], block_shape=[{op.rows.block}, {op.cols.block}]){nl}"
            for name, op in zip("ab", operands, strict=True))
        params = (k.node.args.posonlyargs + k.node.args.args)
        close = self.text.skip_to_close(self.text.end(params[-1]))
        guard = self._tma_guard(launch, operands)
        host = self._tma_host(launch, operands[0].tensor, torch, triton)
        if close is None or guard is None or host is None:
            return None
        return [
            insert_argument(self.text, (self.text.start(params[-1]), self.text.end(params[-1])), close,
                            f"{TMA_GUARD}: {tl}.constexpr"),
            Edit(loop_line, loop_line, f"{outer}if {TMA_GUARD}:{nl}{descs}"),
            Edit(start, end, branch),
            insert_keyword(self.text, launch.call, f"{TMA_GUARD}={guard}"),
            *host,
        ]

    def _tma_guard(self, launch: Launch, operands: tuple[Operand, Operand]) -> str | None:
        """The guard's text: each operand's inner stride 1, its outer stride in bytes and its address 16-byte
        aligned, from what the launch passes."""
        inner, outer, address = [], [], []
        for op in operands:
            texts = []
            for stride in op.strides:
                node = launch.bindings.get(stride)
                if not isinstance(node, ast.expr) or node.lineno != node.end_lineno:
                    return None
                text = self.text.text(self.text.start(node), self.text.end(node))
                texts.append(text if isinstance(node, (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.Constant))
                             else f"({text})")
            inner.append(f"{texts[1]} == 1")
            outer.append(f"{texts[0]} * {op.tensor}.element_size() % 16 == 0")
            address.append(f"{op.tensor}.data_ptr() % 16 == 0")
        return "(" + " and ".join(inner + outer + address) + ")"

    def _tma_host(self, launch: Launch, tensor: str, torch: str, triton: str) -> list[Edit] | None:
        """The helpers before the host function, and the allocator set before the launch."""
        stmt = next((n for n in self._walk(launch.host) if isinstance(n, ast.Expr) and n.value is launch.call), None)
        if stmt is None:
            return None
        start = self.text.start(stmt)
        indent = self.text.indent_at(start)
        if self.text.text(self.text.offset(stmt.lineno, 0), start) != indent:
            return None
        nl = self.text.newline
        top = launch.host.decorator_list[0] if launch.host.decorator_list else launch.host
        at = self.text.offset(top.lineno, 0)
        helper = HELPER.format(torch=torch, triton=triton).replace("\n", nl)
        return [Edit(at, at, helper + nl + nl), Edit(start, start, f"set_tma_allocator({tensor}){nl}{indent}")]


def _name(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _assign_of(body: list[ast.stmt], name: str) -> ast.Assign | None:
    """The statement of `body`'s top level that binds `name` alone, if one does."""
    found = [s for s in body if isinstance(s, ast.Assign) and len(s.targets) == 1 and _name(s.targets[0]) == name]
    return found[0] if len(found) == 1 else None


def _sum_terms(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [node]


def _broadcast(node: ast.AST, axis: int) -> str | None:
    """The name in `name[:, None]` (axis 0, a column of rows) or `name[None, :]` (axis 1)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
        return None
    full, none = node.slice.elts if axis == 0 else node.slice.elts[::-1]
    if not (isinstance(full, ast.Slice) and full.lower is None and full.upper is None and full.step is None):
        return None
    return _name(node.value) if isinstance(none, ast.Constant) and none.value is None else None


def _scaled(node: ast.AST, axis: int) -> tuple[str, str] | None:
    """(index, stride) of `index[:, None] * stride` (axis 0) or `index[None, :] * stride` (axis 1), either way round."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for index, stride in ((node.left, node.right), (node.right, node.left)):
        name, s = _broadcast(index, axis), _name(stride)
        if name is not None and s is not None:
            return name, s
    return None


def _broadcast_pair(node: ast.AST) -> tuple[str, str] | None:
    """(rows, cols) of `rows[:, None] & cols[None, :]`."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd)):
        return None
    rows, cols = _broadcast(node.left, 0), _broadcast(node.right, 1)
    return (rows, cols) if rows is not None and cols is not None else None
