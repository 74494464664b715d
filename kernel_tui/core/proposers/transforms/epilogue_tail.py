"""The elementwise kernel an epilogue fusion (epilogue.py) moves into a GEMM: recognised in one strict form, and
its tail written again for the GEMM's context.

    pid = tl.program_id(axis=0)                        # the only program id read
    offs = pid * BLOCK + tl.arange(0, BLOCK)           # BLOCK a constexpr parameter
    mask = offs < n                                    # optional (the masks may say `offs < n` in place)
    x = tl.load(x_ptr + offs, mask=mask)               # the kernel's only load, optionally `.to(dtype)`
    y = tl.where(x > 0, x, x * slope)                  # any number of assignments of a pure expression
    tl.store(y_ptr + offs, y, mask=mask)               # the kernel's only store, its last statement

A pure expression reads x, the names the tail bound before it, runtime scalar parameters (slope), module-level
names and numbers; it calls only elementwise `tl` functions and `.to(dtype)`, and names dtypes as `tl.float32`,
`x.dtype` or `x_ptr.dtype.element_ty`. No other tensor is read: a per-column bias would need its own index
mapping, and is refused rather than guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import Kernel
from kernel_tui.core.proposers.transforms.names import int_value
from kernel_tui.core.proposers.transforms.text import SourceText

# tl functions computing each element from the same element of their operands (and scalars)
ELEMENTWISE = ("maximum", "minimum", "where", "exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "abs",
               "sigmoid", "cos", "sin", "erf", "fma", "clamp", "floor", "ceil", "cast", "div_rn", "fdiv")
DTYPES = ("float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "int8", "int16", "int32", "int64")


@dataclass
class Tail:
    """What a fusion needs of the elementwise kernel: its pointers, its extent and block, the load, the
    statements after it and the value stored."""

    kernel: Kernel
    src: str  # the pointer parameter loaded from (the GEMM's output)
    dst: str  # the pointer parameter stored to
    extent: str  # n of `offs < n`
    block: str  # the constexpr block of `offs`
    x: str  # the name the load binds
    cast: ast.expr | None  # E of `tl.load(...).to(E)`
    body: list[ast.Assign]  # the statements between the load and the store
    value: ast.expr  # what the store stores
    scalars: list[str] = field(default_factory=list)  # runtime parameters the tail reads, in order
    names: set[str] = field(default_factory=set)  # every name the tail binds or reads but tl's


class ElementwiseTail:
    """Mixed into Analysis: reads its kernels, tree walks and name resolution."""

    text: SourceText
    tl: str | None
    tree: ast.Module | None

    if TYPE_CHECKING:  # provided by Analysis
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _resolve(self, node: ast.AST) -> str | None: ...

    def _tail(self, k: Kernel) -> Tail | None:
        """The tail of an elementwise kernel of the recognised form, or None."""
        a = k.node.args
        if k.tuned or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or self.tl is None:
            return None
        body = _without_docstring(k.node.body)
        calls = [c for c in self._walk(k.node) if isinstance(c, ast.Call)]
        if len([c for c in calls if self._is_tl(c.func, "program_id", "num_programs")]) != 1:
            return None
        if len([c for c in calls if self._is_tl(c.func, "load")]) != 1 or len(body) < 4:
            return None
        *head, last = body
        assigns = [s for s in head if isinstance(s, ast.Assign) and _assign(s) is not None]
        if len(assigns) != len(head) or not isinstance(last, ast.Expr):
            return None
        targets = [_assign(s) for s in assigns]
        if len(set(targets)) != len(targets) or set(targets) & set(k.params):
            return None
        runtime = [p for p in k.params if p not in k.constexpr]
        pid, offs, mask = assigns[0], assigns[1], assigns[2]
        if not (isinstance(pid.value, ast.Call) and self._is_tl(pid.value.func, "program_id")
                and _axis0(pid.value)):
            return None
        block = self._offsets_block(offs.value, _assign(pid) or "", k.constexpr)
        offs_name = _assign(offs) or ""
        extent = _bound(mask.value, offs_name, runtime)
        masks: set[str] = set()  # the masks a load and the store may name: `mask` or `offs < n` (once known)
        if extent is not None:
            masks = {ast.dump(mask.value), ast.dump(ast.Name(id=_assign(mask) or "", ctx=ast.Load()))}
        rest = assigns[3:] if extent is not None else assigns[2:]
        if block is None or not rest or not isinstance(last.value, ast.Call):
            return None
        load = self._tail_load(rest[0], offs_name, runtime, masks)
        store = self._tail_store(last.value, offs_name, runtime, masks)
        if load is None or store is None:
            return None
        src, x, cast, load_mask = load
        dst, value, store_mask = store
        if extent is None:  # no mask statement: both masks say `offs < n` in place
            extent = _bound(load_mask, offs_name, runtime)
            if extent is None or ast.dump(load_mask) != ast.dump(store_mask):
                return None
        if src == dst:
            return None
        tail = Tail(kernel=k, src=src, dst=dst, extent=extent, block=block, x=x, cast=cast, body=rest[1:], value=value)
        return tail if self._tail_pure(tail, [p for p in runtime if p not in (src, dst)]) else None

    def _offsets_block(self, value: ast.expr, pid: str, constexpr: set[str]) -> str | None:
        """BLOCK of `pid * BLOCK + tl.arange(0, BLOCK)` (in either order, either product)."""
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
            return None
        for start, arange in ((value.left, value.right), (value.right, value.left)):
            if not (isinstance(arange, ast.Call) and self._is_tl(arange.func, "arange") and len(arange.args) == 2
                    and int_value(arange.args[0]) == 0 and isinstance(arange.args[1], ast.Name)
                    and not arange.keywords):
                continue
            block = arange.args[1].id
            if (isinstance(start, ast.BinOp) and isinstance(start.op, ast.Mult) and block in constexpr
                    and {_name(start.left), _name(start.right)} == {pid, block}):
                return block
        return None

    def _tail_load(self, stmt: ast.Assign, offs: str, runtime: list[str],
                   masks: set[str]) -> tuple[str, str, ast.expr | None, ast.expr] | None:
        """`x = tl.load(x_ptr + offs, mask=...)` (or `.to(E)` of it): x_ptr, x, E and the mask."""
        value: ast.expr = stmt.value
        cast: ast.expr | None = None
        if (isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr == "to" and len(stmt.value.args) == 1 and not stmt.value.keywords):
            value, cast = stmt.value.func.value, stmt.value.args[0]
        call = value if isinstance(value, ast.Call) and self._is_tl(value.func, "load") else None
        if call is None:
            return None
        args: dict[str | None, ast.expr] = {**dict(zip(("pointer", "mask", "other"), call.args)),
                                            **{kw.arg: kw.value for kw in call.keywords}}
        if len(call.args) > 3 or not set(args) <= {"pointer", "mask", "other", "eviction_policy", "cache_modifier"}:
            return None
        src, mask = _offset_base(args.get("pointer"), offs, runtime), args.get("mask")
        if src is None or mask is None or (masks and ast.dump(mask) not in masks):
            return None
        return src, _assign(stmt) or "", cast, mask

    def _tail_store(self, store: ast.Call, offs: str, runtime: list[str],
                    masks: set[str]) -> tuple[str, ast.expr, ast.expr] | None:
        """`tl.store(y_ptr + offs, value, mask=...)`: y_ptr, the value and the mask."""
        if not self._is_tl(store.func, "store") or len(store.args) not in (2, 3):
            return None
        args: dict[str | None, ast.expr] = {**dict(zip(("pointer", "value", "mask"), store.args)),
                                            **{kw.arg: kw.value for kw in store.keywords}}
        if set(args) != {"pointer", "value", "mask"}:
            return None
        dst, mask = _offset_base(args["pointer"], offs, runtime), args["mask"]
        if dst is None or (masks and ast.dump(mask) not in masks):
            return None
        return dst, args["value"], mask

    def _tail_pure(self, tail: Tail, scalars: list[str]) -> bool:
        """Whether every expression after the load is pure (the module docstring's sense); notes the scalars
        read and every name the tail binds or reads."""
        module = self._module_names()
        bound = {tail.x}
        read: set[str] = set()
        casts = [tail.cast] if tail.cast is not None else []
        if not all(self._dtype(c, tail, bound, read) for c in casts):
            return False
        for stmt in tail.body:
            if not self._pure(stmt.value, tail, bound | set(scalars) | module, read):
                return False
            bound.add(_assign(stmt) or "")
        if not self._pure(tail.value, tail, bound | set(scalars) | module, read):
            return False
        tail.scalars = [p for p in scalars if p in read]
        tail.names = bound | read
        return True

    def _module_names(self) -> set[str]:
        """Names bound once at the module's top level by a plain assignment (constants a kernel may read)."""
        if self.tree is None:
            return set()
        names = [_assign(s) if isinstance(s, ast.Assign) else _name(s.target) for s in self.tree.body
                 if isinstance(s, (ast.Assign, ast.AnnAssign))]
        return {n for n in names if n is not None and names.count(n) == 1}

    def _pure(self, node: ast.expr, tail: Tail, allowed: set[str], read: set[str]) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float, bool)
        if isinstance(node, ast.Name):
            read.add(node.id)
            return node.id in allowed
        if isinstance(node, ast.BinOp):
            return self._pure(node.left, tail, allowed, read) and self._pure(node.right, tail, allowed, read)
        if isinstance(node, ast.UnaryOp):
            return self._pure(node.operand, tail, allowed, read)
        if isinstance(node, ast.Compare):
            return all(self._pure(x, tail, allowed, read) for x in (node.left, *node.comparators))
        if not isinstance(node, ast.Call) or node.keywords:
            return self._dtype(node, tail, allowed, read)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "to" and len(node.args) == 1:
            return self._pure(func.value, tail, allowed, read) and self._dtype(node.args[0], tail, allowed, read)
        return self._is_tl(func, *ELEMENTWISE) and all(self._pure(x, tail, allowed, read) for x in node.args)

    def _dtype(self, node: ast.expr, tail: Tail, allowed: set[str], read: set[str]) -> bool:
        """`tl.float32`, `x.dtype` (x bound by the tail) or `x_ptr.dtype.element_ty` (either pointer)."""
        if self._is_tl(node, *DTYPES):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
            read.add(node.value.id)
            return node.value.id in allowed and node.value.id not in tail.kernel.params
        return _pointer_dtype(node) in (tail.src, tail.dst)

    def _tail_text(self, node: ast.AST, tail: Tail, dtypes: dict[str, str]) -> str:
        """The source of `node` with each `x_ptr.dtype.element_ty` written as `dtypes` says for its pointer."""
        text = self.text
        start, end = text.start(node), text.end(node)
        spans = sorted((text.start(n), text.end(n), dtypes[p]) for n in self._walk(node)
                       if (p := _pointer_dtype(n)) in (tail.src, tail.dst))
        out, at = [], start
        for s, e, new in spans:
            out += [text.text(at, s), new]
            at = e
        return "".join(out) + text.text(at, end)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def _assign(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _axis0(call: ast.Call) -> bool:
    return (len(call.args) == 1 and int_value(call.args[0]) == 0 and not call.keywords) or (
        not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "axis"
        and int_value(call.keywords[0].value) == 0)


def _bound(mask: ast.AST, offs: str, runtime: list[str]) -> str | None:
    """n of `offs < n`, n a runtime parameter."""
    if (isinstance(mask, ast.Compare) and len(mask.ops) == 1 and isinstance(mask.ops[0], ast.Lt)
            and _name(mask.left) == offs and _name(mask.comparators[0]) in runtime):
        return _name(mask.comparators[0])
    return None


def _offset_base(pointer: ast.AST | None, offs: str, runtime: list[str]) -> str | None:
    """p of `p + offs` (or `offs + p`), p a runtime parameter."""
    if not (isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add)):
        return None
    names = (_name(pointer.left), _name(pointer.right))
    if names[1] == offs and names[0] in runtime:
        return names[0]
    if names[0] == offs and names[1] in runtime:
        return names[1]
    return None


def _pointer_dtype(node: ast.AST) -> str | None:
    """p of `p.dtype.element_ty`."""
    if (isinstance(node, ast.Attribute) and node.attr == "element_ty" and isinstance(node.value, ast.Attribute)
            and node.value.attr == "dtype" and isinstance(node.value.value, ast.Name)):
        return node.value.value.id
    return None
