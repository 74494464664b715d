"""One log line from a `kernel-tui eval --json` file, for the bench scripts that take single gate decisions:

    python3 bench/eval_line.py NAME EVAL.json   ->   NAME accepted start 12.3 us, candidate 10.1 us; REASON

Exits 1 with nothing printed where the file holds no decision (the eval was cut off or failed), so that the
caller says why in its own words."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REASON_CHARS = 200


def line(name: str, decision: dict) -> str:
    times = ""
    if decision.get("candidate_seconds"):
        times = (f"start {decision['incumbent_seconds'] * 1e6:.1f} us, "
                 f"candidate {decision['candidate_seconds'] * 1e6:.1f} us; ")
    return f"{name} {decision['status']} {times}{decision['reason'][:REASON_CHARS]}"


def main(argv: list[str]) -> int:
    name, path = argv
    try:
        decision = json.loads(Path(path).read_text(encoding="utf-8"))
        print(line(name, decision))
    except (OSError, ValueError, KeyError, TypeError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
