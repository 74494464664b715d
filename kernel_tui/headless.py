"""Headless front end: the Session loop with auto-approval, rendered as lines on the terminal."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.verdicts import label, verdict_category
from kernel_tui.format import duration

if TYPE_CHECKING:  # the engine loads when a run starts: the CLI imports this module before the screen opens
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.proposers.base import Proposer
    from kernel_tui.core.session import Event
    from kernel_tui.core.workspace import Workspace


def check_target(target: Path, workspace: Path | None) -> Workspace | None:
    """Refuse what open_or_create would refuse, creating nothing: the resumed workspace (tried for its lock,
    left unlocked), or None for a task directory that starts a new one."""
    from kernel_tui.core.task import load_task
    from kernel_tui.core.workspace import Workspace

    if not target.exists():
        raise KernelTuiError(f"{target}: no such directory")
    if Workspace.is_workspace(target):
        if workspace is not None and workspace.resolve() != target.resolve():
            raise KernelTuiError("--workspace names another directory than the workspace being resumed")
        ws = Workspace.open(target)
        ws.lock()  # another process holding it is refused now, not after the screen has opened
        ws.unlock()
        return ws
    if (target / ".git").exists():
        raise KernelTuiError(f"{target}: a git repository but not a kernel-tui workspace")
    if not (target / "task.json").exists():
        raise KernelTuiError(f"{target}: neither a task directory (task.json) nor a workspace")
    load_task(target)
    if workspace is not None and workspace.exists() and (not workspace.is_dir() or any(workspace.iterdir())):
        raise KernelTuiError(f"{workspace}: exists and is not empty; pick another --workspace")
    return None


def check_proposer(kind: str | None, candidates: Path | None, resumed: Workspace | None) -> None:
    """Refuse a proposer make_proposer could not build, before a workspace exists (it decides the same way)."""
    from kernel_tui.config import AgentSettings

    saved = ((resumed.read_json("session.json") or {}).get("proposer") or {}) if resumed is not None else {}
    kind = kind or saved.get("kind") or ("replay" if candidates else None)
    if kind == "replay":
        from kernel_tui.core.proposers.replay import ReplayProposer

        directory = candidates or (Path(saved["directory"]) if saved.get("kind") == "replay" else None)
        if directory is None:
            raise KernelTuiError("--proposer replay needs --candidates DIR")
        ReplayProposer(directory)  # a directory holding *.py candidates
    elif kind in (None, "llm"):
        settings = AgentSettings.load()  # a bad value is refused here too, not after the workspace exists
        if kind == "llm":
            settings.require_model()


def open_or_create(target: Path, workspace: Path | None) -> Workspace:
    """A workspace path resumes it; a task directory starts a new workspace."""
    from kernel_tui.core.workspace import Workspace

    if Workspace.is_workspace(target):
        if workspace is not None and workspace.resolve() != target.resolve():
            raise KernelTuiError("--workspace names another directory than the workspace being resumed")
        return Workspace.open(target)
    if (target / ".git").exists():
        raise KernelTuiError(f"{target}: a git repository but not a kernel-tui workspace")
    if not (target / "task.json").exists():
        raise KernelTuiError(f"{target}: neither a task directory (task.json) nor a workspace")
    return Workspace.create(target, path=workspace) if workspace else Workspace.create(target)


def make_proposer(kind: str | None, candidates: Path | None, ws: Workspace, evaluator: Evaluator) -> Proposer:
    """The asked-for proposer; on resume the one the run started with; else llm if configured, else search."""
    saved = (ws.read_json("session.json") or {}).get("proposer") or {}
    if kind is None:
        from kernel_tui.core.proposers.factory import default_kind

        kind = saved.get("kind") or ("replay" if candidates else default_kind())
    if kind == "replay":
        from kernel_tui.core.proposers.replay import ReplayProposer

        directory = candidates or (Path(saved["directory"]) if saved.get("kind") == "replay" else None)
        if directory is None:
            raise KernelTuiError("--proposer replay needs --candidates DIR")
        return ReplayProposer(directory)
    from kernel_tui.core.proposers.factory import build

    return build(kind, ws, evaluator)


class _Printer:
    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last_progress = ""

    def __call__(self, e: Event) -> None:
        if e.kind == "progress" and e.progress is not None:
            p = e.progress
            text = f"  round {e.round}: {p.phase} {p.k}/{p.n} (block {p.block + 1})"
            if self.tty:
                sys.stderr.write("\r" + text.ljust(70))
                sys.stderr.flush()
            return
        if self.tty:
            sys.stderr.write("\r" + " " * 70 + "\r")
        if e.kind in ("log", "preflight", "proposal", "decision", "best_changed", "finished"):
            print(e.text, flush=True)
        elif e.kind == "verdict" and e.line is not None:
            ln = e.line
            lat = f", {duration(ln.latency)}" if ln.latency else ""
            print(f"  -> {label(verdict_category(ln))}{lat}: {ln.reason}", flush=True)
        elif e.kind == "budget":
            print(f"  budget: {e.used}/{e.total} rounds used", flush=True)


def run(args) -> int:
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.session import Session

    target = Path(args.target)
    ws = open_or_create(target, Path(args.workspace) if args.workspace else None)
    ws.lock()
    cancel = threading.Event()

    def stop(signum, frame):  # finish the phase in flight, leave everything on disk
        cancel.set()

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            evaluator = Evaluator(ws.task, device=args.device, workdir=ws.root / ".work", cancel=cancel)
        except ValueError as exc:
            raise KernelTuiError(str(exc)) from None
        proposer = make_proposer(args.proposer, Path(args.candidates) if args.candidates else None, ws, evaluator)
        print(f"workspace {ws.root} — task {ws.task.name}, device {evaluator.device}, proposer {proposer.info.name}")
        session = Session(ws, evaluator, proposer, max_steps=args.max_steps, cancel=cancel, on_event=_Printer())
        summary = session.run()
        if summary is None:
            print(f"stopped; resume with: kernel-tui run {ws.root} --headless")
            return 1
        from kernel_tui.core.report import write_report

        written = write_report(ws.root)
        print(f"report: {', '.join(str(p.relative_to(ws.root)) for p in written)}")
        s = summary
        print(f"summary: {s.accepted} accepted of {s.rounds} rounds; best {s.best_commit[:8]} ({f'round {s.best_round}' if s.best_round is not None else 'the baseline'}); "
              f"final re-test S = {s.final_speedup:.3f}x, median paired improvement {s.final_median_paired_improvement:+.2%}"
              if s.final_speedup is not None else f"summary: {s.accepted} accepted of {s.rounds} rounds")
        return 0
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        ws.unlock()
