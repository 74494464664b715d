"""Element-wise checks of a call's outputs, run by the judge on memory it owns: exact where they can be,
a chunk at a time so their temporaries stay bounded, and naming the first bad element."""

from __future__ import annotations

from collections.abc import Iterator

import torch

# Checks run over this many elements at a time: their temporaries (float64 copies, masks) stay bounded
# whatever the size of the tensors checked.
CHECK_CHUNK = 1 << 24


class CandidateFault(Exception):
    """A candidate did something wrong; `status` says what kind of wrong."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for n in reversed(shape):
        idx.append(flat_index % n)
        flat_index //= n
    return tuple(reversed(idx))


def _chunks(*tensors: torch.Tensor) -> Iterator[tuple[torch.Tensor, ...]]:
    """Matching pieces of at most CHECK_CHUNK elements of the flattened tensors (broadcast first when
    their shapes differ). Contiguous tensors are sliced as they are; others are copied once."""
    if len({tuple(t.shape) for t in tensors}) > 1:
        tensors = tuple(torch.broadcast_tensors(*tensors))
    flats = [t.detach().reshape(-1) for t in tensors]
    step = CHECK_CHUNK
    for start in range(0, flats[0].numel(), step):
        yield tuple(f[start : start + step] for f in flats)


def _all_flag(flags: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """A device bool: every flag True (True for none)."""
    return torch.stack(flags).all() if flags else torch.ones((), dtype=torch.bool, device=device)


def _close(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Per element: |out - expected| <= atol + rtol * |expected|, NaN where NaN is expected, the same
    Inf where Inf is. Floats of 32 bits or fewer are compared in float32 (exact for their values);
    anything else in float64. Full size: the checks use it a chunk at a time."""
    wide = out.dtype.is_floating_point and out.dtype.itemsize <= 4 and expected.dtype.itemsize <= 4
    dtype = torch.float32 if wide else torch.float64
    o = out.detach().to(dtype)
    e = expected.detach().to(o.device, dtype)
    return torch.isclose(o, e, rtol=rtol, atol=atol, equal_nan=True)


def _close_flag(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """A device bool: `_close` everywhere. No host sync."""
    flags = [_close(o, e, atol, rtol).all() for o, e in _chunks(out, expected)]
    return _all_flag(flags, out.device)


def _count_not_close(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> int:
    """Elements where `_close` is False."""
    count = torch.zeros((), dtype=torch.int64, device=out.device)
    for o, e in _chunks(out, expected):
        count += (~_close(o, e, atol, rtol)).sum()
    return int(count)


def _zeros_close_flag(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """A device bool: an all-zeros `out` (its dtype and device) would be `_close` to `expected`."""
    flags = []
    for (e,) in _chunks(expected):
        zeros = torch.zeros(e.shape, dtype=out.dtype, device=out.device)
        flags.append(_close(zeros, e, atol, rtol).all())
    return _all_flag(flags, out.device)


def _equal_flag(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A device bool: `(a == b).all()` (NaN differs from itself). No host sync."""
    return _all_flag([(x == y).all() for x, y in _chunks(a, b)], a.device)


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """`torch.equal`, a chunk at a time."""
    if a.shape != b.shape:
        return torch.equal(a, b)
    return all(torch.equal(x, y) for x, y in _chunks(a, b))


def _abs_max(t: torch.Tensor) -> float:
    """max |t| as a float, without a full-size copy."""
    if t.dtype == torch.bool:
        return float(t.any())
    lo, hi = t.detach().aminmax()
    return float(max(abs(lo.item()), abs(hi.item())))


def compare(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, what: str) -> float:
    """Raise CandidateFault naming the first bad element; return the max abs error. Elements are
    compared in float64, a chunk at a time."""
    n_nonfinite = n_bad = 0
    first_nonfinite: tuple[int, str] | None = None  # flat index, NaN or Inf
    first_bad: tuple[int, float, float] | None = None  # flat index, got, expected
    max_abs = 0.0
    start = 0
    for oc, ec in _chunks(out, expected):
        o = oc.to(torch.float64)
        e = ec.to(o.device, torch.float64)
        finite_expected = torch.isfinite(e)
        nonfinite = ~torch.isfinite(o) & finite_expected
        mismatched_special = ~finite_expected & ~((o == e) | (torch.isnan(o) & torch.isnan(e)))
        diff = (o - e).abs_().masked_fill_(~finite_expected, 0.0)
        bad = (diff > e.abs().nan_to_num_(0.0).mul_(rtol).add_(atol)) | mismatched_special
        # one sync per chunk; counts of at most CHECK_CHUNK are exact in float64
        nonfinite_count, bad_count, chunk_max = torch.stack(
            [nonfinite.sum().double(), bad.sum().double(), diff.max()]).tolist()
        n_nonfinite += int(nonfinite_count)
        n_bad += int(bad_count)
        max_abs = max(max_abs, chunk_max)
        if nonfinite_count and first_nonfinite is None:
            i = int(nonfinite.nonzero()[0])
            first_nonfinite = (start + i, "NaN" if bool(torch.isnan(o[i])) else "Inf")
        if bad_count and first_bad is None:
            i = int(bad.nonzero()[0])
            first_bad = (start + i, float(o[i]), float(e[i]))
        start += o.numel()
    if first_nonfinite is not None:
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_nonfinite} of {out.numel()} elements are NaN/Inf (unwritten or invalid), "
            f"first at {_index(first_nonfinite[0], tuple(out.shape))} ({first_nonfinite[1]})",
        )
    if first_bad is not None:
        raise CandidateFault(
            "incorrect",
            f"{what}: {n_bad} of {out.numel()} elements differ beyond atol={atol:g} rtol={rtol:g}; "
            f"max abs error {max_abs:.3g}, first at {_index(first_bad[0], tuple(out.shape))}: "
            f"got {first_bad[1]:.6g}, expected {first_bad[2]:.6g}",
        )
    return max_abs
