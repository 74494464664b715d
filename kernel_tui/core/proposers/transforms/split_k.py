"""Split-K: a tl.dot kernel's K loop shared among SPLIT_K programs per output tile, each summing every SPLIT_K-th
block of K into an fp32 partial tile of a scratch buffer, and a second kernel that adds the partials in split order
and stores the result in the output's type. More programs for a problem whose output has few tiles but whose K is
long (few tiles fill few SMs); deterministic (no atomics: the same sums in the same order on every run).

A structural edit, offered only where the whole pattern is recognised in a kernel with one launch:

    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)  # 1-D (as persistent.py reads it)

    pid = tl.program_id(axis=0)                      # the only program id read, at the body's top level
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):             # or tl.range; the kernel's only loop, at its top level
        ...                                          # no state carried from one step to the next but acc
        acc = tl.dot(a_tile, b_tile, acc)            # or acc += tl.dot(a_tile, b_tile)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])

(the kernel's only store; its mask bounds the rows by `offs_m < M` and the columns by `offs_n < N`, the launch
passes c's strides as `c.stride(0)` and `c.stride(1)`; no return, no atomics, not persistent) becomes

    pid_k = tl.program_id(axis=1)
    for k_start in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):   # split s takes blocks s, s + SPLIT_K, ...
    c_ptrs = partial_ptr + pid_k.to(tl.int64) * stride_pk + offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
    tl.store(c_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])

    partial = torch.empty((SPLIT_K, M, N), device=c.device, dtype=torch.float32)
    kernel[(grid[0], SPLIT_K)](..., partial_ptr=partial, ..., SPLIT_K=SPLIT_K)
    kernel_sum_splits[(triton.cdiv(M * N, 1024),)](partial, c, M, N, ...)

The splits together run every block of K once, with the masks as they were, so the partials add up to the
original sum for any K (a split with no block stores zeros); only the fp32 rounding order differs. The reduction
writes every element of c within the mask's bounds: the kernel's tiles must cover them, as a launch of one program
per tile does. SPLIT_K is a module constant, a knob of its own (SPLITS) once the kernel is split.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeGuard

from kernel_tui.core.proposers.transforms.knobs import Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword

ONE_PASS = "one pass over K"
SPLIT = "split K"
SPLIT_K = "SPLIT_K"
DEFAULT_SPLITS = 4
SPLITS = (2, 4, 8, 16)  # the SPLIT_K knob's domain
SUM_BLOCK = 1024  # elements per program of the reduction: no knob (it moves a few microseconds at most)
# The names the edit adds (the reduction kernel's, `<kernel>_sum_splits`, besides); none may be taken anywhere.
FRESH_NAMES = (SPLIT_K, "pid_k", "partial", "partial_ptr", "stride_pk", "stride_pm", "stride_pn")
SUM_SUFFIX = "_sum_splits"
# The reduction kernel's own names: the output's parameter, named as the kernel's, may be none of them.
SUM_NAMES = {"partial_ptr", "M", "N", "stride_cm", "stride_cn", "stride_pk", "stride_pm", "stride_pn", SPLIT_K, "BLOCK",
             "offs", "mask", "row", "col", "ptrs", "total", "_"}

SUM_KERNEL = '''@{triton}.jit
def {name}(
    {c}, partial_ptr, M, N, stride_cm, stride_cn, stride_pk, stride_pm, stride_pn,
    SPLIT_K: {tl}.constexpr, BLOCK: {tl}.constexpr,
):
    """{c} = the SPLIT_K partial sums of {kernel}, added in split order (the same sum on every run)."""
    offs = {tl}.program_id(axis=0) * BLOCK + {tl}.arange(0, BLOCK)
    mask = offs < M * N
    row = offs // N
    col = offs % N
    ptrs = partial_ptr + row * stride_pm + col * stride_pn
    total = {tl}.load(ptrs, mask=mask, other=0.0)
    for _ in {tl}.static_range(1, SPLIT_K):
        ptrs += stride_pk
        total += {tl}.load(ptrs, mask=mask, other=0.0)
    {tl}.store({c} + row * stride_cm + col * stride_cn, {value}, mask=mask)
'''


def describe(knob: Knob, kernels: int) -> str:
    where = f" of {knob.label}" if kernels > 1 else ""
    return (f"split-K{where} into {SPLIT_K}={DEFAULT_SPLITS} partial sums, reduced in a second kernel "
            "(for small M·N, large K)")


def split_block(lo: ast.AST, step: ast.AST) -> ast.Name | None:
    """The block a K loop's range walks: BLOCK of `range(0, K, BLOCK)`, or of a split loop's
    `range(pid_k * BLOCK, K, BLOCK * SPLIT_K)` (every start a multiple of it, as in the loop it was)."""
    if int_value(lo) == 0 and isinstance(step, ast.Name):
        return step
    if not (isinstance(lo, ast.BinOp) and isinstance(lo.op, ast.Mult) and isinstance(step, ast.BinOp)
            and isinstance(step.op, ast.Mult)):
        return None
    ends = [x for x in (lo.left, lo.right) if isinstance(x, ast.Name)]
    block = next((s for s in (step.left, step.right) if isinstance(s, ast.Name) and any(s.id == e.id for e in ends)), None)
    return block


class SplitK:
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution, and persistent.py's
    reading of a 1-D grid (`_tile_count`) and of a persistent kernel (`_persistent_loop`)."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    tree: ast.Module | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    consts: dict[str, ast.Constant]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis and PersistentGrid
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _is_range(self, call: ast.Call) -> bool: ...
        def _persistent_loop(self, k: Kernel) -> ast.For | None: ...
        def _tile_count(self, launch: Launch) -> str | None: ...

    def _split_starts(self, kernel: ast.FunctionDef) -> set[int]:
        """The ids of the `pid_k * BLOCK` starts of a kernel's split loops: the program id picks which of the
        loop's blocks it sums, the grid follows no block (the block is no tile of the grid)."""
        out: set[int] = set()
        for n in self._walk(kernel):
            if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and len(n.iter.args) == 3:
                lo, _, step = n.iter.args
                if isinstance(lo, ast.BinOp) and self._is_range(n.iter) and split_block(lo, step) is not None:
                    out.add(id(lo))
        return out

    def _split_k_knobs(self) -> None:
        for k in self.kernels.values():
            kid = f"kernel:{k.name}:split_k"
            applied = SPLIT_K in k.constexpr and k.name + SUM_SUFFIX in self.kernels and self._split_starts(k.node)
            if applied:  # say what the kernel does, and SPLIT_K moves
                self.knobs[kid] = Knob(id=kid, kind="split_k", label=k.name, value=SPLIT, domain=(SPLIT,), numeric=False)
                self._splits_knob()
                # the reduction is a short pass beside the kernel: its knobs would only widen the search
                for other in [x for x in self.knobs if f":{k.name}{SUM_SUFFIX}:" in x]:
                    del self.knobs[other]
                    self._editors.pop(other, None)
                continue
            plan = self._split_k_plan(k)
            if plan is None:
                continue
            self.knobs[kid] = Knob(id=kid, kind="split_k", label=k.name, value=ONE_PASS, domain=(ONE_PASS, SPLIT),
                                   numeric=False)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _splits_knob(self) -> None:
        """SPLIT_K, the module constant of a split kernel: a knob of its own (kind "splits")."""
        node = self.consts.get(SPLIT_K)
        value = int_value(node)
        if node is None or value is None:
            return
        kid = f"const:{SPLIT_K}"
        domain = SPLITS if value in SPLITS else tuple(sorted({*SPLITS, value}))
        self.knobs[kid] = Knob(id=kid, kind="splits", label=SPLIT_K.lower(), value=value, domain=domain)
        start, end = self.text.start(node), self.text.end(node)
        self._editors[kid] = lambda new: [Edit(start, end, str(new))]

    def _split_k_plan(self, k: Kernel) -> list[Edit] | None:
        """The edits that split `k`'s K loop, or None where the pattern is not all there."""
        torch = next((alias for alias, full in self.aliases.items() if full == "torch"), None)
        triton = next((alias for alias, full in self.aliases.items() if full == "triton"), None)
        if k.tuned or self.tl is None or self.tree is None or torch is None or triton is None or not k.dots:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or launches[0].host not in self.tree.body:
            return None
        launch = launches[0]
        a = k.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or not a.args or self._persistent_loop(k) is not None:
            return None
        taken = {n.id for n in self._walk(self.tree) if isinstance(n, ast.Name)} | set(self.aliases)
        taken |= {n.name for n in self._walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        taken |= {n.arg for n in self._walk(self.tree) if isinstance(n, ast.arg)}
        if taken & {*FRESH_NAMES, k.name + SUM_SUFFIX}:
            return None
        if any(isinstance(n, (ast.Return, ast.Global, ast.Nonlocal, ast.Lambda, ast.While)) for n in self._walk(k.node)):
            return None
        calls = [c for c in self._walk(k.node) if isinstance(c, ast.Call)]
        if any(self._is_tl(c.func, "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                           "atomic_and", "atomic_or", "atomic_xor", "num_programs") for c in calls):
            return None
        parts = self._split_parts(k, calls)
        tiles = self._tile_count(launch)
        if parts is None or tiles is None:
            return None
        pid_stmt, loop, store = parts
        address = self._store_address(k, store)
        extents = self._extents(k, store.keywords[0].value, *address[3:]) if address is not None else None
        if address is None or extents is None:
            return None
        host = self._split_host(k, launch, address, extents, store.args[1], (tiles, torch, triton))
        kernel = self._split_kernel_edits(k, pid_stmt, loop, store.args[1], address)
        if host is None or kernel is None:
            return None
        return kernel + host

    def _split_parts(self, k: Kernel, calls: list[ast.Call]) -> tuple[ast.stmt, ast.For, ast.Call] | None:
        """The program id statement, the K loop and the store of a kernel of the recognised shape."""
        reads = [c for c in calls if self._is_tl(c.func, "program_id")]
        stores = [c for c in calls if self._is_tl(c.func, "store")]
        loops = [n for n in self._walk(k.node) if isinstance(n, ast.For)]
        if len(reads) != 1 or len(stores) != 1 or len(loops) != 1 or loops[0] not in k.node.body:
            return None
        call = reads[0]
        axis0 = (len(call.args) == 1 and int_value(call.args[0]) == 0 and not call.keywords) or (
            not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "axis"
            and int_value(call.keywords[0].value) == 0)
        pid_stmt = next((s for s in k.node.body if isinstance(s, ast.Assign) and s.value is call), None)
        store = stores[0]
        store_stmt = next((s for s in k.node.body if isinstance(s, ast.Expr) and s.value is store), None)
        if not axis0 or pid_stmt is None or store_stmt is None:
            return None
        loop = loops[0]
        acc = self._accumulator(k, loop)
        if acc is None or k.node.body.index(store_stmt) < k.node.body.index(loop):
            return None
        if len(store.args) != 2 or [kw.arg for kw in store.keywords] != ["mask"]:
            return None
        value = store.args[1]
        if not (isinstance(value, ast.Name) and value.id == acc) and cast_of(value) != acc:
            return None
        return pid_stmt, loop, store


    def _accumulator(self, k: Kernel, loop: ast.For) -> str | None:
        """The fp32 accumulator a K loop `range(0, K, BLOCK)` adds one tl.dot to per step, carrying nothing else
        from one step to the next; None where the loop is not of that shape."""
        it, target = loop.iter, loop.target
        if not (isinstance(it, ast.Call) and self._is_range(it) and len(it.args) == 3 and isinstance(target, ast.Name)
                and not loop.orelse and int_value(it.args[0]) == 0 and isinstance(it.args[2], ast.Name)
                and it.args[2].id in k.constexpr):
            return None
        updates = [s for s in loop.body if _dot_update(s) is not None and isinstance(s, (ast.Assign, ast.AugAssign))
                   and isinstance(s.value, ast.Call) and self._is_tl(s.value.func, "dot")]
        if len(updates) != 1 or any(isinstance(n, (ast.Break, ast.Continue)) for n in self._walk(loop)):
            return None
        acc = _dot_update(updates[0])
        init = next((s for s in k.node.body[:k.node.body.index(loop)] if isinstance(s, ast.Assign)
                     and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == acc), None)
        zeros = init.value if init is not None else None
        if acc is None or not (isinstance(zeros, ast.Call) and self._is_tl(zeros.func, "zeros") and any(
                kw.arg == "dtype" and self._is_tl(kw.value, "float32") for kw in zeros.keywords)):
            return None
        outside = {x.id for s in k.node.body if s is not loop for x in self._walk(s) if _stored(x)}
        inside = [x.id for s in loop.body for x in self._walk(s) if _stored(x)]
        stored_acc = sum(1 for s in k.node.body if s is not loop for x in self._walk(s) if _stored(x) and x.id == acc)
        if inside.count(acc) != 1 or stored_acc != 1 or (set(inside) - {acc}) & (outside | set(k.params) | {target.id}):
            return None
        seen: set[str] = set()
        for stmt in loop.body:  # a name of the loop read before its step binds it would carry a value over
            read = {x.id for x in self._walk(stmt) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)}
            if (read & set(inside)) - seen - {acc}:
                return None
            seen |= {x.id for x in self._walk(stmt) if _stored(x)}
        return acc

    def _store_address(self, k: Kernel, store: ast.Call) -> tuple[ast.Name, ast.Name, ast.Name, str, str] | None:
        """Of the store's address (the pointer argument, or the one assignment of the name passed there),
        `c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn`: the base parameter, the two strides,
        and the names of the row and column indices."""
        ptr = store.args[0]
        if isinstance(ptr, ast.Name):
            defs = [s for s in k.node.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name) and s.targets[0].id == ptr.id]
            binds = [x for x in self._walk(k.node) if _stored(x) and isinstance(x, ast.Name) and x.id == ptr.id]
            if len(defs) != 1 or len(binds) != 1:
                return None
            ptr = defs[0].value
        terms: list[ast.AST] = []
        todo: list[ast.AST] = [ptr]
        while todo:
            e = todo.pop()
            if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
                todo += [e.left, e.right]
            else:
                terms.append(e)
        base = [t for t in terms if isinstance(t, ast.Name) and t.id in k.params and t.id not in k.constexpr]
        products = sorted((t for t in terms if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult)
                           and isinstance(t.right, ast.Name) and _index_name(t.left) is not None),
                          key=lambda t: (t.lineno, t.col_offset))
        if len(terms) != 3 or len(base) != 1 or len(products) != 2:
            return None
        (rows, s_m), (cols, s_n) = ((_index_name(t.left), t.right) for t in products)
        if rows is None or cols is None or not isinstance(s_m, ast.Name) or not isinstance(s_n, ast.Name):
            return None
        return base[0], s_m, s_n, rows, cols

    def _extents(self, k: Kernel, mask: ast.AST, rows: str, cols: str) -> tuple[str, str] | None:
        """M and N of a store mask that bounds the rows by `rows < M` and the columns by `cols < N` (through the
        kernel's top-level assignments, each bound once), runtime parameters both."""
        defs: dict[str, list[ast.AST]] = {}
        for s in k.node.body:
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                defs.setdefault(s.targets[0].id, []).append(s.value)
        found: dict[str, str] = {}
        todo, seen = [mask], set()
        while todo:
            e = todo.pop()
            for x in self._walk(e):
                if isinstance(x, ast.Name) and x.id not in seen and len(defs.get(x.id, [])) == 1:
                    seen.add(x.id)
                    todo.append(defs[x.id][0])
                if (isinstance(x, ast.Compare) and len(x.ops) == 1 and isinstance(x.ops[0], ast.Lt)
                        and isinstance(x.comparators[0], ast.Name)):
                    found.setdefault(_index_name(x.left) or "", x.comparators[0].id)
        runtime = set(k.params) - k.constexpr
        m, n = found.get(rows), found.get(cols)
        if m is None or n is None or not {m, n} <= runtime or len(found) != 2:
            return None
        return m, n

    def _split_kernel_edits(self, k: Kernel, pid_stmt: ast.stmt, loop: ast.For, value: ast.AST,
                            address: tuple[ast.Name, ast.Name, ast.Name, str, str]) -> list[Edit] | None:
        """The kernel's side: SPLIT_K before it, its parameters, the split's program id, the loop over its share
        of K, and the store of the fp32 partial."""
        tl, nl, text = self.tl, self.text.newline, self.text
        assert isinstance(loop.iter, ast.Call) and isinstance(loop.iter.args[2], ast.Name)
        lo, step = loop.iter.args[0], loop.iter.args[2]
        base, s_m, s_n, _, _ = address
        acc = cast_of(value) or text.text(text.start(value), text.end(value))
        a = k.node.args
        last = (a.posonlyargs + a.args)[-1]
        close = text.skip_to_close(text.end(last))
        top = k.node.decorator_list[0] if k.node.decorator_list else k.node
        start = text.offset(top.lineno, 0)
        if close is None or text.text(start, text.start(top)).strip("@ \t"):
            return None
        indent = text.indent_at(text.start(pid_stmt))
        comment = f"# programs per output tile of {k.name}, each summing every {SPLIT_K}-th block of K"
        params = ("partial_ptr", "stride_pk", "stride_pm", "stride_pn", f"{SPLIT_K}: {tl}.constexpr")
        return [
            Edit(start, start, f"{SPLIT_K} = {DEFAULT_SPLITS}  {comment}{nl}{nl}{nl}"),
            *(insert_argument(text, (text.start(last), text.end(last)), close, p) for p in params),
            Edit(text.end(pid_stmt), text.end(pid_stmt), f"{nl}{indent}pid_k = {tl}.program_id(axis=1)"),
            Edit(text.start(lo), text.end(lo), f"pid_k * {step.id}"),
            Edit(text.start(step), text.end(step), f"{step.id} * {SPLIT_K}"),
            Edit(text.start(base), text.end(base), f"partial_ptr + pid_k.to({tl}.int64) * stride_pk"),
            Edit(text.start(s_m), text.end(s_m), "stride_pm"),
            Edit(text.start(s_n), text.end(s_n), "stride_pn"),
            Edit(text.start(value), text.end(value), acc),
        ]

    def _split_host(self, k: Kernel, launch: Launch, address: tuple[ast.Name, ast.Name, ast.Name, str, str],
                    extents: tuple[str, str], value: ast.AST, names: tuple[str, str, str]) -> list[Edit] | None:
        """The host's side: the scratch buffer before the launch, the grid of SPLIT_K programs per tile, the
        new arguments, the reduction kernel before the host function and its launch after the kernel's."""
        tiles, torch, triton = names
        text, nl, tl = self.text, self.text.newline, self.tl or ""
        base, s_m, s_n, _, _ = address
        bound = [launch.bindings.get(x) for x in (base.id, *extents, s_m.id, s_n.id)]
        c, m, n, sm, sn = bound
        if not isinstance(c, ast.Name) or not simple_expression(m) or not simple_expression(n) or base.id in SUM_NAMES:
            return None
        if not (stride_of(sm, c.id, 0) and stride_of(sn, c.id, 1)):
            return None
        cast = value.args[0] if isinstance(value, ast.Call) and cast_of(value) else None
        if cast is not None and not self._names(cast) <= {base.id, tl.split(".")[0]}:
            return None
        stmt = next((x for x in self._walk(launch.host) if isinstance(x, ast.Expr) and x.value is launch.call), None)
        grid = launch.call.func.slice if isinstance(launch.call.func, ast.Subscript) else None
        host = launch.host
        top = host.decorator_list[0] if host.decorator_list else host
        if stmt is None or grid is None or text.text(text.offset(top.lineno, 0), text.start(top)).strip("@ \t"):
            return None
        start, indent = text.start(stmt), text.indent_at(text.start(stmt))
        if text.text(text.offset(stmt.lineno, 0), start) != indent:
            return None
        m_text, n_text, sm_text, sn_text = (text.text(text.start(e), text.end(e)) for e in (m, n, sm, sn))  # type: ignore[arg-type]
        name = k.name + SUM_SUFFIX
        total = "total" if cast is None else f"total.to({text.text(text.start(cast), text.end(cast))})"
        kernel = SUM_KERNEL.format(triton=triton, tl=tl, name=name, c=base.id, kernel=k.name, value=total)
        inner = indent + "    "
        launch_sum = (f"{nl}{indent}{name}[({triton}.cdiv({m_text} * {n_text}, {SUM_BLOCK}),)]({nl}"
                      f"{inner}{c.id}, partial, {m_text}, {n_text}, {sm_text}, {sn_text}, partial.stride(0), "
                      f"partial.stride(1), partial.stride(2),{nl}{inner}{SPLIT_K}={SPLIT_K}, BLOCK={SUM_BLOCK},{nl}{indent})")
        keywords = ("partial_ptr=partial", "stride_pk=partial.stride(0)", "stride_pm=partial.stride(1)",
                    "stride_pn=partial.stride(2)", f"{SPLIT_K}={SPLIT_K}")
        alloc = f"partial = {torch}.empty(({SPLIT_K}, {m_text}, {n_text}), device={c.id}.device, dtype={torch}.float32)"
        return [
            Edit(text.offset(top.lineno, 0), text.offset(top.lineno, 0), kernel.replace("\n", nl) + nl + nl),
            Edit(start, start, f"{alloc}{nl}{indent}"),
            Edit(text.start(grid), text.end(grid), f"({tiles}, {SPLIT_K})"),
            *(insert_keyword(text, launch.call, kw) for kw in keywords),
            Edit(text.end(stmt), text.end(stmt), launch_sum),
        ]


def _stored(node: ast.AST) -> TypeGuard[ast.Name]:
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)


def _index_name(node: ast.AST) -> str | None:
    """`offs` of `offs`, `offs[:, None]` or `offs[None, :]`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def cast_of(value: ast.AST) -> str | None:
    """`acc` of `acc.to(dtype)`."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to"
            and isinstance(value.func.value, ast.Name) and len(value.args) == 1 and not value.keywords):
        return value.func.value.id
    return None


def _dot_update(stmt: ast.stmt) -> str | None:
    """`acc` of `acc = tl.dot(a, b, acc)` (or `acc=acc`) and of `acc += tl.dot(a, b)`."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name):
        call = stmt.value
        if isinstance(call, ast.Call) and len(call.args) == 2 and not any(kw.arg in ("acc", None) for kw in call.keywords):
            return stmt.target.id
        return None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)):
        return None
    acc, call = stmt.targets[0].id, stmt.value
    third = call.args[2] if len(call.args) == 3 else next((kw.value for kw in call.keywords if kw.arg == "acc"), None)
    return acc if isinstance(third, ast.Name) and third.id == acc else None


def simple_expression(node: ast.AST | None) -> bool:
    """A host expression the edit may write again: a name, an integer, `x.size(i)`, `x.stride(i)`, `x.shape[i]`."""
    if isinstance(node, ast.Name) or int_value(node) is not None:
        return True
    if isinstance(node, ast.Subscript):
        return (isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
                and isinstance(node.value.value, ast.Name) and int_value(node.slice) is not None)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("size", "stride")
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1 and int_value(node.args[0]) is not None
            and not node.keywords)


def stride_of(node: ast.AST | None, tensor: str, dim: int) -> bool:
    """Whether `node` is `tensor.stride(dim)`."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stride"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == tensor and len(node.args) == 1
            and int_value(node.args[0]) == dim and not node.keywords)
