"""Builds the proposer a run asks for. The built-in search is the default whenever no model is configured."""

from __future__ import annotations

import git

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.proposers.base import Proposer
from kernel_tui.core.workspace import Workspace, WorkspaceError


def default_kind(settings=None) -> str:
    from kernel_tui.core.config import AgentSettings

    settings = settings or AgentSettings.load()
    return "llm" if settings.is_configured else "search"


def build(kind: str, ws: Workspace, evaluator: Evaluator, settings=None) -> Proposer:
    if kind == "search":
        from kernel_tui.core.proposers.search import SearchProposer

        def compiled(source: str) -> list:
            """What the compiler makes of a candidate's kernels, asked before it is timed (GPU only)."""
            result = evaluator.compile_facts(source)
            return list(result.kernels) if result.status.value == "ok" else []

        def source_at(commit: str) -> str | None:
            """A commit's source, to read the person's rejections back from the trajectory (None: not there)."""
            try:
                return ws.source_at(commit)
            except (WorkspaceError, ValueError, git.BadName):
                return None

        return SearchProposer(budget_hint=ws.task.spec.optimization.max_rounds,
                              resources=compiled if evaluator.device == "cuda" else None,
                              device=evaluator.device, sources=source_at)
    if kind == "llm":
        from kernel_tui.core.config import AgentSettings
        from kernel_tui.core.proposers.llm import LLMProposer

        settings = settings or AgentSettings.load()
        if not settings.is_configured:
            raise KernelTuiError(
                "no model configured: set KERNEL_AGENT_MODEL (and KERNEL_AGENT_API_KEY) in the environment or in "
                "~/.config/kernel-tui/agent.env, or use --proposer search"
            )
        return LLMProposer(ws, evaluator, settings)
    raise KernelTuiError(f"unknown proposer {kind!r} (search, llm or replay)")
