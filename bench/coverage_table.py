"""The Inductor-start coverage of KernelBench as a table: each line of a coverage.tsv that
bench/gpu_inductor_coverage.sh wrote is put in one class, by its status and the one line kernel-tui printed,
with convolution problems apart (Inductor leaves a convolution to cuDNN or fixes its weight's sizes at the
captured shape, so such a problem keeps its eager start).

    python3 bench/coverage_table.py RAW/coverage.tsv [--pending RAW/alone.txt]

--pending names the problems still queued to run alone (one KernelBench path a line); they are counted as
not reached."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

# (class, what the table says, the test on status and line): the first that matches wins
CLASSES: list[tuple[str, str, Callable[[str, str], bool]]] = [
    ("started", "**started**, correct on the GPU at every task shape", lambda s, ln: s == "started"),
    ("fixed", "kept: a size Inductor fixed at the captured shape moves with the task's shapes",
     lambda s, ln: "fixed dimension" in ln),
    ("extern", "kept: an op stays a library call (extern)", lambda s, ln: "extern call" in ln),
    ("incorrect", "kept: the rewritten start is incorrect at the task's tolerance", lambda s, ln: "is incorrect" in ln),
    ("memory", "kept: out of GPU memory", lambda s, ln: "out of memory" in ln or "OutOfMemoryError" in ln
     or "does not fit in device memory" in ln),
    ("random", "kept: forward draws random numbers (torch.compile's stream is not eager's)",
     lambda s, ln: "random numbers" in ln),
    ("compile", "kept: torch.compile itself failed", lambda s, ln: "torch.compile failed" in ln),
    ("not imported", "not imported", lambda s, ln: s == "not imported"),
    ("timeout", "timeout", lambda s, ln: s == "timeout"),
    ("other", "kept or refused, other", lambda s, ln: True),
]
PENDING = ("pending", "queued to run alone (GPU memory), not reached")


def classify(status: str, line: str) -> str:
    return next(name for name, _, test in CLASSES if test(status, line))


def is_conv(key: str) -> bool:
    return re.search("conv", key, re.IGNORECASE) is not None


def number(key: str) -> int:
    """level1/19_ReLU -> 19"""
    return int(key.split("/", 1)[1].split("_", 1)[0])


def ranges(numbers: Iterable[int]) -> str:
    """1, 2, 3, 5 -> '1–3, 5'"""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and (m := re.fullmatch(r"(\d+)(?:–(\d+))?", out[-1])) and int(m.group(2) or m.group(1)) == n - 1:
            out[-1] = f"{m.group(1)}–{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def table(rows: list[tuple[str, str, str]], pending: Iterable[str] = ()) -> str:
    """rows: (LEVEL/PROBLEM, status, line); pending: LEVEL/PROBLEM keys not yet run. Markdown: one table of
    outcomes by level, then each level's share started, overall and without convolutions."""
    seen: dict[str, str] = {}
    for key, status, line in rows:
        seen[key] = classify(status, line)  # a later line for a problem (a re-run) replaces the earlier
    for key in pending:
        seen.setdefault(key, PENDING[0])
    said = {name: text for name, text, _ in CLASSES} | dict([PENDING])
    by: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, cls in seen.items():
        by[key.split("/", 1)[0], cls].append(key)
    out = ["| level | outcome | conv | other | problems (number) |", "|---|---|---|---|---|"]
    summary = []
    for level in sorted({key.split("/", 1)[0] for key in seen}):
        for cls in [name for name, _, _ in CLASSES] + [PENDING[0]]:
            keys = by.get((level, cls), [])
            if keys:
                conv = [k for k in keys if is_conv(k)]
                out.append(f"| {level.removeprefix('level')} | {said[cls]} | {len(conv)} | {len(keys) - len(conv)} | "
                           f"{ranges(number(k) for k in keys)} |")
        keys = [k for k in seen if k.startswith(level + "/")]
        other = [k for k in keys if not is_conv(k)]
        started = len(by.get((level, "started"), []))
        summary.append(f"- {level}: **{started} of {len(keys)} started ({100 * started / len(keys):.0f}%)**; "
                       f"{len(keys) - len(other)} have a convolution, so at most {len(other)} of {len(keys)} "
                       f"({100 * len(other) / len(keys):.0f}%) can; of the {len(other)} without one, {started} "
                       f"started ({100 * started / max(len(other), 1):.0f}%)")
    return "\n".join(out + [""] + summary) + "\n"


def read_rows(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            key, status, line = (raw.split("\t") + ["", ""])[:3]
            rows.append((key, status, line))
    return rows


def pending_keys(path: Path | None) -> list[str]:
    """KernelBench paths (…/level1/19_ReLU.py) -> level1/19_ReLU"""
    if path is None or not path.exists():
        return []
    return [f"{Path(p).parent.name}/{Path(p).stem}" for p in path.read_text().split()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tsv", type=Path)
    parser.add_argument("--pending", type=Path, help="the problems still queued to run alone")
    args = parser.parse_args(argv)
    print(table(read_rows(args.tsv), pending_keys(args.pending)), end="")


if __name__ == "__main__":
    main()
