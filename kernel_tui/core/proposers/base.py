"""What every proposer answers to: the Session asks for a proposal and reports back what became of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.records import ProposerInfo, TrajectoryLine


class ProposerContext(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    round: int
    best_source: str
    baseline_source: str
    history: list[TrajectoryLine]
    # "pytorch": the task starts from a PyTorch eager implementation; every candidate must be Triton
    baseline_language: Literal["triton", "pytorch"] = "triton"
    # what holds the incumbent back on this GPU's roofline (metrics.Place.bottleneck); None off a GPU
    bottleneck: Literal["memory", "compute", "latency"] | None = None
    # where candidates run: "cpu" is Triton's interpreter, which ignores GPU-only knobs (num_warps, num_stages,
    # load hints); None: not said here (a proposer may have been told when it was built)
    device: Literal["cpu", "cuda"] | None = None
    # the GPU's SMs and the output elements of one call at the main timed shape: whether an output tiling
    # gives every SM a program (search_rank.fills_sms); None where not known (off a GPU)
    sm_count: int | None = None
    output_elements: int | None = None

    @property
    def incumbent_is_pytorch(self) -> bool:
        """No Triton version accepted yet: the incumbent is the PyTorch starting point."""
        return self.baseline_language == "pytorch" and self.best_source == self.baseline_source


class Proposal(BaseModel):
    model_config = ConfigDict(frozen=True)
    source: str
    change: str
    proposer: ProposerInfo


class Feedback(BaseModel):
    """What became of a proposal, in the terms a proposer can learn from."""

    model_config = ConfigDict(frozen=True)
    round: int
    status: Status | Literal["rejected_by_person"]
    accepted: bool
    reason: str
    improvement: float | None = None
    ci_low: float | None = None  # the lower bound of the gate's interval for the improvement
    latency: float | None = None
    incumbent_latency: float | None = None
    rejected_by_person: bool = False
    edited_source: str | None = None  # what the person changed the proposal into, if they did
    kernels: list[str] = []  # what the compiler made of its kernels (registers, spills, occupancy), one line each
    profile: list[str] = []  # an accepted version's Nsight Compute profile, one line each (where one was taken)


def _silent(text: str) -> None:
    pass


class Proposer:
    """Base class. `propose` returns None when the proposer has nothing more to offer. A proposer that
    works for a while (an agent calling a model, retrying, spending its step budget) says what it is doing
    through `on_activity`; the Session relays it to every front end."""

    info: ProposerInfo
    # True: several proposals may be outstanding at once (a batch for idle GPUs), each answered by its
    # round's feedback. A conversation (the agent) proposes one at a time.
    batches: bool = False

    @property
    def on_activity(self) -> Callable[[str], None]:
        return self.__dict__.get("_on_activity", _silent)

    @on_activity.setter
    def on_activity(self, report: Callable[[str], None]) -> None:
        self.__dict__["_on_activity"] = report

    def propose(self, context: ProposerContext) -> Proposal | None:
        raise NotImplementedError

    def feedback(self, feedback: Feedback) -> None:
        """Learn from a verdict or a person's rejection (default: nothing to learn)."""

    def state(self) -> dict:
        """JSON-able state saved in the workspace so a resumed run continues where it stopped."""
        return {}

    def restore(self, state: dict) -> None:
        """Take back a state saved by `state`."""
