"""Epilogue fusion: an elementwise kernel that the host launches on a tl.dot kernel's output, moved into the
GEMM's store. The output tile is written once, in its final form: no round trip of the intermediate tensor
through memory (written by the GEMM, read back by the second kernel) and one launch fewer.

A structural edit, offered only where the whole pattern is recognised:

    t = torch.empty((M, N), device=c.device, dtype=c.dtype)   # scratch allocated in the host function
    matmul_kernel[grid](a, b, t, M, N, K, ..., t.stride(0), t.stride(1), ...)
    leaky_relu_kernel[(triton.cdiv(M * N, BLOCK),)](t, c, M * N, slope, BLOCK=BLOCK)   # the next statement

where the GEMM stores its accumulator once, `tl.store(c_ptrs, acc[.to(dtype)], mask=...)` at
`c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn` with its rows bounded by `offs_m < M` and its
columns by `offs_n < N` (split_k.py reads the same form), the launch binds M and N to t's two dimensions and the
strides to t's own, and the second kernel is an elementwise tail over t's M·N elements (epilogue_tail.py) with a
grid that covers them. Nothing else reads or writes t. It becomes

    matmul_kernel[grid](a, b, c, M, N, K, ..., N, 1, ..., slope=slope)

    x = acc.to(c_ptr.dtype.element_ty)            # t's element type: what the second kernel loaded
    y = tl.where(x > 0, x, x * slope)             # the tail as it was
    tl.store(c_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])   # cast to c's type by the store, as before

The second kernel read t at flat offsets, and t is contiguous: element (m, n) sits at m·N + n, so the GEMM's
tile addressed with strides (N, 1) from c's base writes exactly the elements the second kernel wrote, each from
the same value rounded to t's type first. The allocation, the second launch and the second kernel (launched
nowhere else) go. Refused: t passed in by the caller (someone may read it), an intermediate of another layout or
an `empty_like` (whose strides follow its argument), a dtype the edit cannot name in the kernel, a tail that
reads another tensor (a bias), a statement between the two launches, and a GEMM whose store is inside a loop
(a persistent one: fuse first, then make it persistent).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.epilogue_tail import DTYPES, ElementwiseTail, Tail
from kernel_tui.core.proposers.transforms.knobs import Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.split_k import cast_of, simple_expression, stride_of
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, insert_argument, insert_keyword

SEPARATE = "separate kernel"
FUSED = "fused"
ALLOCATORS = ("empty", "zeros")


def describe(knob: Knob) -> str:
    return (f"elementwise epilogue {knob.where} fused into the GEMM {knob.label} "
            "(applied to the tile before its store: no round trip through memory, one launch fewer)")


class EpilogueFusion(ElementwiseTail):
    """Mixed into Analysis: reads its kernels and launches, tree walks and name resolution, and split_k.py's
    reading of a GEMM's store (`_store_address`, `_extents`)."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    tree: ast.Module | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    consts: dict[str, ast.Constant]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis and SplitK
        def _names(self, node: ast.AST) -> set[str]: ...
        def _store_address(self, k: Kernel, store: ast.Call) -> tuple[ast.Name, ast.Name, ast.Name, str, str] | None: ...
        def _extents(self, k: Kernel, mask: ast.AST, rows: str, cols: str) -> tuple[str, str] | None: ...

    def _epilogue_knobs(self) -> None:
        for k in self.kernels.values():
            kid = f"kernel:{k.name}:epilogue"
            if self._fused_epilogue(k):  # applied already (or written so): say what the kernel does
                self.knobs[kid] = Knob(id=kid, kind="epilogue", label=k.name, value=FUSED, domain=(FUSED,),
                                       numeric=False)
                continue
            found = self._epilogue_plan(k)
            if found is None:
                continue
            tail, plan = found
            # where: the elementwise kernel, for the change text
            self.knobs[kid] = Knob(id=kid, kind="epilogue", label=k.name, value=SEPARATE, domain=(SEPARATE, FUSED),
                                   numeric=False, where=tail)

            def edits(new: int | str, plan: list[Edit] = plan) -> list[Edit]:
                return plan  # one structural edit, whatever the new value

            self._editors[kid] = edits

    def _fused_epilogue(self, k: Kernel) -> bool:
        """Whether a tl.dot kernel's one store stores a value computed from its accumulator (not the accumulator
        itself or casts of it)."""
        stores = [c for c in self._walk(k.node) if isinstance(c, ast.Call) and self._is_tl(c.func, "store")]
        if not k.dots or len(stores) != 1 or len(stores[0].args) < 2 or not isinstance(stores[0].args[1], ast.Name):
            return False
        defs: dict[str, list[ast.expr]] = {}
        accs: set[str] = set()
        for n in self._walk(k.node):
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in (t for t in targets if isinstance(t, ast.Name)):
                    defs.setdefault(t.id, []).append(n.value)
                    if isinstance(n.value, ast.Call) and self._is_tl(n.value.func, "dot"):
                        accs.add(t.id)
        value = stores[0].args[1].id
        if value in accs or len(defs.get(value, [])) != 1:
            return False
        reached: set[str] = set()
        todo = [value]
        while todo:  # the names the stored value is computed from, through the kernel's assignments
            name = todo.pop()
            if name not in reached:
                reached.add(name)
                todo += [x for e in defs.get(name, []) if name not in accs for x in self._names(e)]
        computed = any(not (isinstance(e, ast.Name) or cast_of(e)) for x in reached - accs for e in defs.get(x, []))
        return bool(reached & accs) and computed

    def _epilogue_plan(self, k: Kernel) -> tuple[str, list[Edit]] | None:
        """The elementwise kernel's name and the edits that fuse it into `k`, or None where the pattern is not
        all there."""
        if not k.dots or k.tuned or self.tl is None or self.tree is None:
            return None
        gemm = self._gemm_store(k)
        launches = [ln for ln in self.launches if ln.kernel is k]
        if gemm is None or len(launches) != 1 or launches[0].has_star or launches[0].host not in self.tree.body:
            return None
        launch = launches[0]
        stmt, store, acc, address, extents = gemm
        base, s_m, s_n, _, _ = address
        c = launch.bindings.get(base.id)
        m, n = (launch.bindings.get(x) for x in extents)
        if not isinstance(c, ast.Name) or not (stride_of(launch.bindings.get(s_m.id), c.id, 0)
                                               and stride_of(launch.bindings.get(s_n.id), c.id, 1)):
            return None
        host = self._epilogue_host(launch, c.id, m, n)
        if host is None:
            return None
        second, alloc, tdtype = host
        tail = self._tail(second.kernel)
        if tail is None or not self._tail_launch(second, tail, c.id, m, n):
            return None
        out = second.bindings.get(tail.dst)
        taken = {x.arg for x in self._walk(k.node) if isinstance(x, ast.arg)} | self._names(k.node)
        if (not isinstance(out, ast.Name) or tail.names & taken or out.id in self._names(launch.call)
                or out.id in self._rebound(launch.host)):
            return None
        if tdtype is None:  # t had c's type: the GEMM's output pointer is c's now
            tdtype = f"{base.id}.dtype.element_ty"
        kernel = self._epilogue_kernel_edits(k, stmt, store, acc, tail, base.id, tdtype)
        host_edits = self._epilogue_host_edits(launch, second, alloc, tail, out.id, (base.id, s_m.id, s_n.id, n))
        if kernel is None or host_edits is None:
            return None
        return tail.kernel.name, kernel + host_edits

    def _gemm_store(self, k: Kernel) -> tuple[ast.Expr, ast.Call, str, tuple[ast.Name, ast.Name, ast.Name, str, str],
                                              tuple[str, str]] | None:
        """The GEMM's one store of its accumulator (`acc` or `acc.to(dtype)`), a statement of its own: the
        statement, the call, the accumulator, the address (split_k.py's reading) and M and N of its mask."""
        stores = [c for c in self._walk(k.node) if isinstance(c, ast.Call) and self._is_tl(c.func, "store")]
        if len(stores) != 1 or len(stores[0].args) != 2 or [kw.arg for kw in stores[0].keywords] != ["mask"]:
            return None
        store = stores[0]
        stmt = next((s for s in k.node.body if isinstance(s, ast.Expr) and s.value is store), None)
        value = store.args[1]
        acc = value.id if isinstance(value, ast.Name) else cast_of(value)
        accs = {_target(n) for n in self._walk(k.node) if isinstance(n, (ast.Assign, ast.AugAssign))
                and isinstance(n.value, ast.Call) and self._is_tl(n.value.func, "dot")}
        if stmt is None or acc is None or acc not in accs:
            return None
        address = self._store_address(k, store)
        extents = self._extents(k, store.keywords[0].value, *address[3:]) if address is not None else None
        if address is None or extents is None:
            return None
        return stmt, store, acc, address, extents

    def _epilogue_host(self, launch: Launch, t: str, m: ast.AST | None,
                       n: ast.AST | None) -> tuple[Launch, ast.Assign, str | None] | None:
        """The launch right after the GEMM's, t's allocation (a contiguous M×N tensor made in the host function
        and read by nothing but the two launches) and t's element type in the kernel (None: the second kernel's
        output's, which the fused GEMM then stores to)."""
        host = launch.host
        index = next((i for i, s in enumerate(host.body) if isinstance(s, ast.Expr) and s.value is launch.call), None)
        if index is None or index + 1 >= len(host.body) or not simple_expression(m) or not simple_expression(n):
            return None
        follow = host.body[index + 1]
        second = next((ln for ln in self.launches if isinstance(follow, ast.Expr) and ln.call is follow.value), None)
        allocs = [s for s in host.body[:index] if isinstance(s, ast.Assign) and _target(s) == t]
        if second is None or second.has_star or second.kernel is launch.kernel or len(allocs) != 1:
            return None
        if len([ln for ln in self.launches if ln.kernel is second.kernel]) != 1 or t in self._rebound(host, params=True):
            return None
        alloc = allocs[0]
        call = alloc.value
        if not (isinstance(call, ast.Call) and self._resolve(call.func) in {f"torch.{a}" for a in ALLOCATORS}):
            return None
        dims = call.args[0].elts if len(call.args) == 1 and isinstance(call.args[0], ast.Tuple) else call.args
        keywords = {kw.arg: kw.value for kw in call.keywords}
        if [ast.dump(d) for d in dims] != [ast.dump(x) for x in (m, n) if x is not None] or len(dims) != 2:
            return None
        if not set(keywords) <= {"device", "dtype"} or "dtype" not in keywords:
            return None
        if self._names(alloc.value) & self._rebound(host):  # M and N as the GEMM's launch reads them
            return None
        if not self._only_launched(host, t, launch, second):
            return None
        dtype = keywords["dtype"]
        out = self._tail_output_dtype(second, dtype)
        resolved = self._resolve(dtype) or ""
        if out:
            return second, alloc, None
        if resolved.startswith("torch.") and resolved[6:] in DTYPES:
            return second, alloc, f"{self.tl}.{resolved[6:]}"
        return None

    def _only_launched(self, host: ast.FunctionDef, t: str, launch: Launch, second: Launch) -> bool:
        """Whether the host reads t only as the two launches pass it: t and its two strides at the GEMM's, t and
        `t.numel()` at the second's."""
        def reads(node: ast.AST) -> list[ast.Name]:
            return [x for x in self._walk(node) if isinstance(x, ast.Name) and x.id == t and isinstance(x.ctx, ast.Load)]

        numel = {id(x.value) for x in self._walk(second.call) if isinstance(x, ast.Attribute) and x.attr == "numel"}
        passed = [x for x in reads(second.call) if id(x) not in numel]
        return len(reads(host)) == 3 + len(reads(second.call)) and len(reads(launch.call)) == 3 and len(passed) == 1

    def _tail_output_dtype(self, second: Launch, dtype: ast.AST) -> bool:
        """Whether t's dtype is written `out.dtype`, out the tensor the second launch passes for its tail's store."""
        if not (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype" and isinstance(dtype.value, ast.Name)):
            return False
        tail = self._tail(second.kernel)
        out = second.bindings.get(tail.dst) if tail is not None else None
        return isinstance(out, ast.Name) and out.id == dtype.value.id

    def _rebound(self, host: ast.FunctionDef, *, params: bool = False) -> set[str]:
        """Names the host function assigns more than once (or at all, for its parameters), with `params` its
        parameters besides."""
        counts: dict[str, int] = {}
        for x in self._walk(host):
            if isinstance(x, ast.Name) and isinstance(x.ctx, (ast.Store, ast.Del)):
                counts[x.id] = counts.get(x.id, 0) + 1
        names = {p.arg for p in self._walk(host.args) if isinstance(p, ast.arg)}
        return {x for x, c in counts.items() if c > 1 or x in names} | (names if params else set())

    def _tail_launch(self, second: Launch, tail: Tail, t: str, m: ast.AST | None, n: ast.AST | None) -> bool:
        """The second launch reads t, over its M·N elements (written `M * N` or `t.numel()`), with a grid
        `(triton.cdiv(M * N, BLOCK),)` that covers them, and passes each scalar the tail reads as a name the host
        never rebinds or a number."""
        src, extent, block = (second.bindings.get(x) for x in (tail.src, tail.extent, tail.block))
        if not (isinstance(src, ast.Name) and src.id == t) or extent is None or block is None or m is None or n is None:
            return False
        product = (isinstance(extent, ast.BinOp) and isinstance(extent.op, ast.Mult)
                   and sorted(map(ast.dump, (extent.left, extent.right))) == sorted(map(ast.dump, (m, n))))
        numel = (isinstance(extent, ast.Call) and isinstance(extent.func, ast.Attribute) and extent.func.attr == "numel"
                 and isinstance(extent.func.value, ast.Name) and extent.func.value.id == t and not extent.args)
        if not (product or numel):
            return False
        grid = second.call.func.slice if isinstance(second.call.func, ast.Subscript) else None
        if isinstance(grid, ast.Name):
            binds = [s.value for s in second.host.body if isinstance(s, ast.Assign) and _target(s) == grid.id]
            grid = binds[0] if len(binds) == 1 and grid.id not in self._rebound(second.host, params=True) else None
        cdiv = grid.elts[0] if isinstance(grid, ast.Tuple) and len(grid.elts) == 1 else None
        if not (isinstance(cdiv, ast.Call) and self._resolve(cdiv.func) == "triton.cdiv" and len(cdiv.args) == 2
                and ast.dump(cdiv.args[0]) == ast.dump(extent) and ast.dump(cdiv.args[1]) == ast.dump(block)):
            return False
        rebound = self._rebound(second.host)
        for p in tail.scalars:
            bound = second.bindings.get(p)
            number = bound.operand if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub) else bound
            if not ((isinstance(bound, ast.Name) and bound.id not in rebound)
                    or (isinstance(number, ast.Constant) and type(number.value) in (int, float))):
                return False
        return True

    def _epilogue_kernel_edits(self, k: Kernel, stmt: ast.Expr, store: ast.Call, acc: str, tail: Tail, c: str,
                               tdtype: str) -> list[Edit] | None:
        """The GEMM's side: the tail's scalars as parameters, the tail before the store, its value stored."""
        text, nl = self.text, self.text.newline
        start = text.start(stmt)
        indent = text.indent_at(start)
        a = k.node.args
        last = (a.posonlyargs + a.args)[-1] if a.posonlyargs + a.args else None
        close = text.skip_to_close(text.end(last)) if last is not None else None
        if text.text(text.offset(stmt.lineno, 0), start) != indent or last is None or close is None:
            return None
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults:
            return None
        value = store.args[1]
        cast = value.args[0] if isinstance(value, ast.Call) else None
        first = acc
        if cast is not None and not (_pointer_of(cast) == c):  # a cast to another type than t's comes first
            if not self._is_tl(cast, *DTYPES):
                return None
            first = text.text(text.start(value), text.end(value))
        dtypes = {tail.src: tdtype, tail.dst: f"{c}.dtype.element_ty"}
        load = f"{tail.x} = {first}.to({tdtype})"
        if tail.cast is not None:
            load += f".to({self._tail_text(tail.cast, tail, dtypes)})"
        lines = [load] + [self._tail_text(s, tail, dtypes) for s in tail.body]
        head = "".join(f"{line}{nl}{indent}" for line in lines)
        span = (text.start(last), text.end(last))
        return [
            *(insert_argument(text, span, close, p) for p in tail.scalars),
            Edit(start, start, head),
            Edit(text.start(value), text.end(value), self._tail_text(tail.value, tail, dtypes)),
        ]

    def _epilogue_host_edits(self, launch: Launch, second: Launch, alloc: ast.Assign, tail: Tail, out: str,
                             gemm: tuple[str, str, str, ast.AST | None]) -> list[Edit] | None:
        """The host's side: c for t at the GEMM's launch with t's strides (N, 1), the scalars passed, and t's
        allocation, the second launch and the second kernel removed."""
        text = self.text
        base, s_m, s_n, n = gemm
        stmt = next((s for s in second.host.body if isinstance(s, ast.Expr) and s.value is second.call), None)
        drops = [self._line_span(alloc), self._line_span(stmt) if stmt is not None else None,
                 self._definition_span(tail.kernel)]
        if n is None or self.tree is None:
            return None
        used = [x for x in self._walk(self.tree) if isinstance(x, ast.Name) and x.id == tail.kernel.name]
        if len(used) != 1:  # the second kernel named anywhere but at its launch
            return None
        edits = [Edit(*d, "") for d in drops if d is not None]
        if len(edits) != len(drops):
            return None
        n_text = text.text(text.start(n), text.end(n))  # a simple expression (a name, `b.shape[1]`): no parentheses
        for p, new in ((base, out), (s_m, n_text), (s_n, "1")):
            node = launch.bindings[p]
            edits.append(Edit(text.start(node), text.end(node), new))
        for p in tail.scalars:
            bound = second.bindings[p]
            edits.append(insert_keyword(text, launch.call, f"{p}={text.text(text.start(bound), text.end(bound))}"))
        grid = second.call.func.slice if isinstance(second.call.func, ast.Subscript) else None
        if isinstance(grid, ast.Name):  # a grid bound for the second launch alone goes with it
            binds = [s for s in second.host.body if isinstance(s, ast.Assign) and _target(s) == grid.id]
            reads = [x for x in self._walk(second.host) if isinstance(x, ast.Name) and x.id == grid.id]
            span = self._line_span(binds[0]) if len(binds) == 1 and len(reads) == 2 else None
            edits += [Edit(*span, "")] if span is not None else []
        return edits + self._dead_constants(second, tail)

    def _dead_constants(self, second: Launch, tail: Tail) -> list[Edit]:
        """The module constants only the second launch and kernel read (its block), each on a line of its own."""
        if self.tree is None:
            return []
        gone = {id(x) for node in (second.call, tail.kernel.node) for x in self._walk(node)}
        edits = []
        for name in sorted((self._names(second.call) & set(self.consts)) - tail.names):
            reads = [x for x in self._walk(self.tree) if isinstance(x, ast.Name) and x.id == name
                     and isinstance(x.ctx, ast.Load)]
            binds = [s for s in self.tree.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and _target(s) == name]
            span = self._line_span(binds[0]) if len(binds) == 1 else None
            if span is not None and all(id(x) in gone for x in reads):
                edits.append(Edit(*span, ""))
        return edits

    def _line_span(self, stmt: ast.stmt) -> tuple[int, int] | None:
        """The whole lines of a statement that has them to itself."""
        text = self.text
        start = text.offset(stmt.lineno, 0)
        if stmt.end_lineno is None:
            return None
        end = text.line_starts[stmt.end_lineno]
        if text.text(start, text.start(stmt)).strip() or text.text(text.end(stmt), end).strip():
            return None
        return start, end

    def _definition_span(self, k: Kernel) -> tuple[int, int] | None:
        """A kernel's definition, its decorators and the blank lines after it."""
        text = self.text
        top = k.node.decorator_list[0] if k.node.decorator_list else k.node
        start = text.offset(top.lineno, 0)
        if text.text(start, text.start(top)).strip("@ \t") or k.node.end_lineno is None:
            return None
        end = text.line_starts[k.node.end_lineno]
        while end < len(text.data) and not text.text(end, text.line_starts[text.line_of(end) + 1]).strip():
            end = text.line_starts[text.line_of(end) + 1]
        return start, end


def _target(node: ast.AST) -> str | None:
    target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
    return target.id if isinstance(target, ast.Name) else None


def _pointer_of(dtype: ast.AST) -> str | None:
    """p of `p.dtype.element_ty`."""
    if (isinstance(dtype, ast.Attribute) and dtype.attr == "element_ty" and isinstance(dtype.value, ast.Attribute)
            and dtype.value.attr == "dtype" and isinstance(dtype.value.value, ast.Name)):
        return dtype.value.value.id
    return None
