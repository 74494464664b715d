"""Static policy on candidate source, checked with `ast` before anything runs.

The policy is a first filter: it keeps honest candidates honest and names common mistakes, each rejection by
its rule and line, so a person (or the agent) knows what to change. It is not the defence. The defence is the
process boundary: the candidate runs in its own sandboxed process that holds nothing that decides, and the
checks and the timings run in a trusted judge process, so a chain the policy misses costs no verdict.

The rules: Triton kernels do the work; host code only allocates, computes launch grids and launches. Allowed
modules lead to os and sys through their attributes (typing.sys, triton.runtime...), so every dotted path
through one must be on an allow-list (policy_allowlist.py), and a module or a class is named, never held as a
value. No attribute is set or deleted anywhere: a name may hold a class, a module or the evaluator's tensor, and
the candidate's own objects cannot be told from those. Host code calls a tensor method where it names it,
never holds it. Frame and code attributes, `.ctypes` and `from_file` are refused wherever they appear.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from kernel_tui.core import policy_allowlist as allow
from kernel_tui.core.astutil import dotted_name

# libdevice's modules may be imported (`from triton.language.extra import libdevice`); their parents are only links
# of a path (`tl.extra.cuda.libdevice.tanh`): the rest of triton.language.extra reaches sys.modules.
LIBDEVICE_MODULES = {"triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"}
ALLOWED_IMPORTS = {"torch", "triton", "triton.language", "math", "typing", "functools", "__future__"} | LIBDEVICE_MODULES
FORBIDDEN_BUILTINS = {
    "open", "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "input", "memoryview",
    "type",  # type(x) holds a tensor's class; type(name, bases, dict) builds a subclass with any dunder
}
ALLOWED_DUNDERS = {"__name__", "__future__"}
# torch attributes host code may use: allocation, dtypes and device queries.
TORCH_HOST_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like",
    "float16", "bfloat16", "float32", "float64", "half", "float", "int8", "int16", "int32",
    "int64", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "dtype", "device", "Size", "Tensor",
    "finfo", "iinfo", "is_tensor",
}
TORCH_CUDA_ALLOWED = {"get_device_properties", "current_device", "get_device_capability", "device_count"}
# Tensor methods with no compute: metadata and views.
TENSOR_METHODS_ALLOWED = {
    "stride", "size", "numel", "dim", "element_size", "is_contiguous", "data_ptr", "view",
    "new_empty", "new_zeros", "unsqueeze", "squeeze", "flatten", "reshape", "t", "permute",
    "transpose", "expand", "get_device", "nelement", "storage_offset",
}
# Method names that only ever mean tensor compute in this context.
TENSOR_COMPUTE_METHODS = {
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "copy_", "clone", "sum", "mean",
    "max", "min", "exp", "log", "matmul", "mm", "bmm", "addmm", "softmax", "sigmoid", "relu",
    "float", "half", "to", "contiguous", "fill_", "zero_", "neg", "sqrt", "rsqrt", "pow", "abs",
    "cumsum", "prod", "norm", "index_copy_", "scatter_", "gather", "masked_fill_", "cpu", "cuda",
    "numpy", "tolist", "item", "amax", "amin", "argmax", "var", "std", "where", "lerp", "sort",
}
# Modules a candidate may name and go through (`tl.load`), never hold as a value: a module object in a
# variable would let attribute chains escape the path check below.
MODULE_PATHS = {"torch", "torch.cuda", "triton", "triton.language", "triton.language.math", "math", "typing",
                "functools", "__future__", "triton.language.extra", "triton.language.extra.cuda"} | LIBDEVICE_MODULES
# Every dotted path a candidate may reach through an allowed module; anything longer or elsewhere is rejected
# (submodules such as triton.runtime.cache or typing itself expose os, sys and subprocess).
ALLOWED_PATHS = frozenset(
    MODULE_PATHS
    | {f"torch.{n}" for n in TORCH_HOST_ALLOWED}
    | {f"torch.cuda.{n}" for n in TORCH_CUDA_ALLOWED}
    | {f"triton.{n}" for n in allow.TRITON_NAMES}
    | {f"triton.language.{n}" for n in allow.TRITON_LANGUAGE_NAMES + allow.TRITON_LANGUAGE_OLDER_NAMES}
    | {f"triton.language.math.{n}" for n in allow.TRITON_LANGUAGE_MATH_NAMES}
    | {f"{m}.{n}" for m in LIBDEVICE_MODULES for n in allow.LIBDEVICE_NAMES}
    | {f"math.{n}" for n in allow.MATH_NAMES}
    | {f"typing.{n}" for n in allow.TYPING_NAMES}
    | {f"functools.{n}" for n in allow.FUNCTOOLS_NAMES}
    | {f"__future__.{n}" for n in allow.FUTURE_NAMES}
)
# Frame, generator, coroutine and traceback links reach any caller's globals without a single dunder.
INTROSPECTION_ATTRS = {
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code", "gi_yieldfrom",
    "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next",
    "func_globals",
}
# Refused wherever they appear: numpy's `.ctypes` reaches the ctypes module (and from it any other);
# `from_file` maps a file into a storage or a tensor, as torch.load and torch.save read and write one.
NATIVE_ATTRS = {"ctypes", "_ctypes"}
FILE_ATTRS = {"from_file"}
FILE_PATHS = {"torch.load", "torch.save", "torch.from_file"}
# Classes are named only to call them, in annotations and in isinstance(): one held in a variable can be patched.
CLASS_PATHS = frozenset(allow.CLASS_PATHS)
# Tensor methods host code may not hold as values (a held method escapes the checks on method calls). Some share
# a name with a data field: a dtype's predicates (harmless held on a tensor too), and finfo's and iinfo's max/min
# and a device's type/index, free on what is visibly such an object (torch.finfo(...), x.device, a name bound
# only to those).
HELD_METHODS = frozenset(allow.TENSOR_METHODS) - {"is_complex", "is_floating_point", "is_signed"}
INFO_FIELDS = {"max", "min", "type", "index"}
INFO_MAKERS = {"torch.finfo", "torch.iinfo", "torch.device"}
INFO_ATTRS = {"device", "dtype"}
_TYPE_EXPRESSION = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.BinOp, ast.Constant, ast.BitOr,
                    ast.expr_context)
# For messages: what each module is there for.
_EXAMPLES = {
    "triton": "triton.jit, triton.cdiv, triton.autotune, triton.Config",
    "triton.language": "tl.load, tl.arange, tl.sum",
    "triton.language.math": "tl.math.exp",
    "triton.language.extra": "tl.extra.cuda.libdevice.tanh",
    "triton.language.extra.cuda": "tl.extra.cuda.libdevice.tanh",
    "triton.language.extra.libdevice": "libdevice.tanh, libdevice.erf",
    "triton.language.extra.cuda.libdevice": "libdevice.tanh, libdevice.erf",
    "torch": "torch.empty, torch.float16",
    "torch.cuda": "torch.cuda.get_device_properties",
    "typing": "typing.Optional",
    "math": "math.ceil",
    "functools": "functools.partial",
}
TIMER_MODULES = {"time", "timeit"}
SIDE_STREAM_NAMES = {"Stream", "stream", "ExternalStream", "StreamContext", "set_stream"}
TIMER_NAMES = {"Event", "Timer", "synchronize"}


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.rule} (line {self.line}): {self.message}"


class PolicyReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    violations: list[Violation]
    syntax_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.syntax_error is None

    def summary(self) -> str:
        if self.syntax_error:
            return f"syntax: {self.syntax_error}"
        return "; ".join(str(v) for v in self.violations[:3]) + (
            f" (+{len(self.violations) - 3} more)" if len(self.violations) > 3 else ""
        )


def _introspects(attr: str) -> bool:
    return attr in INTROSPECTION_ATTRS or attr.startswith("co_")


def _is_jit_decorator(dec: ast.AST, aliases: dict[str, str]) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = dotted_name(target)
    if not name:
        return False
    head, _, rest = name.partition(".")
    full = f"{aliases.get(head, head)}.{rest}" if rest else aliases.get(head, head)
    return full in {"triton.jit", "triton.autotune", "triton.heuristics"}


def _other_bindings(node: ast.AST) -> list[str]:
    """Names `node` binds other than as the one target of `name = value` (parameters, imports, loops...)."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    name = getattr(node, "rest", None) or getattr(node, "name", None)  # match patterns, except, def, class
    return [name] if isinstance(name, str) else []


class _Bindings:
    """Every name the module binds, and for those bound only by `name = value`, their values (scopes merged)."""

    def __init__(self, tree: ast.Module) -> None:
        self.values: dict[str, list[ast.expr]] = {}
        simple: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.values.setdefault(node.targets[0].id, []).append(node.value)
                simple.add(id(node.targets[0]))
        other = {n for node in ast.walk(tree) if id(node) not in simple for n in _other_bindings(node)}
        self.names = other | set(self.values)
        for name in other:
            self.values.pop(name, None)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker(ast.NodeVisitor):
    def __init__(self, tensor_params: set[str], bindings: _Bindings) -> None:
        self.violations: list[Violation] = []
        self.aliases: dict[str, str] = {}  # local name -> the dotted path it was imported as
        self.tensor_params = tensor_params
        self.bindings = bindings
        self.kernel_depth = 0
        self.called: set[int] = set()  # ids of the expressions a call calls
        self.type_positions: set[int] = set()  # ids of the expressions where a class may be named

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.violations.append(Violation(rule=rule, line=getattr(node, "lineno", 0), message=message))

    # --- imports -----------------------------------------------------------------------------
    def _check_module(self, module: str, node: ast.AST) -> bool:
        root = module.split(".")[0]
        if "reference" in module.split("."):
            self.add("reference-access", node, f"importing {module!r}: candidates may not load the reference")
            return False
        if root in TIMER_MODULES:
            self.add("timer-access", node, f"importing {module!r}: timers belong to the evaluator")
            return False
        if module == "triton.testing" or module.startswith("triton.testing."):
            self.add("timer-access", node, "triton.testing is the evaluator's business")
            return False
        if module not in ALLOWED_IMPORTS:
            self.add("import-not-allowed", node, f"import {module!r} (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})")
            return False
        return True

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._check_module(alias.name, node):
                local = alias.asname or alias.name.split(".")[0]
                self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.add("import-not-allowed", node, "relative imports are not allowed")
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                self.add("import-not-allowed", node, f"'from {module} import *' hides what is used")
            elif full in ALLOWED_IMPORTS or full == "triton.testing":
                if self._check_module(full, node):
                    self.aliases[alias.asname or alias.name] = full
            elif self._check_module(module, node):
                self.aliases[alias.asname or alias.name] = full
                self._check_attr_path(full, node)

    # --- names and attributes ----------------------------------------------------------------
    def _resolve(self, node: ast.AST) -> str | None:
        name = dotted_name(node)
        if not name:
            return None
        head, _, rest = name.partition(".")
        if head not in self.aliases:
            return None
        base = self.aliases[head]
        return f"{base}.{rest}" if rest else base

    def _check_attr_path(self, full: str, node: ast.AST) -> None:
        """Judge a dotted path through an allowed module against the allow-list."""
        parts = full.split(".")
        if full in FILE_PATHS:
            self.add("file-access", node, f"{full} reads or writes a file: candidates use no files; allocate with "
                     "torch.empty and fill it in a kernel")
            return
        if parts[:2] == ["triton", "testing"]:
            self.add("timer-access", node, f"{full}: triton.testing is the evaluator's business")
            return
        if parts[:2] == ["torch", "cuda"] and len(parts) > 2:
            if parts[2] in SIDE_STREAM_NAMES:
                self.add("side-stream", node, f"{full}: kernels run on the evaluator's stream")
                return
            if parts[2] in TIMER_NAMES:
                self.add("timer-access", node, f"{full}: timing belongs to the evaluator")
                return
        if full in ALLOWED_PATHS:
            return
        depth = next(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) not in ALLOWED_PATHS)
        parent = ".".join(parts[:depth - 1])
        if parent == "torch.cuda" and self.kernel_depth == 0:
            self.add("torch-compute", node, f"{full} is not allowed in host code")
        elif parent == "torch" and self.kernel_depth == 0:
            self.add("torch-compute", node, f"{full}: host code may only allocate; do the work in a Triton kernel")
        elif parent in MODULE_PATHS:
            self.add("attribute-not-allowed", node, f"{full}: {parts[depth - 1]!r} is not on the allow-list of "
                     f"{parent}; use its public API ({_EXAMPLES.get(parent, parent + '.<name>')}) and nothing else")
        else:
            self.add("attribute-not-allowed", node, f"{full}: use {parent} itself; nothing may be reached through it")

    def _check_attr_name(self, node: ast.Attribute) -> bool:
        """Dunder and introspection attributes, wherever they appear; True when one was reported."""
        if _introspects(node.attr):
            inner = node.value
            while isinstance(inner, ast.Attribute):  # report a chain of them once, at its first link
                if _introspects(inner.attr):
                    return True
                inner = inner.value
        return self._check_attr_string(node.attr, node)

    def _check_attr_string(self, attr: str, node: ast.AST) -> bool:
        if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS:
            self.add("dunder-access", node, f"attribute {attr!r}")
            return True
        if _introspects(attr):
            self.add("introspection", node, f"attribute {attr!r} reaches frames or code objects (any module's "
                     "globals); keep to your own variables")
            return True
        if attr in NATIVE_ATTRS:
            self._native(node, f"attribute {attr!r}")
            return True
        if attr in FILE_ATTRS:
            self.add("file-access", node, f"{attr!r} maps a file into a tensor: candidates use no files; allocate "
                     "with torch.empty and fill it in a kernel")
            return True
        return False

    def _native(self, node: ast.AST, what: str) -> None:
        self.add("native-access", node, f"{what} reaches raw memory and the ctypes module; read and write memory "
                 "in a Triton kernel")

    def _class_alias(self, node: ast.AST, name: str, full: str) -> None:
        self.add("class-alias", node, f"{name} is the class {full}: name it only to call it, in an annotation or in "
                 "isinstance(), never as a value (a class held in a variable can be patched)")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case object(gi_frame=f)` reads attributes without an Attribute node
        for attr in node.kwd_attrs:
            self._check_attr_string(attr, node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        flagged = self._check_attr_name(node)
        full = self._resolve(node)
        if full is None:
            self._check_value_attribute(node, flagged)
            self.generic_visit(node)
            return
        # The dotted path through a module is judged as a whole; its inner links are not visited again.
        inner = node.value
        while isinstance(inner, ast.Attribute):
            flagged = self._check_attr_name(inner) or flagged
            inner = inner.value
        if not isinstance(node.ctx, ast.Load):
            self.add("monkeypatch", node, f"assigning to {dotted_name(node)}: modules are not the candidate's "
                     "to patch")
        elif flagged:
            pass
        elif full in MODULE_PATHS:
            self.add("module-alias", node, f"{dotted_name(node)} is the module {full}: use it only as the base of "
                     f"an attribute ({dotted_name(node)}.name), never as a value")
        elif full in CLASS_PATHS and id(node) not in self.type_positions:
            self._class_alias(node, dotted_name(node) or full, full)
        else:
            self._check_attr_path(full, node)

    def _check_value_attribute(self, node: ast.Attribute, flagged: bool) -> None:
        """An attribute of a value, not of a module: never set, and in host code no tensor method held."""
        shown = _shown(node)
        if not isinstance(node.ctx, ast.Load):
            verb = "deleting" if isinstance(node.ctx, ast.Del) else "setting"
            self.add("attribute-assignment", node, f"{verb} {shown}: candidates set no attributes (a name may hold "
                     "a class, a module or the evaluator's tensor); keep state in a local variable")
        elif not flagged and self._holds_method(node):
            self.add("bound-method", node, f"{shown} takes the method {node.attr!r} as a value: call it where you "
                     f"name it ({shown}(...)); a held method escapes the checks on host code")

    def _holds_method(self, node: ast.Attribute) -> bool:
        if self.kernel_depth or id(node) in self.called or node.attr not in HELD_METHODS:
            return False
        return not (node.attr in INFO_FIELDS and self._is_info(node.value, follow=True))

    def _is_info(self, expr: ast.expr, *, follow: bool) -> bool:
        """Visibly a dtype, device, finfo or iinfo: `x.dtype`, `torch.finfo(...)`, or a name bound only to those."""
        if isinstance(expr, ast.Attribute):
            return expr.attr in INFO_ATTRS
        if isinstance(expr, ast.Call):
            return self._resolve(expr.func) in INFO_MAKERS
        values = self.bindings.values.get(expr.id, []) if follow and isinstance(expr, ast.Name) else []
        return bool(values) and all(self._is_info(v, follow=False) for v in values)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_BUILTINS:
            self.add("forbidden-builtin", node, f"{node.id!r} is not allowed")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDERS:
            self.add("dunder-access", node, f"name {node.id!r}")
        elif self.aliases.get(node.id) in MODULE_PATHS:
            if isinstance(node.ctx, ast.Load):
                self.add("module-alias", node, f"{node.id} is the module {self.aliases[node.id]}: use it only as "
                         f"the base of an attribute ({node.id}.name), never as a value")
            else:
                self.add("module-alias", node, f"rebinding {node.id}, the module {self.aliases[node.id]}: "
                         "pick another name")
        elif node.id in NATIVE_ATTRS:
            self._native(node, f"name {node.id!r}")
        elif self.aliases.get(node.id) in CLASS_PATHS and isinstance(node.ctx, ast.Load) and \
                id(node) not in self.type_positions:
            self._class_alias(node, node.id, self.aliases[node.id])

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "reference.py" in node.value:
            self.add("reference-access", node, "mentions reference.py: candidates may not load the reference")

    # --- assignments (monkeypatching, host-side tensor writes) --------------------------------
    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_target(elt, node)
            return
        # attribute targets: visit_Attribute (monkeypatch through a module, attribute-assignment elsewhere)
        if isinstance(target, ast.Subscript) and self.kernel_depth == 0:
            base = target.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name) and base.id in self.tensor_params:
                self.add("torch-compute", node, f"host-side write into tensor {base.id!r}")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        if isinstance(node.target, ast.Name) and node.target.id in self.tensor_params and self.kernel_depth == 0:
            self.add("torch-compute", node, f"host-side arithmetic on tensor {node.target.id!r}")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target, node)
        self._license(node.annotation)
        self.generic_visit(node)

    # --- where a class may be named: called, in annotations, isinstance() and typing's subscripts ------
    def _license(self, node: ast.AST | None) -> None:
        """A type expression: names, paths, subscripts, tuples, lists and `|` (no walrus, call or lambda inside)."""
        if isinstance(node, _TYPE_EXPRESSION):
            self.type_positions.add(id(node))
            for child in ast.iter_child_nodes(node):
                self._license(child)

    def _license_call(self, node: ast.Call) -> None:
        self.called.add(id(node.func))
        self.type_positions.add(id(node.func))
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"isinstance", "issubclass"} and len(node.args) == 2 and \
                func.id not in self.bindings.names:
            self._license(node.args[1])
        elif node.args and self._resolve(func) == "typing.cast":
            self._license(node.args[0])

    def visit_arg(self, node: ast.arg) -> None:
        self._license(node.annotation)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and (self._resolve(node.value) or "").startswith("typing."):
            self._license(node.slice)
        self.generic_visit(node)

    # --- host compute on tensor parameters -----------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> None:
        if self.kernel_depth == 0:
            for side in (node.left, node.right):
                if isinstance(side, ast.Name) and side.id in self.tensor_params:
                    self.add("torch-compute", node, f"host-side arithmetic on tensor {side.id!r}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._license_call(node)
        func = node.func
        if self.kernel_depth == 0 and isinstance(func, ast.Attribute) and self._resolve(func) is None:
            method = func.attr
            if method in TENSOR_COMPUTE_METHODS:
                self.add("torch-compute", node, f".{method}() in host code: do the work in a Triton kernel")
            elif method == "record_stream" or method == "wait_stream":
                self.add("side-stream", node, f".{method}()")
        self.generic_visit(node)

    # --- scopes --------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        jit = any(_is_jit_decorator(d, self.aliases) for d in node.decorator_list)
        for d in node.decorator_list:
            self.type_positions.add(id(d))  # a decorator is called
            self.visit(d)
        # defaults and annotations are evaluated where the function is defined, so they are host code
        self.visit(node.args)
        if node.returns is not None:
            self._license(node.returns)
            self.visit(node.returns)
        self.kernel_depth += jit
        for stmt in node.body:
            self.visit(stmt)
        self.kernel_depth -= jit

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Global(self, node: ast.Global) -> None:
        self.add("monkeypatch", node, "'global' rebinding is not allowed; keep state out of candidates")


def _kernels_and_launches(tree: ast.Module, aliases: dict[str, str]) -> tuple[set[str], dict[str, set[str]], dict[str, set[str]]]:
    """Module-level jit kernels; for each host function, the kernels it launches and functions it calls."""
    kernels: set[str] = set()
    launches: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            if any(_is_jit_decorator(d, aliases) for d in node.decorator_list):
                kernels.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            # kernel = triton.jit(fn)
            if _is_jit_decorator(node.value.func, aliases) or _is_jit_decorator(node.value, aliases):
                kernels.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in kernels:
            launched, called = set(), set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    f = sub.func
                    if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name):
                        launched.add(f.value.id)
                    elif isinstance(f, ast.Name):
                        called.add(f.id)
            launches[node.name] = launched
            calls[node.name] = called
    return kernels, launches, calls


def _launches_kernel(entry: str, kernels: set[str], launches: dict[str, set[str]], calls: dict[str, set[str]]) -> bool:
    seen: set[str] = set()
    todo = [entry]
    while todo:
        fn = todo.pop()
        if fn in seen or fn not in launches:
            continue
        seen.add(fn)
        if launches[fn] & kernels:
            return True
        todo.extend(calls[fn])
    return False


def check_source(
    source: str,
    *,
    entrypoint: str,
    launch_arguments: Iterable[str],
    tensor_arguments: Iterable[str] = (),
    max_source_chars: int = 50_000,
) -> PolicyReport:
    """Check a candidate's source against the static policy."""
    args = list(launch_arguments)
    if len(source) > max_source_chars:
        return PolicyReport(violations=[Violation(
            rule="source-size", line=0,
            message=f"{len(source)} characters, the task allows {max_source_chars}",
        )])
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return PolicyReport(violations=[], syntax_error=f"line {exc.lineno}: {exc.msg}")

    checker = _Checker(tensor_params=set(tensor_arguments), bindings=_Bindings(tree))
    checker.visit(tree)
    violations = list(checker.violations)

    entry = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entrypoint), None
    )
    if entry is None:
        violations.append(Violation(
            rule="entrypoint-missing", line=0,
            message=f"no module-level function {entrypoint}({', '.join(args)})",
        ))
    else:
        params = entry.args
        positional = params.posonlyargs + params.args
        required = len(positional) - len(params.defaults)
        if params.vararg is None and not (required <= len(args) <= len(positional)):
            violations.append(Violation(
                rule="entrypoint-signature", line=entry.lineno,
                message=f"{entrypoint} takes {len(positional)} arguments, the task passes {len(args)}: "
                f"({', '.join(args)})",
            ))
        kernels, launches, calls = _kernels_and_launches(tree, checker.aliases)
        if not kernels:
            violations.append(Violation(
                rule="no-triton-kernel", line=0, message="no @triton.jit kernel: the work must be done by one",
            ))
        elif not _launches_kernel(entrypoint, kernels, launches, calls):
            violations.append(Violation(
                rule="no-triton-kernel", line=entry.lineno,
                message=f"{entrypoint} never launches a @triton.jit kernel (kernel[grid](...))",
            ))
    violations.sort(key=lambda v: v.line)
    return PolicyReport(violations=violations)
