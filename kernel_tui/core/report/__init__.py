"""The run report: report.md and three PNG figures, made from one workspace's own records only.

Nothing here may fail on a partial workspace: an interrupted run still gets a report, which says which
records are missing or unreadable. Three quantities are kept apart everywhere, as the method requires:
each candidate's own latency, the accepted version's latency (the record, which changes only on an
accept) and the gate's paired improvement estimate. matplotlib is imported lazily with the Agg backend.

The package: `records` (reading the workspace, the derived figures), `markdown` (report.md), `figures`
(the PNGs), `text` (how both write numbers).
"""

from __future__ import annotations

from pathlib import Path

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.report.figures import FIGURES, REJECTED, draw_figures, x_positions
from kernel_tui.core.report.markdown import _section_environment as _section_environment  # for tests
from kernel_tui.core.report.markdown import render_markdown
from kernel_tui.core.report.records import (
    RunRecords,
    accepted_record,
    category,
    is_interpreter,
    load_records,
    status_counts,
)
from kernel_tui.core.report.text import format_latency
from kernel_tui.core.verdicts import ACCEPTED

__all__ = [
    "ACCEPTED",
    "FIGURES",
    "REJECTED",
    "ReportError",
    "RunRecords",
    "accepted_record",
    "category",
    "format_latency",
    "is_interpreter",
    "load_records",
    "render_markdown",
    "status_counts",
    "write_report",
    "x_positions",
]


class ReportError(KernelTuiError):
    """A report that cannot be written at all (no such workspace directory)."""


def write_report(workspace: Path) -> list[Path]:
    """Write report.md and the three figures into the workspace; returns the written paths."""
    ws = Path(workspace)
    if not ws.is_dir():
        raise ReportError(f"{ws}: no such workspace directory")
    records = load_records(ws)
    written, notes = draw_figures(ws, records)
    report = ws / "report.md"
    report.write_text(render_markdown(records, notes), encoding="utf-8")
    return [report, *written]
