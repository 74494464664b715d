"""Read the module torch.compile (Inductor) writes: its Triton kernels and what its `call(args)` does, in order.

The module is Python: a kernel is `name = async_compile.triton('name', '''<kernel module>''', device_str=...)`,
and `call` (a plain function in older torch, a method of `Runner` in newer) unpacks the graph's arguments, binds
the size symbols, checks the inputs' sizes and strides, allocates buffers, launches kernels
(`kernel.run(args..., stream=...)`, or with a `grid=grid(...)` keyword in older torch), calls library kernels
(`extern_kernels.*`, `aten.*`) and returns a tuple of buffers. Everything is read with `ast`, the kernel
bodies included; nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


class Refusal(ValueError):
    """The rewrite cannot give a Triton start: one line saying what stays eager and why."""


HEURISTIC_KINDS = ("pointwise", "reduction", "persistent_reduction", "template", "foreach", "split_scan",
                   "cooperative_reduction", "user_autotune")
ALLOCATORS = ("empty_strided_cuda", "empty_strided_cpu", "empty_strided_xpu", "empty_strided", "empty_strided_mtia")


@dataclass(frozen=True)
class Kernel:
    """One Triton kernel of the module, as Inductor wrote it."""

    name: str
    source: str  # the kernel's own module: imports, set_driver_to_cpu(), the decorated function
    heuristic: str  # the triton_heuristics decorator: pointwise, reduction, persistent_reduction, template, ...
    size_hints: dict[str, int]
    signature: dict[str, str]  # triton_meta's: parameter -> '*fp32', 'i32', 'constexpr'
    params: tuple[str, ...]  # the def's parameters, in order
    constexprs: tuple[str, ...]  # those annotated tl.constexpr (XBLOCK, R0_BLOCK, ...): not passed to run()
    grid_type: str | None = None  # inductor_meta's 'grid_type' (Grid1D, Grid2D, ...) where recorded
    grid_args: int = 0  # a template's run() takes its grid after its parameters (inductor_meta's extra args)
    warps_stages: tuple[int, int] | None = None  # a template's decorator fixes its num_warps and num_stages

    @property
    def runtime_params(self) -> tuple[str, ...]:
        return tuple(p for p in self.params if p not in self.constexprs)


@dataclass(frozen=True)
class Unpack:
    names: tuple[str, ...]  # arg0_1, arg1_1, ... = args


@dataclass(frozen=True)
class Bind:
    name: str
    expr: str  # s77 = arg0_1; triton_poi_..._xnumel = s15*s77


@dataclass(frozen=True)
class AssertSizeStride:
    name: str
    sizes: tuple[str, ...]
    strides: tuple[str, ...]


@dataclass(frozen=True)
class Alloc:
    name: str
    sizes: tuple[str, ...]
    strides: tuple[str, ...]
    dtype: str  # torch.float32
    allocator: str  # empty_strided_cuda, ...


@dataclass(frozen=True)
class Alias:
    name: str
    source: str  # buf3 = buf1; del buf1  # reuse


@dataclass(frozen=True)
class View:
    """reinterpret_tensor(source, sizes, strides, offset): the source's storage seen another way."""

    source: str
    sizes: tuple[str, ...]
    strides: tuple[str, ...]
    offset: str

    @classmethod
    def parse(cls, text: str) -> View | None:
        try:
            call = ast.parse(text, mode="eval").body
        except SyntaxError:
            return None
        if not (isinstance(call, ast.Call) and dotted(call.func) == "reinterpret_tensor" and len(call.args) == 4
                and isinstance(call.args[0], ast.Name)):
            return None
        return cls(call.args[0].id, _texts(call.args[1]), _texts(call.args[2]), ast.unparse(call.args[3]))


@dataclass(frozen=True)
class Reinterpret:
    name: str
    expr: str  # buf2 = reinterpret_tensor(buf0, (sizes), (strides), offset)

    @property
    def view(self) -> View | None:
        return View.parse(self.expr)


@dataclass(frozen=True)
class Launch:
    kernel: str
    args: tuple[str, ...]  # positional arguments of run(), as source text


@dataclass(frozen=True)
class ExternCall:
    target: str  # extern_kernels.addmm, aten.mm.default, ...
    text: str
    name: str | None = None  # the name it assigns, where it does


@dataclass(frozen=True)
class Delete:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Return:
    exprs: tuple[str, ...]


Op = Unpack | Bind | AssertSizeStride | Alloc | Alias | Reinterpret | Launch | ExternCall | Delete | Return


@dataclass(frozen=True)
class Generated:
    kernels: dict[str, Kernel]
    ops: tuple[Op, ...] = field(default_factory=tuple)

    def of(self, kind: type) -> list:
        return [op for op in self.ops if isinstance(op, kind)]


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a chain of attributes on a name; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _dict_entry(node: ast.AST, key: str) -> ast.AST | None:
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
    return None


def _literal(node: ast.AST | None, default):
    try:
        return ast.literal_eval(node) if node is not None else default
    except ValueError:
        return default


def kernel_function(kernel: Kernel) -> ast.FunctionDef:
    """The kernel's def, parsed anew: each caller may rewrite its own copy."""
    tree = ast.parse(kernel.source)
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel.name)


def parse_kernel(name: str, source: str) -> Kernel:
    """The kernel `name` in the module Inductor wrote for it."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise ValueError(f"kernel {name}: no function {name} in its source")
    heuristic, meta = "", {}
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and dotted(deco.func).startswith("triton_heuristics."):
            heuristic = dotted(deco.func).split(".")[-1]
            meta = {k.arg: k.value for k in deco.keywords if k.arg}
    triton_meta = meta.get("triton_meta")
    signature = _literal(_dict_entry(triton_meta, "signature") if triton_meta else None, {})
    grid_type = _literal(_dict_entry(meta["inductor_meta"], "grid_type") if "inductor_meta" in meta else None, None)
    inductor_meta = meta.get("inductor_meta")
    extra = _literal(_dict_entry(inductor_meta, "extra_launcher_args") if inductor_meta else None, [])
    fixed = _literal(meta.get("num_warps"), None), _literal(meta.get("num_stages"), None)
    params = tuple(a.arg for a in fn.args.args)
    constexprs = tuple(a.arg for a in fn.args.args if a.annotation is not None and dotted(a.annotation) == "tl.constexpr")
    return Kernel(name=name, source=source, heuristic=heuristic, size_hints=_literal(meta.get("size_hints"), {}),
                  signature=signature, params=params, constexprs=constexprs, grid_type=grid_type,
                  grid_args=len(extra) if isinstance(extra, list) else 0,
                  warps_stages=fixed if None not in fixed else None)


def _kernels(tree: ast.Module) -> dict[str, Kernel]:
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and dotted(node.value.func) == "async_compile.triton" and len(node.value.args) >= 2):
            name, src = (_literal(a, None) for a in node.value.args[:2])
            if isinstance(name, str) and isinstance(src, str):
                found[name] = parse_kernel(name, src)
    return found


def _call_body(tree: ast.Module) -> list[ast.stmt]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node.body
    raise ValueError("no call(args) function in the generated module")


def _texts(node: ast.AST) -> tuple[str, ...]:
    elts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
    return tuple(ast.unparse(e) for e in elts)


def _assign_op(target: str, value: ast.AST, buffers: set[str]) -> Op | None:
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size"
            and isinstance(value.func.value, ast.Name) and not value.args and not value.keywords):
        return Bind(target, f"{value.func.value.id}.shape")  # x_size = x.size(); s27 = x_size[0]
    if isinstance(value, ast.Call):
        func = dotted(value.func)
        if func.split(".")[-1] in ALLOCATORS and len(value.args) >= 3:
            buffers.add(target)
            return Alloc(target, _texts(value.args[0]), _texts(value.args[1]), ast.unparse(value.args[2]),
                         func.split(".")[-1])
        if func == "reinterpret_tensor":
            buffers.add(target)
            return Reinterpret(target, ast.unparse(value))
        if func == "get_raw_stream":
            return None
        buffers.add(target)
        return ExternCall(func or ast.unparse(value.func), ast.unparse(value), target)
    if isinstance(value, ast.Name) and value.id in buffers:
        buffers.add(target)
        return Alias(target, value.id)
    return Bind(target, ast.unparse(value))


def _expr_op(call: ast.Call, kernels: dict[str, Kernel]) -> Op | None:
    func = dotted(call.func)
    if func == "assert_size_stride":
        return AssertSizeStride(ast.unparse(call.args[0]), _texts(call.args[1]), _texts(call.args[2]))
    if func in ("args.clear", "assert_alignment", "torch.cuda.set_device") or func.endswith("synchronize"):
        return None
    head, _, attr = func.rpartition(".")
    if attr == "run" and head in kernels:
        return Launch(head, tuple(ast.unparse(a) for a in call.args))
    return ExternCall(func or ast.unparse(call.func), ast.unparse(call))


def _ops(body: list[ast.stmt], kernels: dict[str, Kernel], buffers: set[str]) -> list[Op]:
    ops: list[Op] = []
    for stmt in body:
        op: Op | None = None
        if isinstance(stmt, ast.With):  # torch.cuda._DeviceGuard(0): the device, nothing to do on one
            ops.extend(_ops(stmt.body, kernels, buffers))
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Tuple) and dotted(stmt.value) == "args":
                op = Unpack(_texts(target))
            elif isinstance(target, ast.Name):
                op = _assign_op(target.id, stmt.value, buffers)
            else:
                op = ExternCall("assignment", ast.unparse(stmt))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            op = _expr_op(stmt.value, kernels)
        elif isinstance(stmt, ast.Delete):
            op = Delete(tuple(ast.unparse(t) for t in stmt.targets))
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            op = Return(_texts(stmt.value))
        else:
            op = ExternCall(type(stmt).__name__, ast.unparse(stmt))
        if op is not None:
            ops.append(op)
    return ops


def parse_generated(source: str) -> Generated:
    """The kernels and the `call` operations of one module Inductor generated."""
    tree = ast.parse(source)
    kernels = _kernels(tree)
    return Generated(kernels=kernels, ops=tuple(_ops(_call_body(tree), kernels, set())))
