"""Inductor's own jit helpers that have no single `tl` form, written anew as the start's own jit functions (a start
may import no helper module). Each group is written into the start once, beside the kernels, when a kernel
calls one of its functions:

- "welford": running mean and variance as the norms compute them (BatchNorm, GroupNorm, InstanceNorm):
  `welford_reduce` (one more value into a running mean, M2 and count), `welford_combine` (two partial results
  merged) and `welford` (a reduction of partial results along an axis). Welford's update and Chan et al.'s merge.
- "max_index", "min_index": the running maximum (minimum) with its index, as max/min/argmax/argmin over a
  dimension compute it: `maximum_with_index` (two (value, index) pairs, the larger), `max_with_index` (a
  reduction of such pairs along an axis). As torch's: a NaN counts as the largest (smallest), and of equal values
  the first index wins.
- "select": `select_one` (the one element of each row where a mask holds, as a scan's last value carried into
  the next block), as a masked sum cast back to the value's type: exact where one element is selected, but for
  the sign of a selected -0.0.
- "integer": `floor_divide` and `floor_remainder` (`div_floor_integer`, `remainder_integer`: Python's // and % on
  integers, rounding toward negative infinity, as a pooling's output size with a negative numerator needs),
  from Triton's integer // corrected by the remainder's sign, so right whether // truncates (compiled) or floors.
"""

from __future__ import annotations

# triton_helpers' name -> (the start's own function, the group that defines it)
FUNCTIONS = {
    "welford_reduce": ("welford_step", "welford"),
    "welford_combine": ("welford_merge", "welford"),
    "welford": ("welford_along", "welford"),
    "maximum_with_index": ("larger_with_index", "max_index"),
    "max_with_index": ("largest_with_index", "max_index"),
    "minimum_with_index": ("smaller_with_index", "min_index"),
    "min_with_index": ("smallest_with_index", "min_index"),
    "select_one": ("select_one", "select"),
    "div_floor_integer": ("floor_divide", "integer"),
    "remainder_integer": ("floor_remainder", "integer"),
}

_WELFORD = '''@triton.jit
def welford_step(value, mean, m2, count, first):
    """One more value into a running (mean, M2, count). From zeros it starts the run, so `first` is not needed."""
    n = count + 1
    delta = value - mean
    new_mean = mean + delta / n
    return new_mean, m2 + delta * (value - new_mean), n


@triton.jit
def welford_merge(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    """Two partial (mean, M2, count) as one; empty parts weigh nothing."""
    n = n_a + n_b
    share_b = tl.where(n == 0.0, 0.0, n_b / n)
    delta = mean_b - mean_a
    return mean_a + delta * share_b, m2_a + m2_b + delta * delta * n_a * share_b, n


@triton.jit
def welford_along(mean, m2, count, axis: tl.constexpr):
    """The partial results along `axis` merged into one."""
    return tl.reduce((mean, m2, count), axis, welford_merge)
'''

_INDEXED = '''@triton.jit
def {pair}(a, a_index, b, b_index):
    """Of two (value, index) pairs the {word} (a NaN counts as {word}); of equal values, the lower index."""
    a_nan = a != a
    b_nan = b != b
    wins = (a {op} b) | (a_nan & ~b_nan)
    tie = (a == b) | (a_nan & b_nan)
    take_a = wins | (tie & (a_index <= b_index))
    return tl.where(take_a, a, b), tl.where(take_a, a_index, b_index)


@triton.jit
def {along}(value, index, axis: tl.constexpr):
    """The {word} (value, index) pair along `axis`."""
    return tl.reduce((value, index), axis, {pair})
'''

_SELECT = '''@triton.jit
def select_one(x, mask, dim: tl.constexpr, keep_dims: tl.constexpr = False):
    """The element of `x` where `mask` holds along `dim` (one per row): the others add zero."""
    return tl.sum(tl.where(mask, x, 0), dim, keep_dims=keep_dims).to(x.dtype)
'''

_INTEGER = '''@triton.jit
def floor_divide(a, b):
    """a // b rounded toward negative infinity (Python's), for integers."""
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def floor_remainder(a, b):
    """a % b with the sign of b (Python's), for integers."""
    return a - floor_divide(a, b) * b
'''

SOURCES = {
    "integer": _INTEGER,
    "select": _SELECT,
    "welford": _WELFORD,
    "max_index": _INDEXED.format(pair="larger_with_index", along="largest_with_index", word="larger", op=">"),
    "min_index": _INDEXED.format(pair="smaller_with_index", along="smallest_with_index", word="smaller", op="<"),
}
