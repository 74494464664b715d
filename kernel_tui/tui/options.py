"""What the screen is asked to open, and how: the target, the proposer, the device, the agent's settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.workspace import Workspace


@dataclass
class RunOptions:
    target: Path | None
    device: str = "auto"
    proposer: Any = None  # "search" | "llm" | "replay" | a Proposer instance | None (core.opening.make_proposer decides)
    candidates: Path | None = None
    max_steps: int | None = None
    workspace: Path | None = None
    gpus: str | None = None  # evaluate batches in parallel over these GPUs (core.opening.evaluators_for)
    person: Any = None  # a ProposerInfo; default: person_identity()
    auto_approve: bool = False
    paused: bool = False  # start paused (rounds start with n)
    tail_interval: float = 0.5
    settings: AgentSettings | None = None  # the agent's, as the command line loaded them (None: not loaded)

    def agent_settings(self, resumed: Workspace | None) -> AgentSettings | None:
        """The agent's settings where this run's proposer uses them (core.opening.uses_settings): as the command
        line loaded them, else loaded here, once (a target chosen in the picker may need what the command line's
        target did not); the engine never reads them itself."""
        from kernel_tui.core.config import AgentSettings
        from kernel_tui.core.opening import uses_settings

        if self.settings is None and uses_settings(self.proposer, self.candidates, resumed):
            self.settings = AgentSettings.load()
        return self.settings
