"""Tiny arithmetic over named dimensions ("rows * cols", "2 * M * N * K") for task files.

Task files may give shapes, scalars, distribution parameters and cost-model figures as expressions so
that one spec serves every shape; they are parsed with `ast` and only arithmetic and a few math
functions (FUNCTIONS) are allowed, never `eval`.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCS: dict[str, Callable[..., int | float]] = {
    "min": min, "max": max, "abs": abs, "sqrt": math.sqrt, "floor": math.floor, "ceil": math.ceil,
    "log": math.log, "log2": math.log2, "exp": math.exp,
}
FUNCTIONS = tuple(sorted(_FUNCS))


class ExpressionError(ValueError):
    pass


def evaluate(expr: str | int | float, dims: Mapping[str, int]) -> int | float:
    """Evaluate a number or an arithmetic expression over `dims`."""
    if isinstance(expr, bool):
        raise ExpressionError("booleans are not numbers here")
    if isinstance(expr, (int, float)):
        return expr
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression: {expr!r}") from exc
    return _eval(tree.body, dims, expr)


def names_in(expr: str | int | float) -> set[str]:
    if not isinstance(expr, str):
        return set()
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def _eval(node: ast.AST, dims: Mapping[str, int], text: str) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
        node.value, bool
    ):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in dims:
            raise ExpressionError(f"unknown dimension {node.id!r} in {text!r} (known: {sorted(dims)})")
        return dims[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        try:
            return _BINOPS[type(node.op)](_eval(node.left, dims, text), _eval(node.right, dims, text))
        except (ZeroDivisionError, OverflowError) as exc:
            raise ExpressionError(f"{exc} in {text!r}") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, dims, text)
        return -value if isinstance(node.op, ast.USub) else value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        try:
            return _FUNCS[node.func.id](*(_eval(a, dims, text) for a in node.args))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ExpressionError(f"{node.func.id}() failed in {text!r}: {exc}") from None
    if isinstance(node, ast.Call):
        raise ExpressionError(f"only arithmetic and the functions {', '.join(FUNCTIONS)} are allowed: {text!r}")
    raise ExpressionError(f"only arithmetic on dimension names is allowed: {text!r}")
