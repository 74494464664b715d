"""Sizes as compile-time constants: a kernel's integer parameters that carry a size or a stride (`ks0`,
`xnumel`, `M`, `stride_am`) annotated `tl.constexpr`, so that Triton compiles the kernel once per distinct
set of their values, as torch.compile does without dynamic shapes. Index math by a constant divisor becomes a
multiply and a shift instead of an integer division, a mask against a constant folds where the compiler can
prove it, and a stride's alignment is known. Inductor's starts are compiled with dynamic shapes, so their
index math divides by runtime sizes (`x1 = (xindex // ks0) % ks1`); the same kernels compiled statically are
what a user's torch.compile runs.

Semantics-preserving: with each value substituted the kernel computes exactly what it did; what changes is
that a new value means a new compile (a task has a few shapes, each compiled before it is timed). One
difference of types remains: Triton types a constant from 2**31 to 2**32 - 1 as unsigned 32-bit, a runtime
argument of that size as 64-bit, so 32-bit index math with such a size could wrap where it did not; the
correctness check at every shape of the task judges the result, as it does every candidate's.

Offered per kernel, all its size parameters at once, where
- the kernel is neither autotuned nor given @triton.jit options, and is launched, only with plain arguments,
  never from inside a loop (a value that changed per launch would compile per launch);
- it has no tl.dot: a GEMM's time is in its multiply-adds, not its index math, and its structural moves (the
  unmasked K loop, split-K, TMA loads, the launch order) read its sizes as runtime parameters;
- a parameter is a size: every launch binds it to an integer expression of the host (an int literal, a
  tensor's `.shape[i]`, `.size(i)`, `.stride(i)` or `.numel()`, a host parameter annotated `int`, or a name the
  host assigns from those), or to an unannotated host parameter; and in the kernel it is read, never assigned,
  never an addend of a load's or store's pointer (or of a name that becomes one), never read for an attribute
  (`x_ptr.dtype`), and never passed to a function other than Triton's and `min`, `max`, `range`.
The move is one-way: once the sizes are constants, the knob stays to say so and offers nothing.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import Kernel, Knob, Launch
from kernel_tui.core.proposers.transforms.text import Edit, SourceText

RUNTIME = "runtime"
CONSTANT = "compile-time"
KIND = "sizes"
# Triton's operations whose first argument is a pointer (or a tensor's base address)
POINTER_OPS = {"load", "store", "make_block_ptr", "make_tensor_descriptor", "atomic_add", "atomic_and", "atomic_cas",
               "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor"}
# calls through which a pointer stays a pointer (its first argument, or the object a method is called on)
POINTER_PRESERVING = {"broadcast_to", "reshape", "view", "expand_dims", "multiple_of", "max_contiguous", "advance",
                      "to"}
SIZE_METHODS = {"size", "stride", "numel", "dim", "element_size"}
PLAIN_CALLS = {"min", "max", "range", "len", "int"}


class SizeConstants:
    """Mixed into Analysis: reads its kernels, launches, module constants, tree walks and name resolution."""

    text: SourceText
    tl: str | None
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    consts: dict[str, ast.Constant]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis and its other mixins
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _stores(self, node: ast.AST) -> Counter[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _resolve(self, node: ast.AST) -> str | None: ...
        def _rebound(self, host: ast.FunctionDef, *, params: bool = False) -> set[str]: ...  # EpilogueFusion

    def _size_knobs(self) -> None:
        if self.tl is None:
            return
        for k in self.kernels.values():
            launches = [ln for ln in self.launches if ln.kernel is k]
            if k.tuned or k.has_dot or not launches or any(ln.has_star or self._in_loop(ln) for ln in launches):
                continue
            if any(isinstance(d, ast.Call) for d in k.node.decorator_list):  # @triton.jit(do_not_specialize=...)
                continue
            kid = f"kernel:{k.name}:{KIND}"
            runtime = self._runtime_sizes(k, launches)
            if runtime:
                self.knobs[kid] = Knob(id=kid, kind=KIND, label=k.name, value=RUNTIME, domain=(RUNTIME, CONSTANT),
                                       numeric=False, where=f" ({', '.join(runtime)})", kernels=frozenset({k.name}))

                def edits(new: int | str, k: Kernel = k, runtime: list[str] = runtime) -> list[Edit]:
                    return self._constexpr_edits(k, runtime)

                self._editors[kid] = edits
            elif constant := [p for p in k.params if p in k.constexpr and "shape" not in k.roles.get(p, set())
                              and self._bound_to_sizes(p, launches)]:
                self.knobs[kid] = Knob(id=kid, kind=KIND, label=k.name, value=CONSTANT, domain=(CONSTANT,),
                                       numeric=False, where=f" ({', '.join(constant)})", kernels=frozenset({k.name}))

    def _in_loop(self, launch: Launch) -> bool:
        """Whether the launch sits inside a loop or a comprehension of its host."""
        for n in self._walk(launch.host):
            if isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                if any(launch.call in self._walk(s) for s in [*n.body, *n.orelse]):
                    return True
            elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                if launch.call in self._walk(n):
                    return True
        return False

    def _runtime_sizes(self, k: Kernel, launches: list[Launch]) -> list[str]:
        a = k.node.args
        if a.vararg or a.kwarg:
            return []
        not_sizes = self._pointers(k) | self._assigned(k) | self._passed_on(k)
        read = self._names(k.node)
        out = []
        for p in k.params:
            if p in k.constexpr or p in not_sizes or p not in read:
                continue
            if all(p in ln.bindings and self._host_int(ln.bindings[p], ln.host) is not False for ln in launches):
                out.append(p)
        return out

    def _bound_to_sizes(self, p: str, launches: list[Launch]) -> bool:
        """A constexpr parameter every launch binds to a size (not a block or a flag): the move made already."""
        return all(p in ln.bindings and self._host_int(ln.bindings[p], ln.host, strict=True) for ln in launches)

    def _pointers(self, k: Kernel) -> set[str]:
        """Parameters used as pointers: an addend of a memory operation's pointer, through the kernel's
        assignments, or read for an attribute."""
        defs: dict[str, list[ast.expr]] = {}
        for n in self._walk(k.node):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        defs.setdefault(t.id, []).append(n.value)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and isinstance(n.op, (ast.Add, ast.Sub)):
                defs.setdefault(n.target.id, []).append(n.value)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                defs.setdefault(n.target.id, []).append(n.value)

        def addends(expr: ast.AST, seen: set[str]) -> set[str]:
            if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
                return addends(expr.left, seen) | addends(expr.right, seen)
            if isinstance(expr, ast.Name):
                if expr.id in seen:
                    return set()
                seen.add(expr.id)
                return {expr.id}.union(*(addends(v, seen) for v in defs.get(expr.id, [])))
            if isinstance(expr, ast.IfExp):
                return addends(expr.body, seen) | addends(expr.orelse, seen)
            if isinstance(expr, ast.Subscript):
                return addends(expr.value, seen)
            if isinstance(expr, ast.Call):
                name = expr.func.attr if isinstance(expr.func, ast.Attribute) else None
                if self._is_tl(expr.func, *POINTER_PRESERVING) and expr.args:
                    return addends(expr.args[0], seen)
                if isinstance(expr.func, ast.Attribute) and name in POINTER_PRESERVING:
                    return addends(expr.func.value, seen)
            return set()

        out: set[str] = set()
        for n in self._walk(k.node):
            if isinstance(n, ast.Call) and self._is_tl(n.func, *POINTER_OPS):
                first = n.args[0] if n.args else next(
                    (kw.value for kw in n.keywords if kw.arg in ("pointer", "base")), None)
                if first is not None:
                    out |= addends(first, set())
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in k.params:
                out.add(n.value.id)
        return out & set(k.params)

    def _assigned(self, k: Kernel) -> set[str]:
        return set(self._stores(k.node))

    def _passed_on(self, k: Kernel) -> set[str]:
        """Names passed to a function that is neither Triton's nor a plain builtin (a @triton.jit helper may
        take a pointer, and its use is not read here)."""
        out: set[str] = set()
        for n in self._walk(k.node):
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Name) and n.func.id in PLAIN_CALLS:
                continue
            if (self._resolve(n.func) or "").startswith("triton."):
                continue
            if isinstance(n.func, ast.Attribute) and n.func.attr in POINTER_PRESERVING:
                continue
            for arg in [*n.args, *(kw.value for kw in n.keywords)]:
                out |= self._names(arg)
        return out

    def _host_int(self, expr: ast.AST, host: ast.FunctionDef, *, strict: bool = False,
                  seen: frozenset[str] = frozenset()) -> bool | None:
        """Whether the host expression is an integer size: True, False, or None where only the kernel's use
        can tell (a host parameter without an annotation). `strict` (the move made already: which constexpr
        parameters are sizes): only what a tensor's sizes give, no literal, module constant or block."""
        def sub(e: ast.AST) -> bool | None:
            return self._host_int(e, host, strict=strict, seen=seen)

        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, int) and not isinstance(expr.value, bool) and not strict
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                                                ast.LShift, ast.RShift)):
            left, right = sub(expr.left), sub(expr.right)
            return False if False in (left, right) else None if None in (left, right) else True
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
            return True
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in SIZE_METHODS:
                return True
            if isinstance(func, ast.Attribute) and func.attr in ("cdiv", "next_power_of_2"):
                return not strict
            if isinstance(func, ast.Name) and func.id == "len":
                return True
            if isinstance(func, ast.Name) and func.id in ("min", "max", "int"):  # of sizes, a size
                found = [sub(a) for a in expr.args]
                return False if False in found or not found else None if None in found else True
            return False
        if isinstance(expr, ast.Name):
            name = expr.id
            if name in self.consts:
                return not strict
            params = {a.arg: a for a in host.args.posonlyargs + host.args.args + host.args.kwonlyargs}
            if name in params:
                ann = params[name].annotation
                if isinstance(ann, ast.Name) and ann.id == "int":
                    return True
                return False if ann is not None or strict else None
            if name in seen:
                return False
            value = self._host_value(host, name)
            if not isinstance(value, ast.expr):
                return value is _FROM_SHAPE
            return self._host_int(value, host, strict=strict, seen=seen | {name})
        return False

    def _host_value(self, host: ast.FunctionDef, name: str) -> ast.expr | object | None:
        """The one value the host assigns to `name` by `=` (_FROM_SHAPE for a tuple unpacked from `x.shape`); None
        where it stores it any other way or more than once (a loop's variable, `+=`: epilogue's `_rebound`)."""
        if name in self._rebound(host):
            return None
        for n in self._walk(host):
            if not isinstance(n, ast.Assign):
                continue
            for t in n.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    return n.value
                if isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name for e in t.elts):
                    return _FROM_SHAPE if isinstance(n.value, ast.Attribute) and n.value.attr == "shape" else None
        return None

    def _constexpr_edits(self, k: Kernel, params: list[str]) -> list[Edit]:
        args = {a.arg: a for a in k.node.args.posonlyargs + k.node.args.args}
        edits = []
        for p in params:
            arg = args[p]
            if arg.annotation is None:
                end = self.text.end(arg)
                edits.append(Edit(end, end, f": {self.tl}.constexpr"))
            else:
                edits.append(Edit(self.text.start(arg.annotation), self.text.end(arg.annotation), f"{self.tl}.constexpr"))
        return edits


_FROM_SHAPE = object()  # a host name unpacked from a tensor's shape (`M, K = a.shape`)


def describe(knob: Knob, new: int | str, kernels: int) -> str:
    """The move's text: which sizes become compile-time constants, and what that costs."""
    where = f" of {knob.label}" if kernels > 1 else ""
    return f"sizes{where} as compile-time constants{knob.where}: compiled once per shape, index math by constants"
