"""Inductor's integer size expressions (`ks0*ks1`, `(127 + s86) // 128`) compared by value: each symbol drawn
at random, twice (small and large values), since two expressions that agree at both draws are taken to agree.
A layout is judged at draws where every size is at least 1: a draw that empties a dimension (a pooling's
`(s0 - 3) // 2` at s0 = 3) says nothing of its strides, so another is drawn."""

from __future__ import annotations

import ast
import math
import random

LAYOUT_DRAWS, LAYOUT_TRIES = 2, 8


def _value(node: ast.AST, env: dict[str, int], high: int | None) -> int:
    """An integer size expression (names, literals, + - * // %, max, min) at one assignment of its symbols, each
    drawn from 3..high where env has none yet; env["_draw"] (the draw's number) seeds them. With `high` None
    every symbol must be in env (a ValueError otherwise)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        if high is None:
            if node.id not in env:
                raise ValueError(node.id)
            return env[node.id]
        return env.setdefault(node.id, random.Random(f"{node.id}/{env.get('_draw', 0)}").randint(3, high))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, env, high)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min") \
            and node.args and not node.keywords:  # Inductor's guard of a size that could reach 0: max(1, n)
        values = [_value(a, env, high) for a in node.args]
        return max(values) if node.func.id == "max" else min(values)
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, env, high), _value(node.right, env, high)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if type(node.op) in ops:
            return ops[type(node.op)]
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and b:
            return a // b if isinstance(node.op, ast.FloorDiv) else a % b
    raise ValueError(ast.unparse(node))


def evaluate(text: str, env: dict[str, int], draw: int) -> int:
    """`text` at draw `draw` of its symbols (odd draws: sizes up to 97, even: up to 20000); `env` keeps the
    values drawn, so every expression evaluated with it sees the same ones."""
    env.setdefault("_draw", draw)
    return _value(ast.parse(text, mode="eval").body, env, 97 if draw % 2 else 20000)


def _layout_draws(sizes: tuple[str, ...], *others: tuple[str, ...]) -> list[list[list[int]]] | None:
    """`sizes` and `others` evaluated at the first LAYOUT_DRAWS draws where every size is at least 1; None when
    an expression cannot be evaluated or too few draws are found."""
    found = []
    for draw in range(1, LAYOUT_TRIES + 1):
        env: dict[str, int] = {}
        try:
            values = [[evaluate(e, env, draw) for e in group] for group in (sizes, *others)]
        except (ValueError, SyntaxError):
            return None
        if all(v >= 1 for v in values[0]):
            found.append(values)
            if len(found) == LAYOUT_DRAWS:
                return found
    return None


def same_numel(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Two shapes hold as many elements, at two draws of their symbols."""
    draws = _layout_draws(a, b)
    return draws is not None and all(math.prod(na) == math.prod(nb) for na, nb in draws)


def _row_major(dims: list[int], steps: list[int]) -> bool:
    expect = 1
    for dim, step in reversed(list(zip(dims, steps))):
        if dim != 1 and step != expect:
            return False
        expect *= dim
    return True


def is_contiguous(sizes: tuple[str, ...], strides: tuple[str, ...]) -> bool:
    """Row-major strides for these sizes, at two draws of the symbols' values."""
    if len(sizes) != len(strides):
        return False
    draws = _layout_draws(sizes, strides)
    return draws is not None and all(_row_major(dims, steps) for dims, steps in draws)


def contiguous_at(sizes: tuple[str, ...], strides: tuple[str, ...], envs: list[dict[str, int]]) -> bool:
    """Row-major strides for these sizes at each of `envs` (every symbol's value at one of the task's shapes), where
    a random draw can break a layout the task's sizes keep: GroupNorm's row stride `16*(C//16)` is C for every
    C its 16 groups divide, and the reference itself refuses any other C. False where a symbol has no value."""
    if len(sizes) != len(strides) or not envs:
        return False
    for env in envs:
        try:
            dims, steps = ([_value(ast.parse(e, mode="eval").body, env, None) for e in group] for group in (sizes, strides))
        except (ValueError, SyntaxError):
            return False
        if not _row_major(dims, steps):
            return False
    return True
