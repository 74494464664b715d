"""Builds the proposer a run asks for. The built-in search is the default whenever no model is configured.

The agent's settings come from the front end, which loads them once; nothing here reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import git

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.proposers.base import Proposer
from kernel_tui.core.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from kernel_tui.core.config import AgentSettings


def default_kind(settings: AgentSettings) -> str:
    return "llm" if settings.is_configured else "search"


def build(kind: str, ws: Workspace, evaluator: Evaluator, settings: AgentSettings | None = None) -> Proposer:
    """`settings`: the agent's, loaded by the front end; the llm proposer needs them, the others do not."""
    if kind == "search":
        from kernel_tui.core.proposers.search import CompileRefused, SearchProposer

        def compiled(source: str) -> list:
            """What the compiler makes of a candidate's kernels, asked before it is timed (GPU only)."""
            result = evaluator.compile_facts(source)
            if result.status.value == "compile_error":
                raise CompileRefused(result.reason)
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
        from kernel_tui.core.proposers.llm import LLMProposer

        if settings is None:  # a front end that did not load them: its bug, not the person's input
            raise ValueError("the llm proposer needs the agent settings the front end loads")
        return LLMProposer(ws, evaluator, settings.require_model())
    raise KernelTuiError(f"unknown proposer {kind!r} (search, llm or replay)")
