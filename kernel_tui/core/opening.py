"""Opening a run: a workspace to resume or a task to start one from, and the proposer to drive it.

Both front ends call these. The `check_*` functions refuse what opening would refuse, before anything is
created, so bad input is one line and leaves no half-made workspace behind.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kernel_tui.core.errors import KernelTuiError

if TYPE_CHECKING:  # the engine loads when a run starts: the CLI imports this before the screen opens
    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.events import Event
    from kernel_tui.core.proposers.base import Proposer
    from kernel_tui.core.records import RunSummary
    from kernel_tui.core.workspace import Workspace


def _is_workspace(target: Path, workspace: Path | None) -> bool:
    """True for a workspace to resume, False for a task directory; anything else is refused. The one
    set of checks that both `check_target` and `open_or_create` apply."""
    from kernel_tui.core.workspace import Workspace

    if Workspace.is_workspace(target):
        if workspace is not None and workspace.resolve() != target.resolve():
            raise KernelTuiError("--workspace names another directory than the workspace being resumed")
        return True
    if (target / ".git").exists():
        raise KernelTuiError(f"{target}: a git repository but not a kernel-tui workspace")
    if not (target / "task.json").exists():
        raise KernelTuiError(f"{target}: neither a task directory (task.json) nor a workspace")
    return False


@dataclass(frozen=True)
class Choice:
    """A workspace to resume or a task directory to start one from, as `kernel-tui` alone offers them."""

    path: Path
    kind: Literal["workspace", "task"]
    where: str  # the path as typed from the folder listed: "workspaces/vector_add-20261202-0930", "fixtures/softmax"
    detail: str  # a workspace's verdict count ("4 verdicts"), a task's description


def choices(root: Path) -> list[Choice]:
    """What `kernel-tui` with no argument offers in `root`: the workspaces in workspaces/ and in root itself
    (newest first), then the task directories (holding task.json) in fixtures/, in root (where `kernel-tui
    import` puts them) and root itself. Nothing is opened or locked: a workspace in use is refused when chosen."""
    from kernel_tui.core.workspace import Workspace

    folders = [root, *_children(root), *_children(root / "workspaces"), *_children(root / "fixtures")]
    workspaces = [f for f in folders if Workspace.is_workspace(f)]
    tasks = sorted((f for f in folders if f not in workspaces and (f / "task.json").is_file()), key=lambda f: _where(f, root))
    out = [Choice(f, "workspace", _where(f, root), _verdicts(f))
           for f in sorted(workspaces, key=lambda f: f.stat().st_mtime, reverse=True)]
    return out + [Choice(f, "task", _where(f, root), _description(f)) for f in tasks]


def _children(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")] if folder.is_dir() else []
    except OSError:
        return []


def _where(folder: Path, root: Path) -> str:
    return "." if folder == root else folder.relative_to(root).as_posix()


def _verdicts(workspace: Path) -> str:
    try:
        n = len((workspace / "trajectory.jsonl").read_text(encoding="utf-8").splitlines())
    except OSError:
        n = 0
    return f"{n} verdict{'' if n == 1 else 's'}"


def _description(task: Path) -> str:
    try:
        data = json.loads((task / "task.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "(unreadable task.json)"
    return str(data.get("description", "")) if isinstance(data, dict) else "(unreadable task.json)"


def check_target(target: Path, workspace: Path | None) -> Workspace | None:
    """Refuse what open_or_create would refuse, creating nothing: the resumed workspace (tried for its lock,
    left unlocked), or None for a task directory that starts a new one."""
    from kernel_tui.core.task import load_task
    from kernel_tui.core.workspace import Workspace

    if not target.exists():
        raise KernelTuiError(f"{target}: no such directory")
    if _is_workspace(target, workspace):
        ws = Workspace.open(target)
        ws.lock()  # another process holding it is refused now, not after the screen has opened
        ws.unlock()
        return ws
    load_task(target)
    if workspace is not None and workspace.exists() and (not workspace.is_dir() or any(workspace.iterdir())):
        raise KernelTuiError(f"{workspace}: exists and is not empty; pick another --workspace")
    return None


def uses_settings(kind: str | None, candidates: Path | None, resumed: Workspace | None) -> bool:
    """Whether the proposer a run gets depends on the agent's settings: the llm proposer, or the default (llm
    where a model is configured, else search). The front end loads them only then, once, and passes them in: a
    broken settings file stops no run of the built-in search or a replay."""
    return _kind(kind, candidates, _saved(resumed)) in (None, "llm")


def _saved(ws: Workspace | None) -> dict:
    """The proposer a workspace's run started with (session.json), or {}."""
    return ((ws.read_json("session.json") or {}).get("proposer") or {}) if ws is not None else {}


def _kind(kind: str | None, candidates: Path | None, saved: dict) -> str | None:
    """The asked-for proposer; on resume the one the run started with; replay for --candidates; else None,
    the default, which the settings decide."""
    return kind or saved.get("kind") or ("replay" if candidates else None)


def _replay_directory(candidates: Path | None, saved: dict) -> Path:
    directory = candidates or (Path(saved["directory"]) if saved.get("kind") == "replay" else None)
    if directory is None:
        raise KernelTuiError("--proposer replay needs --candidates DIR")
    return directory


def _given(settings: AgentSettings | None) -> AgentSettings:
    if settings is None:  # a front end that skipped uses_settings: its bug, not the person's input
        raise ValueError("this proposer needs the agent settings: the front end loads them (uses_settings)")
    return settings


def check_proposer(kind: str | None, candidates: Path | None, resumed: Workspace | None,
                   settings: AgentSettings | None = None) -> None:
    """Refuse a proposer make_proposer could not build, before a workspace exists (it decides the same way).
    `settings`: as the front end loaded them where uses_settings says so (a bad value was refused there)."""
    saved = _saved(resumed)
    kind = _kind(kind, candidates, saved)
    if kind == "replay":
        from kernel_tui.core.proposers.replay import ReplayProposer

        ReplayProposer(_replay_directory(candidates, saved))  # a directory holding *.py candidates
    elif kind == "llm":
        _given(settings).require_model()


def open_or_create(target: Path, workspace: Path | None) -> Workspace:
    """A workspace path resumes it; a task directory starts a new workspace."""
    from kernel_tui.core.workspace import Workspace

    if _is_workspace(target, workspace):
        return Workspace.open(target)
    return Workspace.create(target, path=workspace) if workspace else Workspace.create(target)


def make_proposer(kind: str | None, candidates: Path | None, ws: Workspace, evaluator: Evaluator,
                  settings: AgentSettings | None = None) -> Proposer:
    """The asked-for proposer; on resume the one the run started with; else llm if configured, else search.
    `settings`: the agent's, as the front end loaded them where uses_settings says so."""
    from kernel_tui.core.proposers.factory import build, default_kind

    saved = _saved(ws)
    kind = _kind(kind, candidates, saved) or default_kind(_given(settings))
    if kind == "replay":
        from kernel_tui.core.proposers.replay import ReplayProposer

        return ReplayProposer(_replay_directory(candidates, saved))
    return build(kind, ws, evaluator, settings)


def evaluators_for(ws: Workspace, device: str, gpus: str | None, cancel: threading.Event) -> list[Evaluator]:
    """One evaluator per device of the pool `--gpus` names (one, the default device, without it): each
    pinned to its GPU, with a working folder of its own. On the CPU, `--gpus N` gives N interpreter slots."""
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.gpus import GpuError, GpuPool, gpu_of

    try:
        devices = GpuPool.detect(gpus, health_check=None).devices if gpus else [None]
        if device == "cpu" and gpus:
            devices = [None] * len(devices)
        made = []
        for k, d in enumerate(devices):
            gpu = gpu_of(d) if d is not None else None
            workdir = ws.root / ".work" if k == 0 else ws.root / ".work" / f"device-{k}"
            made.append(Evaluator(ws.task, device=device, workdir=workdir, cancel=cancel, gpu=gpu))
        return made
    except (ValueError, GpuError) as exc:
        raise KernelTuiError(str(exc)) from None


def run_headless(ws: Workspace, *, device: str, proposer: str | None, candidates: Path | None,
                 max_steps: int | None, cancel: threading.Event, on_event: Callable[[Event], None],
                 on_start: Callable[[str], None], gpus: str | None = None,
                 settings: AgentSettings | None = None) -> tuple[RunSummary | None, list[Path]]:
    """The unattended run of a locked workspace: an evaluator (one per GPU of `gpus`), its proposer, the
    Session loop to its end (or to `cancel`), then the report. Returns the summary (None when stopped or
    the preflight failed) and the report's files. `kernel-tui run --headless` and each task of a suite run this;
    `settings`: the agent's, as the front end loaded them where uses_settings says so."""
    from kernel_tui.core.report import write_report
    from kernel_tui.core.session import Session

    evaluator, *parallel = evaluators_for(ws, device, gpus, cancel)
    try:
        made = make_proposer(proposer, candidates, ws, evaluator, settings)
        where = f"device {evaluator.device}" + (f" × {1 + len(parallel)}" if parallel else "")
        on_start(f"workspace {ws.root} — task {ws.task.name}, {where}, proposer {made.info.name}"
                 + (f" (batches of {1 + len(parallel)})" if parallel and made.batches else ""))
        summary = Session(ws, evaluator, made, max_steps=max_steps, cancel=cancel, on_event=on_event,
                          parallel=parallel).run()
        return summary, (write_report(ws.root) if summary is not None else [])
    finally:
        for ev in (evaluator, *parallel):
            ev.close()
