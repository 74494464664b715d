"""Running mean and variance, as Inductor's norms compute them (BatchNorm, GroupNorm, InstanceNorm): its kernels
call `triton_helpers.welford_reduce` (one more value into a running mean, M2 and count), `welford_combine` (two
partial results merged) and `welford` (a reduction of partial results along an axis). A start may import no
helper module, so the rewrite writes these three as jit functions of its own, beside the kernels: Welford's
update and Chan et al.'s merge of partial results.
"""

from __future__ import annotations

# triton_helpers' name -> the start's own function
NAMES = {"welford_reduce": "welford_step", "welford_combine": "welford_merge", "welford": "welford_along"}

SOURCE = '''@triton.jit
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
