"""What the screens display: frozen, plain data built from the core in a worker thread.

Nothing here imports git, pydantic or the core's models (only core/format.py, which imports nothing), so
the App paints before the core is loaded; the builders that fill these from a workspace live in
`present.py` and run in thread workers only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernel_tui.core.format import latency, memory_bytes, percent  # the one home of number formatting

NA = "—"


def fmt_latency(seconds: float | None) -> str:
    """µs below 1 ms, else ms (as the report writes them); "—" where there is none."""
    return latency(seconds, missing=NA)


def fmt_memory(n: int | None) -> str:
    return memory_bytes(n, missing=NA)


def fmt_pct(fraction: float | None) -> str:
    return NA if fraction is not None and math.isinf(fraction) else percent(fraction, missing=NA)


@dataclass(frozen=True)
class BestView:
    commit: str
    label: str  # "baseline", "round 3", "restored from 1a2b3c4d"
    latency: str
    roofline: str  # "12.3% of roofline" or why there is none
    source: str

    @property
    def short(self) -> str:
        return self.commit[:8]

    @property
    def title(self) -> str:
        return self.titles[0]

    @property
    def titles(self) -> tuple[str, ...]:
        """Longest first: a narrow pane shows the longest that fits (the roofline's reason goes first)."""
        head = f"best {self.short} ({self.label}) · {self.latency}"
        roofline = self.roofline.split(" (")[0].replace(" on the CPU interpreter", "")
        return f"{head} · {self.roofline}", f"{head} · {roofline}", head


@dataclass(frozen=True)
class VerdictRow:
    round: int
    change: str
    proposer: str
    status: str  # accepted / rejected (gate) / rejected by person / a failure status
    accepted: bool
    latency: str
    improvement: str
    ci: str
    p: str
    reason: str
    memory: str = NA  # the evaluation's peak device memory; NA on the CPU interpreter
    kernels: tuple[str, ...] = ()  # what the compiler made of its kernels, one line each (GPU only)
    # the incumbent's latency measured in the same evaluation: rounds timed under different load compare
    # with their own incumbent, not with each other
    incumbent_latency: str = NA


@dataclass(frozen=True)
class ChartData:
    """The three quantities, kept apart: each verdict's own latency, the accepted record, the gate's estimate."""

    rounds: tuple[int, ...] = ()
    latencies: tuple[float | None, ...] = ()  # seconds, per verdict (None when not timed)
    accepted: tuple[bool, ...] = ()
    record: tuple[float, ...] = ()  # the accepted version's latency after each verdict; NaN before the first accept
    improvements: tuple[float | None, ...] = ()  # fraction, the gate's paired estimate per verdict
    threshold: float | None = None  # min improvement fraction
    baseline: float | None = None  # seconds
    statuses: tuple[tuple[str, int], ...] = ()  # accepted / ok, rejected / failures, in a fixed order
    interpreter: bool = False


@dataclass(frozen=True)
class StatusView:
    device: str  # GPU name, or the interpreter warning
    proposer: str
    model: str
    used: int
    total: int
    auto_approve: bool = False
    paused: bool = False
    state: str = ""
    not_confined: str = ""  # "candidates are not confined: ...", shown in the line whenever it is so

    @property
    def left(self) -> int:
        return max(0, self.total - self.used)


@dataclass(frozen=True)
class RunView:
    task: str
    workspace: str  # the directory's name only: no absolute path on screen
    best: BestView
    rows: tuple[VerdictRow, ...]
    charts: ChartData
    status: StatusView
    baseline_commit: str = ""


@dataclass(frozen=True)
class PendingView:
    round: int
    commit: str
    change: str
    proposer: str
    diff: str
    source: str
    state: str  # what happens next, in words
    edited: bool = False  # the diff is the person's edit, not yet sent
    waiting: bool = True  # a decision is awaited
    queue: tuple[str, ...] = ()  # the rest of its batch, waiting after it ("round N: change")

    @property
    def title(self) -> str:
        who = "your edit of " if self.edited else ""
        return f"round {self.round} · {who}{self.commit[:8]} · {self.proposer}"


@dataclass(frozen=True)
class VersionRow:
    commit: str
    parent: str | None  # first parent: the previous version (lineage) or the best it was proposed on
    round: int | None
    proposer: str
    change: str
    latency: str
    vs_previous: str
    vs_baseline: str
    status: str
    reason: str = ""
    memory: str = NA  # the peak device memory of the evaluation it carries, where known
    # b (start from this): whether this version may become the starting point by the person's choice, and
    # what the record will say (when it may) or why it may not
    startable: bool = False
    start_note: str = ""

    @property
    def short(self) -> str:
        return self.commit[:8]


@dataclass(frozen=True)
class HistoryData:
    lineage: tuple[VersionRow, ...]  # newest first, `git log best --first-parent`
    proposals: tuple[VersionRow, ...]  # every verdict, by round
    baseline: str
    best: str


@dataclass(frozen=True)
class VersionDetail:
    commit: str
    source: str
    diff: str
    against: str  # "previous (abc12345)", "baseline (…)", "marked (…)"
    profile: tuple[str, ...] = ()  # the version's profile headline and what changed against `against`'s


@dataclass(frozen=True)
class ProfileView:
    """A version's Nsight Compute profile as the profile screen shows it."""

    commit: str
    title: str
    lines: tuple[str, ...]
    profiled: bool  # False: not profiled yet, or no profile could be taken (the lines say why)
    off: str | None = None  # why this session cannot profile (then r does nothing)


@dataclass(frozen=True)
class EvalStep:
    where: str  # "preflight", "round 3", "final comparison"
    phase: str
    k: int
    n: int
    block: int = 0

    @property
    def label(self) -> str:
        return f"{self.where} · {self.phase} · block {self.block + 1} · {self.k}/{self.n}"
