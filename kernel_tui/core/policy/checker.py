"""The policy's walk over a candidate's syntax tree: imports, dotted paths through the allowed modules,
attributes, names, assignments and host-side compute, each violation named by its rule and line."""

from __future__ import annotations

import ast

from kernel_tui.core.astutil import dotted_name
from kernel_tui.core.policy.report import Violation
from kernel_tui.core.policy.rules import (
    ALLOWED_DUNDERS,
    ALLOWED_IMPORTS,
    ALLOWED_PATHS,
    CLASS_PATHS,
    FILE_ATTRS,
    FILE_PATHS,
    FORBIDDEN_BUILTINS,
    HELD_METHODS,
    INFO_ATTRS,
    INFO_FIELDS,
    INFO_MAKERS,
    INTROSPECTION_ATTRS,
    MODULE_PATHS,
    NATIVE_ATTRS,
    SIDE_STREAM_NAMES,
    TENSOR_COMPUTE_METHODS,
    TIMER_MODULES,
    TIMER_NAMES,
)

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


def _introspects(attr: str) -> bool:
    return attr in INTROSPECTION_ATTRS or attr.startswith("co_")


def is_jit_decorator(dec: ast.AST, aliases: dict[str, str]) -> bool:
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


class Bindings:
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


class Checker(ast.NodeVisitor):
    def __init__(self, tensor_params: set[str], bindings: Bindings) -> None:
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
        jit = any(is_jit_decorator(d, self.aliases) for d in node.decorator_list)
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
