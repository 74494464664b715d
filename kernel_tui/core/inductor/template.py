"""Inductor's GEMM templates (`@triton_heuristics.template`, max_autotune's Triton matmuls) as plain kernels.

A template is already a plain Triton function: its autotuned choice is written into the body as constexpr
locals (`BLOCK_M : tl.constexpr = 128`), its warps and stages are its decorator's keywords, and its launch
passes the grid after the parameters (`run(A, B, out, ks0, grid0, grid1, grid2, stream=...)`), the tile count
worked out by Inductor for those block sizes. The tile sizes and the group size become constexpr parameters
set from module-level constants, and axis 0 of the grid is written from them, `cdiv(M, BLOCK_M) * cdiv(N,
BLOCK_N)` (M and N as the body computes them), so that the search can move them. That formula is checked
against Inductor's own grid at two draws of the sizes; a template whose grid is something else is refused.
Axes 1 and 2 (a batched GEMM's batch) stay Inductor's expressions.
"""

from __future__ import annotations

import ast

from kernel_tui.core.inductor.generated import Kernel, Refusal, kernel_function
from kernel_tui.core.inductor.symbolic import evaluate

MOVABLE = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")


def body_constants(fn: ast.FunctionDef) -> dict[str, int]:
    """The template's integer constexpr locals that the search may move: {'BLOCK_M': 128, ...}."""
    found = {}
    for stmt in fn.body:
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in MOVABLE
                and isinstance(stmt.value, ast.Constant) and type(stmt.value.value) is int):
            found[stmt.target.id] = stmt.value.value
    return found


def body_sizes(fn: ast.FunctionDef) -> dict[str, str]:
    """The body's `M = ks0`, `N = 4096`: the GEMM's sizes in terms of the kernel's parameters."""
    found = {}
    for stmt in fn.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in ("M", "N", "K")):
            found[stmt.targets[0].id] = ast.unparse(stmt.value)
    return found


def template_function(kernel: Kernel) -> ast.FunctionDef:
    """The template as a plain function: the movable constants are trailing constexpr parameters."""
    fn = kernel_function(kernel)
    constants = body_constants(fn)
    if set(constants) != set(MOVABLE):
        missing = sorted(set(MOVABLE) - set(constants))
        raise Refusal(f"kernel {kernel.name} is a template without the GEMM's {missing[0]}: not a matmul template "
                      "the rewrite knows (a convolution, say): keep the eager start")
    fn.body = [s for s in fn.body if not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                                          and s.target.id in constants)]
    explicit_precision(fn)
    for name in MOVABLE:
        fn.args.args.append(ast.arg(name, ast.Attribute(ast.Name("tl", ast.Load()), "constexpr", ast.Load())))
    return fn


def explicit_precision(fn: ast.FunctionDef) -> None:
    """`tl.dot(a, b, allow_tf32=ALLOW_TF32)` with the body's `ALLOW_TF32: tl.constexpr = False` (or True) as
    `tl.dot(a, b, input_precision="ieee")` (or "tf32"), in place: what Triton itself makes of that deprecated
    flag, written out so that the search's precision moves can read it and offer "tf32x3" (three TF32 passes
    on the tensor cores, near fp32's accuracy) for an fp32 GEMM that Inductor leaves on the FMA units. The
    constexpr local goes once nothing else reads it. A flag that is not a literal stays as it is."""
    flags = {stmt.target.id: stmt.value.value for stmt in fn.body
             if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
             and isinstance(stmt.value, ast.Constant) and type(stmt.value.value) is bool}
    replaced: set[str] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot"):
            continue
        for kw in node.keywords:
            value = kw.value
            flag = (value.value if isinstance(value, ast.Constant) and type(value.value) is bool
                    else flags.get(value.id) if isinstance(value, ast.Name) else None)
            if kw.arg == "allow_tf32" and flag is not None:
                if isinstance(value, ast.Name):
                    replaced.add(value.id)
                kw.arg, kw.value = "input_precision", ast.Constant("tf32" if flag else "ieee")
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    fn.body = [s for s in fn.body if not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                                          and s.target.id in replaced - read)]


def _rename(expr: str, env: dict[str, str]) -> str:
    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.parse(f"({env[node.id]})", mode="eval").body if node.id in env else node

    return ast.unparse(Rename().visit(ast.parse(expr, mode="eval")))


def _agrees(a: str, b: str) -> bool:
    """Two integer size expressions equal at two draws of their symbols (small and large values)."""
    for seed in (1, 2):
        env: dict[str, int] = {}
        try:
            if evaluate(a, env, seed) != evaluate(b, env, seed):
                return False
        except (ValueError, SyntaxError):
            return False
    return True


def template_grid(kernel: Kernel, args: tuple[str, ...], grid: tuple[str, ...]) -> tuple[str, str, str, str]:
    """M and N as run()'s arguments give them (axis 0 is cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)), and axes 1 and 2
    as Inductor wrote them, all in the generated code's names; refused where axis 0 is not that tile count."""
    fn = kernel_function(kernel)
    sizes, constants = body_sizes(fn), body_constants(fn)
    if "M" not in sizes or "N" not in sizes or len(grid) != 3:
        raise Refusal(f"kernel {kernel.name}: a template without M and N, or a grid of {len(grid)} axes: "
                      "keep the eager start")
    by_param = dict(zip(kernel.params, args))
    m, n = (_rename(sizes[k], by_param) for k in ("M", "N"))
    formula = "(({m}) + {bm} - 1) // {bm} * ((({n}) + {bn} - 1) // {bn})"
    literal = formula.format(m=m, n=n, bm=constants["BLOCK_M"], bn=constants["BLOCK_N"])
    if not _agrees(literal, grid[0]):
        raise Refusal(f"kernel {kernel.name}: its grid {grid[0]} is not the tile count of M and N: "
                      "keep the eager start")
    return m, n, grid[1], grid[2]
