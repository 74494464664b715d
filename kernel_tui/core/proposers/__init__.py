"""Where candidates come from: a model, the built-in search, a person, or a replayed directory."""

from kernel_tui.core.proposers.base import Feedback, Proposal, Proposer, ProposerContext

__all__ = ["Feedback", "Proposal", "Proposer", "ProposerContext"]
