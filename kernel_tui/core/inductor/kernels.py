"""One Inductor kernel as a plain `@triton.jit` function: its decorators and helper calls rewritten to `tl`.

Inductor's kernels call `triton_helpers` (its own jit functions), `tl_math` (triton.language.math) and
`libdevice`. A candidate may import only torch, triton, triton.language and libdevice, so each helper becomes
the `tl` call it stands for; one without an equivalent here is refused, named, and the problem keeps its
eager start. `triton_helpers.maximum`/`minimum` propagate NaN; they become the helper's own
`tl.where(a > b | a != a, a, b)`;
`max2`/`min2` become `tl.max`/`tl.min`, which do not propagate NaN through a reduction (the one difference).
A libdevice function that `tl` has (exp, erf, rsqrt, ...) becomes the `tl` call: Triton's CPU interpreter
runs `tl` math but not libdevice, and the GPU lowers both to the same device functions but for exp/rsqrt,
where tl uses the fast approximations. Others stay `libdevice.<f>`, from `triton.language.extra` (the
backend-neutral module the GPU backend resolves): such a start runs on a GPU only.

A statically shaped kernel sets its sizes in its body (`xnumel = 128`). With symbolic sizes (`dynamic=True`)
Inductor still fixes the ones the model fixes (a LayerNorm's normalized_shape, say): for a task with several
shapes such a kernel is kept, flagged "static", and the check at every shape decides.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from kernel_tui.core.inductor.generated import Kernel, Refusal, dotted, kernel_function
from kernel_tui.core.inductor.helpers import FUNCTIONS as OWN_HELPERS
from kernel_tui.core.inductor.template import body_sizes, template_function
from kernel_tui.core.policy.allowlist import LIBDEVICE_NAMES, TRITON_LANGUAGE_NAMES

REDUCTIONS = {"max2": "tl.max", "min2": "tl.min"}
NAN_PROPAGATING = ("maximum", "minimum")
NUMEL_NAMES = ("xnumel", "ynumel", "znumel", "r0_numel", "r1_numel", "rnumel")
SUPPORTED_HEURISTICS = ("pointwise", "reduction", "persistent_reduction")


def _attr(path: str) -> ast.expr:
    node: ast.expr = ast.Name(path.split(".")[0], ast.Load())
    for part in path.split(".")[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


class _Helpers(ast.NodeTransformer):
    """Rewrites the helper calls of one kernel body; `needs` tells the caller what the module must then hold:
    "libdevice" (its import), or a group of helpers.SOURCES."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.needs: set[str] = set()

    def visit_Call(self, node: ast.Call) -> ast.AST:
        module, _, fn = dotted(node.func).rpartition(".")
        if module not in ("triton_helpers", "tl_math", "libdevice", "tl.math"):
            self.generic_visit(node)
            return node
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        if module == "triton_helpers":
            return self._helper(node, fn)
        if module in ("tl_math", "libdevice", "tl.math"):
            if fn in TRITON_LANGUAGE_NAMES:
                node.func = _attr(f"tl.{fn}")
            elif fn in LIBDEVICE_NAMES:
                node.func = _attr(f"libdevice.{fn}")
                self.needs.add("libdevice")
            else:
                raise Refusal(f"kernel {self.kernel} calls {module}.{fn}, which neither tl nor libdevice has: "
                              "keep the eager start")
        return node

    def _helper(self, node: ast.Call, fn: str) -> ast.AST:
        if fn == "promote_to_tensor" and len(node.args) == 1:
            return node.args[0]
        if fn in NAN_PROPAGATING and len(node.args) == 2:
            # the helper's own form: a NaN in the first wins (tl.PropagateNan is not reachable under the policy)
            a, b = node.args
            wins = ast.Compare(a, [ast.Gt() if fn == "maximum" else ast.Lt()], [b])
            nan = ast.Compare(a, [ast.NotEq()], [a])
            return ast.Call(_attr("tl.where"), [ast.BinOp(wins, ast.BitOr(), nan), a, b], [])
        if fn in REDUCTIONS:
            node.func = _attr(REDUCTIONS[fn])
            return node
        if fn in OWN_HELPERS:
            name, group = OWN_HELPERS[fn]
            node.func = _attr(name)
            self.needs.add(group)
            return node
        raise Refusal(f"kernel {self.kernel} calls triton_helpers.{fn}, which the rewrite has no tl form for: "
                      "keep the eager start")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("triton_helpers", "tl_math", "triton_heuristics"):
            raise Refusal(f"kernel {self.kernel} uses {node.id} other than in a call the rewrite knows: "
                          "keep the eager start")
        return node


def static_numels(fn: ast.FunctionDef) -> dict[str, int]:
    """The sizes a statically shaped kernel sets in its body: {'xnumel': 128, 'r0_numel': 300}."""
    found = {}
    for stmt in fn.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in NUMEL_NAMES and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, int)):
            found[stmt.targets[0].id] = stmt.value.value
    return found


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any(dotted(d) in ("triton.jit", "jit") for d in fn.decorator_list)


def module_functions(kernel: Kernel) -> list[ast.FunctionDef]:
    """The plain jit functions the kernel's module defines beside it: a scan's or reduction's combine function
    (`_triton_helper_fn_add0`), passed by name to `tl.associative_scan` or `tl.reduce`."""
    tree = ast.parse(kernel.source)
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != kernel.name and _is_jit(n)
            and not any(dotted(d).startswith("triton_heuristics") for d in n.decorator_list)]


def offset_name(kernel: Kernel, pointer: str) -> str:
    """The parameter that says how far into its buffer a view passed as `pointer` starts: `<pointer>_offset`,
    underscores added until the kernel's body uses no such name (its loops have `r0_offset`)."""
    used = {n.id for n in ast.walk(kernel_function(kernel)) if isinstance(n, ast.Name)}
    name = f"{pointer}_offset"
    while name in used:
        name += "_"
    return name


class _Shift(ast.NodeTransformer):
    """Each read of a pointer in `pointers` becomes `pointer + pointer_offset`: the launch passes a view's
    buffer and how far into it the view starts."""

    def __init__(self, pointers: dict[str, str]) -> None:
        self.pointers = pointers  # pointer -> its offset's parameter

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.pointers and isinstance(node.ctx, ast.Load):
            return ast.BinOp(node, ast.Add(), ast.Name(self.pointers[node.id], ast.Load()))
        return node


def rewrite_kernel(kernel: Kernel, *, single_shape: bool, taken: dict[str, str] | None = None,
                   offsets: Collection[str] = ()) -> tuple[str, set[str]]:
    """The kernel as plain `@triton.jit` source, preceded by the jit functions of its module it uses, and what
    the module must hold for it (`_Helpers.needs`). `taken` (name -> source of the functions the start holds
    already, updated here) keeps one copy of a function two kernels share and renames one that differs;
    `offsets` names the pointers a launch passes as a buffer and an offset (`_Shift`)."""
    if kernel.heuristic == "template":
        sizes = body_sizes(kernel_function(kernel))
        static = bool(sizes) and all(v.isdigit() for v in sizes.values())
        fn = template_function(kernel)
    elif kernel.heuristic not in SUPPORTED_HEURISTICS:
        raise Refusal(f"kernel {kernel.name} is a {kernel.heuristic or 'undecorated'} kernel, which the rewrite "
                      "does not launch: keep the eager start")
    else:
        fn = kernel_function(kernel)
        static = bool(static_numels(fn))
    fn.decorator_list = [_attr("triton.jit")]
    helpers = _Helpers(kernel.name)
    fn = helpers.visit(fn)
    if offsets:
        names = {p: offset_name(kernel, p) for p in sorted(offsets)}
        fn = _Shift(names).visit(fn)
        fn.args.args += [ast.arg(name) for name in names.values()]
    taken = {} if taken is None else taken
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    carried, renamed = [], {}
    for own in module_functions(kernel):
        if own.name not in used:
            continue
        own.decorator_list = [_attr("triton.jit")]
        text = ast.unparse(ast.fix_missing_locations(helpers.visit(own)))
        name, n = own.name, 2
        while name in taken and taken[name] != text.replace(f"def {own.name}(", f"def {name}(", 1):
            name, n = f"{own.name}_{n}", n + 1
        text = text.replace(f"def {own.name}(", f"def {name}(", 1)
        if name != own.name:
            renamed[own.name] = name
        if name not in taken:
            taken[name] = text
            carried.append(text)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in renamed:
            node.id = renamed[node.id]
    # a size Inductor fixed (a model's normalized_shape, a loss's numel) holds at other shapes or it does not:
    # the check at every shape of the task decides, and the caller says which kernels it hangs on
    flagged = {"static"} if static and not single_shape else set()
    source = ast.unparse(ast.fix_missing_locations(fn))
    return "\n\n\n".join([*carried, source]), helpers.needs | flagged
