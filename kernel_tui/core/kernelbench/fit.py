"""Fit integers measured at perturbed dimensions with an expression over the dimension names.

Each axis (and each operator's FLOP count) was measured at the problem's own sizes, at sizes with one
dimension moved at a time, and at sizes with all of them moved together. A fit proposes a form from the
one-at-a-time measurements and is kept only if it reproduces every measurement exactly:
- a literal, when nothing moves it;
- affine with integer coefficients, `2 * H + K - 1` (transposed convolutions, concatenations);
- floor-affine, `(H + 2 - K) // 2` (strided convolutions and pooling), for divisors up to 32, and
  such a form scaled, `2 * (D // 2)`;
- a monomial, `2 * M * N * K`, `C * H * W`, exponents from log ratios, integer or 1/integer coefficient.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kernel_tui.core.expressions import ExpressionError, evaluate

Dims = Mapping[str, int]
Expr = str | int


@dataclass(frozen=True)
class Sample:
    dims: dict[str, int]
    value: int


def _only_moved(base: Dims, dims: Dims) -> str | None:
    moved = [k for k in base if dims.get(k) != base[k]]
    return moved[0] if len(moved) == 1 else None


def _holds(expr: Expr, samples: Sequence[Sample]) -> bool:
    for s in samples:
        try:
            v = evaluate(expr, s.dims)
        except ExpressionError:
            return False
        if not isinstance(v, int) or v != s.value:
            return False
    return True


def _linear(coeffs: Mapping[str, int], order: Sequence[str]) -> str:
    parts: list[str] = []
    for name in order:
        a = coeffs.get(name, 0)
        if a == 0:
            continue
        term = name if abs(a) == 1 else f"{abs(a)} * {name}"
        if not parts:
            parts.append(term if a > 0 else f"-{term}")
        else:
            parts.append(f"+ {term}" if a > 0 else f"- {term}")
    return " ".join(parts)


def _with_constant(text: str, c: int) -> str:
    if c == 0:
        return text
    return f"{text} + {c}" if c > 0 else f"{text} - {-c}"


def fit(samples: Sequence[Sample], base: Dims, order: Sequence[str], *, scaled: bool = True) -> Expr | None:
    """The simplest expression over `order`'s names that reproduces every sample, or None."""
    base_value = next(s.value for s in samples if dict(s.dims) == dict(base))
    slopes: dict[str, list[Fraction]] = {}
    for s in samples:
        name = _only_moved(base, s.dims)
        if name is not None:
            slopes.setdefault(name, []).append(Fraction(s.value - base_value, s.dims[name] - base[name]))
    moved = [n for n in order if any(f != 0 for f in slopes.get(n, []))]
    if not moved:
        return base_value if _holds(base_value, samples) else None
    # affine, integer coefficients
    if all(len(set(slopes[n])) == 1 and slopes[n][0].denominator == 1 for n in moved):
        coeffs = {n: int(slopes[n][0]) for n in moved}
        c = base_value - sum(coeffs[n] * base[n] for n in moved)
        expr = _with_constant(_linear(coeffs, order), c)
        if _holds(expr, samples):
            return expr
    # floor-affine: the slope over the widest move, times the divisor, is the coefficient
    widest = {n: max((s for s in samples if _only_moved(base, s.dims) == n), key=lambda s: abs(s.dims[n] - base[n]))
              for n in moved}
    for div in range(2, 33):
        coeffs = {}
        for n in moved:
            s = widest[n]
            coeffs[n] = round(Fraction(s.value - base_value, s.dims[n] - base[n]) * div)
        if any(a == 0 for a in coeffs.values()):
            continue
        low = base_value * div - sum(coeffs[n] * base[n] for n in moved)
        for c in range(low, low + div):
            expr = f"({_with_constant(_linear(coeffs, order), c)}) // {div}"
            if _holds(expr, samples):
                return expr
    return _monomial(samples, base, base_value, moved, order) or (_scaled_floor(samples, base, order) if scaled else None)


def _scaled_floor(samples: Sequence[Sample], base: Dims, order: Sequence[str]) -> Expr | None:
    """`m * (inner) + r`: a floor form scaled after flooring (pooling by 2, then a transposed
    convolution with stride 2 gives 2 * (D // 2))."""
    for m in (2, 3, 4):
        r = samples[0].value % m
        if any(s.value % m != r for s in samples):
            continue
        inner = fit([Sample(s.dims, s.value // m) for s in samples], base, order, scaled=False)
        if isinstance(inner, str) and "//" in inner:
            expr = _with_constant(f"{m} * ({inner})", r)
            if _holds(expr, samples):
                return expr
    return None


def _monomial(samples: Sequence[Sample], base: Dims, base_value: int, moved: list[str], order: Sequence[str]) -> Expr | None:
    if base_value <= 0:
        return None
    exps: dict[str, int] = {}
    for n in moved:
        s = next((s for s in samples if _only_moved(base, s.dims) == n and s.value > 0), None)
        if s is None:
            return None
        e = math.log(s.value / base_value) / math.log(s.dims[n] / base[n])
        if abs(e - round(e)) > 0.02 or round(e) == 0:
            return None
        exps[n] = round(e)
    prod = Fraction(1)
    for n, e in exps.items():
        prod *= Fraction(base[n]) ** e
    coeff = Fraction(base_value) / prod
    factors = [n if exps[n] == 1 else f"{n} ** {exps[n]}" for n in order if exps.get(n, 0) > 0]
    divisors = [n if exps[n] == -1 else f"{n} ** {-exps[n]}" for n in order if exps.get(n, 0) < 0]
    head = " * ".join(([str(coeff.numerator)] if coeff.numerator != 1 else []) + factors) or "1"
    below = [str(coeff.denominator)] if coeff.denominator != 1 else []
    below += divisors
    expr = head if not below else f"{head} // ({' * '.join(below)})" if len(below) > 1 else f"{head} // {below[0]}"
    return expr if _holds(expr, samples) else None


def fit_scaled(samples: Sequence[Sample], base: Dims, order: Sequence[str], factors: Sequence[str]) -> Expr | None:
    """`fit`, else a monomial times up to three of `factors` (a convolution's FLOPs are a product with
    its output's floor-expression sizes)."""
    expr = fit(samples, base, order)
    if expr is not None:
        return expr
    for k in (1, 2, 3):
        for combo in itertools.combinations(factors, k):
            rest = []
            for s in samples:
                try:
                    f = math.prod(int(evaluate(e, s.dims)) for e in combo)
                except ExpressionError:
                    break
                if f <= 0 or s.value % f:
                    break
                rest.append(Sample(s.dims, s.value // f))
            else:
                head = fit(rest, base, order)
                if head is None:
                    continue
                scaled = " * ".join([str(head) if isinstance(head, int) or head.replace(" * ", "").isidentifier()
                                     or "+" not in head and "-" not in head and "//" not in head else f"({head})"]
                                    + [f"({e})" for e in combo])
                if _holds(scaled, samples):
                    return scaled
    return None


def fit_sum(series: Mapping[str, Sequence[Sample]], base: Dims, order: Sequence[str],
            factors: Sequence[str] = ()) -> str | None:
    """A sum of per-key fits (FLOPs per operator), or None when one key does not fit."""
    parts = []
    for key in sorted(series):
        expr = fit_scaled(series[key], base, order, factors)
        if expr is None:
            return None
        if expr != 0:
            parts.append(str(expr) if isinstance(expr, int) or "+" not in expr and "-" not in expr else f"({expr})")
    return " + ".join(parts) if parts else "0"


def product(exprs: Sequence[Expr]) -> Expr:
    """The product of shape entries as one expression (literal factors folded)."""
    lit = math.prod(e for e in exprs if isinstance(e, int))
    names = [e if e.isidentifier() else f"({e})" for e in exprs if isinstance(e, str)]
    if not names or lit == 0:
        return lit
    return " * ".join(([str(lit)] if lit != 1 else []) + names)

