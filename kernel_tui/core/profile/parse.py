"""ncu's `--csv --page raw` log read into a Profile.

The raw page is one table: a header row ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name",
..., then one column per metric), a units row (blank under the non-metric columns), then one row per
profiled kernel launch. ncu's own messages (==PROF==, ==WARNING==, ==ERROR==) share the log. Values may
carry thousands separators ("1,234,567") or read "n/a". Every time and byte value is converted by its
column's unit, since ncu scales units unless told otherwise.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.profile.models import KernelProfile, Profile
from kernel_tui.core.profile.ncu import METRICS, Metric

# ncu's unit spellings (decimal prefixes: a Kbyte is 1000 bytes); the short forms are the details page's
TIME_UNITS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
              "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
BYTE_UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
PERCENT_UNITS = {"%"}

_VERSION = (re.compile(r"Nsight Compute[^\d\n]*(\d{4}\.\d+(?:\.\d+)*)"),
            re.compile(r"^\s*Version\s+(\d{4}\.\d+(?:\.\d+)*)", re.MULTILINE))


class ProfileError(KernelTuiError):
    """ncu's output could not be read as a profile."""


def ncu_version(text: str) -> str:
    """ncu's version where the log states it (its banner, or `ncu --version` output), else ""."""
    for pattern in _VERSION:
        if found := pattern.search(text):
            return found.group(1)
    return ""


def _table(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ProfileError("ncu's log holds no results table (no header row starting with \"ID\")")
    table = [lines[start], *(ln for ln in lines[start + 1:] if ln.startswith('"'))]  # rows are quoted
    try:
        return list(csv.reader(table))
    except csv.Error as exc:
        raise ProfileError(f"ncu's results table is not readable CSV: {exc}") from exc


def parse_ncu_csv(text: str) -> Profile:
    """The kernels of ncu's raw-page log; a metric the header lacks is listed in metrics_missing."""
    rows = _table(text)
    header = rows[0]
    if "Kernel Name" not in header:
        raise ProfileError("ncu's results table has no \"Kernel Name\" column")
    if len(rows) < 2:
        raise ProfileError("ncu's results table ends after its header (no units row)")
    units = rows[1]
    body = [r for r in rows[2:] if r != header and r != units]  # each process may repeat the header
    for r in (units, *body):
        if len(r) != len(header):
            raise ProfileError(f"a row of ncu's results has {len(r)} columns where the header has {len(header)}")
    column = {name: i for i, name in enumerate(header)}
    present = [m for m in METRICS if m.name in column]
    kernels = [_kernel(r, column, units, present) for r in body]
    return Profile(kernels=kernels, ncu_version=ncu_version(text),
                   metrics_missing=[m.name for m in METRICS if m.name not in column])


def _kernel(row: list[str], column: dict[str, int], units: list[str], present: list[Metric]) -> KernelProfile:
    fields: dict[str, Any] = {"name": row[column["Kernel Name"]]}
    if "ID" in column and (launch := _number(row[column["ID"]], "ID")) is not None:
        fields["id"] = int(launch)
    stalls: dict[str, float] = {}
    for m in present:
        value = _value(m, row[column[m.name]], units[column[m.name]])
        if value is None:
            continue
        if m.field == "stalls":
            stalls[m.reason] = value
        elif m.field == "tensor_pct":  # the busiest of the tensor pipes ncu reported
            fields["tensor_pct"] = max(value, fields.get("tensor_pct", value))
        elif m.field == "registers":
            fields["registers"] = round(value)
        else:
            fields[m.field] = value
    return KernelProfile(**fields, stalls=stalls)


def _value(m: Metric, raw: str, unit: str) -> float | None:
    value = _number(raw, m.name)
    if value is None:
        return None
    unit = unit.strip()
    if m.kind == "time":
        return value * _scale(TIME_UNITS, unit, m.name)
    if m.kind == "bytes":
        return value * _scale(BYTE_UNITS, unit, m.name)
    if m.kind == "percent" and unit not in PERCENT_UNITS:
        raise ProfileError(f"ncu reported {m.name} in {unit!r}, not in percent")
    return value


def _scale(table: dict[str, float], unit: str, name: str) -> float:
    if unit not in table:
        raise ProfileError(f"ncu reported {name} in an unknown unit {unit!r} (known: {', '.join(table)})")
    return table[unit]


def _number(raw: str, name: str) -> float | None:
    raw = raw.strip()
    if raw == "" or raw.lower() == "n/a":
        return None
    try:
        return float(raw.replace(",", ""))
    except ValueError:
        raise ProfileError(f"ncu's value for {name} is not a number: {raw!r}") from None
