"""Sizes for Triton's CPU interpreter: the problem shrunk until one call fits (and variants that leave one
dimension alone), ragged variants of those, the joint moves that check the fits, and which small runs are
worth keeping."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate
from kernel_tui.core.kernelbench.fit import Expr
from kernel_tui.core.task import MAX_INTERPRETER_ELEMENTS

JOINT_PRIMES = (3, 5, 11, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67)
INTERPRETER_ELEMENTS = 262_144  # one call's tensors, all together, on Triton's CPU interpreter
SMALL_DIM = 16  # dimensions at or below this (kernel sizes, few channels) are left alone when shrinking


def elements(shapes: list[list[Expr]], dims: dict[str, int]) -> float:
    total = 0
    for shape in shapes:
        n = 1
        for e in shape:
            try:
                v = evaluate(e, dims)
            except ExpressionError:
                return math.inf
            if not isinstance(v, int) or v < 1:
                return math.inf
            n *= v
        total += n
    return total


def shrink(shapes: list[list[Expr]], base: dict[str, int], budget: int, keep: str | None = None) -> dict[str, int]:
    """Halve the largest dimension (not `keep`) until one call's tensors fit in `budget` elements."""
    dims = dict(base)
    for floor in (SMALL_DIM, 1):
        while elements(shapes, dims) > budget:
            big = [n for n in dims if dims[n] > floor and n != keep]
            if not big:
                break
            n = max(big, key=lambda k: dims[k])
            dims[n] = max(floor, (dims[n] + 1) // 2)
    return dims


def not_degenerate(runs: list[tuple[dict[str, int], dict[str, Any]]]) -> list[tuple[dict[str, int], dict[str, Any]]]:
    """Drop small shapes where an output all but vanishes next to another small shape's (a GroupNorm
    whose groups shrank to one channel normalizes everything to zero): such a shape tests nothing."""
    if len(runs) < 2:
        return runs
    n = len(runs[0][1]["outputs"])
    best = [max(r["outputs"][i].get("q90", 0.0) for _, r in runs) for i in range(n)]
    kept = [(d, r) for d, r in runs
            if all(r["outputs"][i].get("q90", 0.0) >= 1e-3 * best[i] for i in range(n))]
    return kept or runs


def ragged_variants(small: dict[str, int], base: dict[str, int]) -> list[dict[str, int]]:
    large = [n for n in small if small[n] > SMALL_DIM or small[n] != base[n]]
    out = []
    odd = {n: (small[n] - 1 if small[n] % 2 == 0 and small[n] > 2 else small[n]) for n in small}
    out.append({**small, **{n: odd[n] for n in large}})
    up = {n: (small[n] + 1 if small[n] % 2 == 0 else small[n]) for n in small}
    out.append({**small, **{n: up[n] for n in large}})
    for n in sorted(large, key=lambda k: -small[k]):
        out.append({**small, n: odd[n]})
    unique: list[dict[str, int]] = []
    for d in out:
        if d != small and d not in unique:
            unique.append(d)
    return unique


def joints(base: dict[str, int], dims: list[str]) -> list[dict[str, int]]:
    return [
        {n: base[n] + JOINT_PRIMES[i % len(JOINT_PRIMES)] for i, n in enumerate(dims)},
        {n: 2 * base[n] for n in dims},
        {n: 3 * base[n] for n in dims},
    ]


def interpreter_sizes(path: str, shapes: list[list[Expr]], base: dict[str, int],
                      dims: list[str]) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """(small, ragged): the sizes the second child runs the reference at for real."""
    # the plain shrink first; then ones that leave one dimension alone, for a problem that ties it to a
    # constant (out_channels divisible by groups = in_channels)
    small: list[dict[str, int]] = []
    for keep in [None, *dims]:
        d = shrink(shapes, base, INTERPRETER_ELEMENTS, keep)
        if d not in small and elements(shapes, d) <= INTERPRETER_ELEMENTS:
            small.append(d)
    if not small:
        big = shrink(shapes, base, INTERPRETER_ELEMENTS)
        if elements(shapes, big) > MAX_INTERPRETER_ELEMENTS:
            raise TaskError(f"{path}: no shape is small enough for the CPU interpreter: at "
                            f"{big or 'the only sizes'} one call holds {elements(shapes, big):,.0f} elements "
                            "(sizes that depend on no dimension cannot shrink)")
        small.append(big)
    ragged = [r for d in small for r in ragged_variants(d, base)]
    ragged = [r for i, r in enumerate(ragged) if r not in ragged[:i] and r not in small]
    return small, ragged


@dataclass(frozen=True)
class SmallRuns:
    """The reference's real runs at interpreter sizes that the task keeps."""

    small: tuple[dict[str, int], dict[str, Any]]  # the small shape, and the run there
    ragged: list[tuple[dict[str, int], dict[str, Any]]]  # the ragged shapes that ran, nearest the small one first
    seed_forward: bool  # forward draws random numbers: two calls gave different outputs

    @property
    def chosen(self) -> list[tuple[dict[str, int], dict[str, Any]]]:
        """The runs of the shapes the task keeps: the small one and the nearest ragged one."""
        return [self.small, *self.ragged[:1]]


def kept_runs(path: str, reals: list[dict[str, int]], answers: list[dict[str, Any]], out_shapes: list[list[Expr]],
              small: list[dict[str, int]], ragged: list[dict[str, int]]) -> SmallRuns:
    """The second child's real runs that finished with finite outputs of the fitted shapes, and of those the
    small shape and the ragged ones the task keeps; TaskError when the reference runs at no small shape."""
    valid = []
    for d, r in zip(reals, answers):
        if not r["ok"]:
            continue
        if any(not o.get("finite", True) for o in r["outputs"]):
            continue
        expected = [[int(evaluate(e, d)) for e in s] for s in out_shapes]
        if [o.get("shape") for o in r["outputs"]] != expected:
            raise TaskError(f"{path}: at {d} the outputs have shapes {[o.get('shape') for o in r['outputs']]}, "
                            f"not the fitted {expected}")
        valid.append((d, r))
    small_ok = not_degenerate([(d, r) for d, r in valid if d in small])
    if not small_ok:
        why = next((r["error"] for r in answers if not r["ok"]), "NaN/Inf in the output")
        raise TaskError(f"{path}: the reference fails at interpreter sizes {small[0]}: {why}")
    small_dims = small_ok[0][0]
    ragged_ok = [(d, r) for d, r in valid if d in ragged]
    ragged_ok.sort(key=lambda v: sum(abs(v[0][k] - small_dims[k]) > 1 for k in small_dims))  # near the small one
    seed_forward = any(not o.get("same", True) for _, r in valid for o in r["outputs"])
    return SmallRuns(small_ok[0], ragged_ok, seed_forward)
