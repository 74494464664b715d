"""Profiles in words: what changed between two, a profile's summary lines, and its row of a report table."""

from __future__ import annotations

from kernel_tui.core.format import DASH, decimal_bytes, latency
from kernel_tui.core.profile.models import Profile, stall_label

# Changes smaller than these are left out as noise: relative ones (time, traffic, registers), percentage
# points (throughputs, occupancy, hit rates), and a stall reason's relative change, which counts only for
# a reason holding at least STALL_MIN_SHARE of the stall cycles on one side.
MIN_RELATIVE_CHANGE = 0.05
MIN_POINTS_CHANGE = 5.0
STALL_MIN_CHANGE = 0.10
STALL_MIN_SHARE = 0.10

_PERCENTAGES = (  # Profile attribute, label, suffix
    ("dram_pct", "DRAM throughput", " of peak"),
    ("sm_pct", "SM throughput", " of peak"),
    ("tensor_pct", "tensor pipe", " of peak"),
    ("occupancy_pct", "achieved occupancy", ""),
    ("l1_hit_pct", "L1 hit rate", ""),
    ("l2_hit_pct", "L2 hit rate", ""),
)


def _signed(ratio: float) -> str:
    return f"{ratio:+.0%}".replace("-", "−")


def _pct(v: float) -> str:
    return f"{v:.0f}%"


def compare_profiles(old: Profile, new: Profile) -> list[str]:
    """What changed from old to new that matters, largest first. A change's size is its relative change
    (at most 1, so a growth does not outrank everything), percentage points / 100, or for a stall reason
    its relative change times its share of the stall cycles."""
    changes: list[tuple[float, str]] = []
    for name, o, n, show in (
        ("kernel time", old.total_duration_s, new.total_duration_s, latency),
        ("DRAM traffic", old.total_dram_bytes, new.total_dram_bytes, decimal_bytes),
        ("registers per thread", old.registers, new.registers, str),
    ):
        if o is not None and n is not None and o > 0 and abs(r := n / o - 1) >= MIN_RELATIVE_CHANGE:
            changes.append((min(abs(r), 1.0), f"{name} {show(o)} → {show(n)} ({_signed(r)})"))
    if (ko := len(old.kernels)) != (kn := len(new.kernels)) and ko and kn:
        changes.append((abs(kn - ko) / max(ko, kn), f"kernel launches {ko} → {kn}"))
    for attr, label, suffix in _PERCENTAGES:
        o, n = getattr(old, attr), getattr(new, attr)
        if o is not None and n is not None and abs(n - o) >= MIN_POINTS_CHANGE:
            changes.append((abs(n - o) / 100, f"{label} {_pct(o)} → {_pct(n)}{suffix}"))
    changes += _stall_changes(old, new)
    return [line for _, line in sorted(changes, key=lambda c: c[0], reverse=True)]


def _stall_changes(old: Profile, new: Profile) -> list[tuple[float, str]]:
    cycles_old, cycles_new = old.stall_cycles(), new.stall_cycles()
    share_old, share_new = dict(old.top_stalls(len(cycles_old))), dict(new.top_stalls(len(cycles_new)))
    out = []
    for reason, o in cycles_old.items():
        n = cycles_new.get(reason)
        share = max(share_old.get(reason, 0.0), share_new.get(reason, 0.0))
        if n is None or o <= 0 or share < STALL_MIN_SHARE:
            continue
        if abs(r := n / o - 1) >= STALL_MIN_CHANGE:
            out.append((min(abs(r), 1.0) * share, f"{stall_label(reason)} stalls {_signed(r)}"))
    return out


def _stalls_text(profile: Profile, n: int = 3) -> str:
    return ", ".join(f"{stall_label(r)} {share:.0%}" for r, share in profile.top_stalls(n))


def _join(parts: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{label} {value}" for label, value in parts if value is not None)


def summary_lines(profile: Profile) -> list[str]:
    """A few lines for a person: time, bottleneck, DRAM, SM and tensor, occupancy and caches, stalls,
    registers. A figure ncu did not report is left out."""
    launches, total = len(profile.kernels), profile.total_duration_s
    lines = [f"time {latency(total)} over {launches} kernel launch{'es' if launches != 1 else ''}",
             f"bottleneck: {profile.bottleneck_hint()}"]
    dram_bytes, dram, sm, tensor = profile.total_dram_bytes, profile.dram_pct, profile.sm_pct, profile.tensor_pct
    if dram_bytes is not None:
        dram_line = f"DRAM {decimal_bytes(dram_bytes)}" + (f" at {_pct(dram)} of peak" if dram is not None else "")
    else:
        dram_line = f"DRAM throughput {_pct(dram)} of peak" if dram is not None else ""
    candidates = [
        dram_line,
        _join([("SM", f"{_pct(sm)} of peak" if sm is not None else None),
               ("tensor pipe", _pct(tensor) if tensor is not None else None)]),
        _join([(label, _pct(v) if (v := getattr(profile, attr)) is not None else None)
               for attr, label in (("occupancy_pct", "occupancy"), ("l1_hit_pct", "L1 hit"), ("l2_hit_pct", "L2 hit"))]),
        f"stalls: {stalls}" if (stalls := _stalls_text(profile)) else "",
        f"registers {profile.registers} per thread" if profile.registers is not None else "",
    ]
    lines += [c for c in candidates if c]
    if profile.metrics_missing:
        lines.append(f"not reported by ncu: {len(profile.metrics_missing)} of the metrics asked")
    return lines


def profile_table_row(profile: Profile) -> dict[str, str]:
    """One profile as a row of a markdown table ("—" where ncu reported nothing)."""

    def pct(v: float | None) -> str:
        return _pct(v) if v is not None else DASH

    total, dram_bytes, top = profile.total_duration_s, profile.total_dram_bytes, profile.top_stalls(1)
    return {
        "kernels": str(len(profile.kernels)),
        "time": latency(total, DASH),
        "DRAM %": pct(profile.dram_pct),
        "DRAM bytes": decimal_bytes(dram_bytes) if dram_bytes is not None else DASH,
        "SM %": pct(profile.sm_pct),
        "tensor %": pct(profile.tensor_pct),
        "occupancy": pct(profile.occupancy_pct),
        "L2 hit": pct(profile.l2_hit_pct),
        "top stall": f"{stall_label(top[0][0])} ({top[0][1]:.0%})" if top else DASH,
    }
