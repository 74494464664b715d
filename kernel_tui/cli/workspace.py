"""`kernel-tui history`, `restore` and `report`: a workspace's versions listed, an old one made the incumbent
again, its report written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernel_tui.cli.exits import EXIT_OK
from kernel_tui.cli.options import examples
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.format import duration, percent


def add_parsers(sub) -> None:
    """`history`, `restore` and `report`."""
    p = sub.add_parser("history", help="accepted versions of a workspace (--all: every proposal)",
                       **examples("kernel-tui history workspaces/vector_add-20261202-0930 --all"))
    p.add_argument("workspace", help="the workspace directory")
    p.add_argument("--all", action="store_true",
                   help="every proposal with its verdict (default: the accepted lineage, newest first)")
    p.add_argument("--json", action="store_true", help="print the versions as one JSON list")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("restore", help="make an old version the incumbent again (a new commit on best)",
                       **examples("kernel-tui restore workspaces/vector_add-20261202-0930 3f2a91c"))
    p.add_argument("workspace", help="the workspace directory")
    p.add_argument("rev", help="a commit (short sha) or ref")
    p.add_argument("--name", help="your name for the restore commit (default: your git identity)")
    p.add_argument("--email", help="your email for the restore commit (default: your git identity)")
    p.add_argument("--force", action="store_true", help="restore a version that was never measured (a draft, a failure)")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("report", help="write report.md and the plots of a workspace",
                       description="Writes WORKSPACE/report.md (the run: rounds, verdicts, the final re-test, the "
                                   "best source) and its figures beside it: rounds_overview.png, "
                                   "process_timeline.png, status_breakdown.png, roofline.png; prints each path "
                                   "written. A run writes them itself when it ends; this writes them again.",
                       **examples("kernel-tui report workspaces/vector_add-20261202-0930"))
    p.add_argument("workspace", help="the workspace directory")
    p.set_defaults(func=cmd_report)


def cmd_history(args) -> int:
    from kernel_tui.core.history import (
        BASE_HEADING,
        FIGURES_LEGEND,
        GATE_HEADING,
        accepted_versions,
        all_proposals,
        version_status,
    )
    from kernel_tui.core.workspace import Workspace

    ws = Workspace.open(Path(args.workspace))
    versions = all_proposals(ws) if args.all else accepted_versions(ws)
    if args.json:
        print(json.dumps([v.model_dump() for v in versions]))
        return EXIT_OK
    print(("every proposal" if args.all else "accepted versions (newest first)") + f" — {ws.root}")
    print(f"{'commit':8}  {'round':>5}  {'status':22}  {'latency':>10}  {GATE_HEADING:>12}  {BASE_HEADING:>12}  proposer / change")
    for v in versions:
        print(f"{v.commit[:8]}  {v.round if v.round is not None else '-':>5}  {version_status(v):22}  {duration(v.latency):>10}  "
              f"{percent(v.vs_previous):>12}  {percent(v.vs_baseline):>12}  {v.proposer}: {v.change}")
    print(FIGURES_LEGEND)
    return EXIT_OK


def cmd_restore(args) -> int:
    import git

    from kernel_tui.core.workspace import Workspace, person_identity

    ws = Workspace.open(Path(args.workspace))
    ws.lock()
    try:
        try:
            ws.repo.commit(args.rev)
        except (git.BadName, ValueError):
            raise KernelTuiError(f"{args.rev}: no such version in {ws.root}") from None
        _warn_unmeasured(ws, args.rev, args.force)
        person = person_identity(args.name, args.email)
        commit = ws.restore(args.rev, person)
    finally:
        ws.unlock()
    print(f"best is now {commit.hexsha[:8]}: {ws.proposal_info(commit)[0]}")
    return EXIT_OK


def _warn_unmeasured(ws, rev: str, force: bool) -> None:
    """An unmeasured version would become the incumbent every later candidate is judged against."""
    from kernel_tui.core.history import unmeasured, version_at

    why = unmeasured(version_at(ws, rev))
    if not why:
        return
    print(f"kernel-tui: warning: {rev}: {why}; as the incumbent it has no latency to compare against", file=sys.stderr)
    if not force:
        raise KernelTuiError(f"{rev}: not restored; pass --force to restore it anyway")


def cmd_report(args) -> int:
    from kernel_tui.core.report import write_report
    from kernel_tui.core.workspace import Workspace

    ws = Workspace.open(Path(args.workspace))
    for path in write_report(ws.root):
        print(path)
    return EXIT_OK
