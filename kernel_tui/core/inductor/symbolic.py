"""Inductor's integer size expressions (`ks0*ks1`, `(127 + s86) // 128`) compared by value: each symbol drawn
at random, twice (small and large values), since two expressions that agree at both draws are taken to agree."""

from __future__ import annotations

import ast
import math
import random


def _value(node: ast.AST, env: dict[str, int], high: int = 97) -> int:
    """An integer size expression (names, literals, + - * // %) at one assignment of its symbols, each drawn
    from 3..high."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return env.setdefault(node.id, random.Random(node.id + str(len(env))).randint(3, high))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, env, high)
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, env, high), _value(node.right, env, high)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if type(node.op) in ops:
            return ops[type(node.op)]
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and b:
            return a // b if isinstance(node.op, ast.FloorDiv) else a % b
    raise ValueError(ast.unparse(node))


def evaluate(text: str, env: dict[str, int], draw: int) -> int:
    """`text` at draw 1 (sizes up to 97) or 2 (up to 20000) of its symbols; `env` keeps the values drawn."""
    return _value(ast.parse(text, mode="eval").body, env, 97 if draw == 1 else 20000)


def same_numel(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Two shapes hold as many elements, at two draws of their symbols."""
    for draw in (1, 2):
        env: dict[str, int] = {}
        try:
            na = math.prod(evaluate(s, env, draw) for s in a)
            nb = math.prod(evaluate(s, env, draw) for s in b)
        except (ValueError, SyntaxError):
            return False
        if na != nb:
            return False
    return True


def is_contiguous(sizes: tuple[str, ...], strides: tuple[str, ...]) -> bool:
    """Row-major strides for these sizes, at two draws of the symbols' values."""
    if len(sizes) != len(strides):
        return False
    for seed in (1, 2):
        env = {f"_{seed}": seed}
        try:
            dims = [_value(ast.parse(s, mode="eval").body, env) for s in sizes]
            steps = [_value(ast.parse(s, mode="eval").body, env) for s in strides]
        except (ValueError, SyntaxError):
            return False
        expect = 1
        for dim, step in reversed(list(zip(dims, steps))):
            if dim != 1 and step != expect:
                return False
            expect *= dim
    return True
