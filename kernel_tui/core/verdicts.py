"""One vocabulary for what happened to a proposal, shared by the report, the history and every front end.

An evaluator status says how the evaluation ended; it does not say whether the gate took the candidate
("ok" is both an accept and a gate rejection). People are shown categories, never raw statuses.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_tui.core.records import TrajectoryLine

ACCEPTED = "accepted"
REJECTED_BY_GATE = "rejected_by_gate"
REJECTED_BY_PERSON = "rejected_by_person"
PENDING = "pending"

# Fixed display order: accepted, the two rejections, then the ways an evaluation can fail.
LABELS: dict[str, str] = {
    ACCEPTED: "accepted",
    REJECTED_BY_GATE: "rejected by the gate",
    REJECTED_BY_PERSON: "rejected by the person",
    "incorrect": "incorrect",
    "compile_error": "compile error",
    "runtime_error": "runtime error",
    "timeout": "timeout",
    "crashed": "crashed",
    "policy_violation": "policy violation",
    "sandbox_violation": "sandbox violation",
    "tampering": "tampering",
    "invalid_task": "invalid task",
    "evaluator_fault": "evaluator fault (not judged)",
    "cancelled": "cancelled",
    PENDING: "pending",
}
# Failed before or during evaluation: neither judged by the gate nor by a person.
FAILURES = tuple(c for c in LABELS if c not in (ACCEPTED, REJECTED_BY_GATE, REJECTED_BY_PERSON, PENDING))


# agent-status.json's run status, in words.
RUN_STATUS_LABELS = {"complete": "complete", "complete_with_warning": "complete, with warnings",
                     "incomplete": "incomplete"}


def verdict_category(line: TrajectoryLine) -> str:
    """The category of one verdict: an evaluator "ok" becomes accepted or rejected by the gate."""
    if line.accepted:
        return ACCEPTED
    status = str(getattr(line.status, "value", line.status))
    return REJECTED_BY_GATE if status == "ok" else status


def label(category: str) -> str:
    """Words for people; an unknown category (a newer record) is shown readable rather than raw."""
    return LABELS.get(category, category.replace("_", " "))


def run_status_label(status: str) -> str:
    return RUN_STATUS_LABELS.get(status, status.replace("_", " "))


def counts(lines: Iterable[TrajectoryLine]) -> dict[str, int]:
    """Verdicts per category, in the fixed order (unknown categories last, by name)."""
    found: dict[str, int] = {}
    for line in lines:
        found[verdict_category(line)] = found.get(verdict_category(line), 0) + 1
    order = list(LABELS)
    return dict(sorted(found.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0])))
