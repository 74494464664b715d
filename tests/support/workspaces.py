"""Workspaces for the tests, built from records with fixed dates and numbers: no evaluation is run."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES, ROOT

CANDIDATES = ROOT / "tests" / "candidates" / "vector_add"
ADA = ProposerInfo(kind="person", name="Ada Lovelace", email="ada@example.org")
FIXED_DATE = "2025-01-02T03:04:05+00:00"


@contextlib.contextmanager
def fixed_git_dates():
    """Commits made inside get fixed dates, so their shas are the same on every run."""
    keys = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: "1735787045 +0000" for k in keys})  # git's raw format: FIXED_DATE
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def preflighted(path: Path) -> Workspace:
    """A new vector_add workspace whose preflight is recorded as done (no evaluation is run)."""
    ws = Workspace.create(FIXTURES / "vector_add", path=path)
    ws.write_json("preflight.json", {"status": "ok", "reference": "ok", "baseline": "correct on 4 shape×seed cases",
                                     "device": "cpu", "time": FIXED_DATE})
    ws.write_json("hardware.json", {"device": "cpu", "statement": "CPU interpreter run: no GPU figures exist; "
                                                                  "timings are not GPU timings"})
    ws.write_json("environment.json", {"device": "cpu", "device_name": "cpu"})
    ws.write_json("baseline-evaluation.json", {"status": "ok", "reason": "baseline", "timing": {
        "candidate": [2.0e-3, 2.1e-3, 1.9e-3], "incumbent": [2.0e-3, 2.1e-3, 1.9e-3]}})
    return ws


def line(round_no: int, commit: str, change: str, status: str, accepted: bool, proposer: ProposerInfo, **kw) -> TrajectoryLine:
    return TrajectoryLine(round=round_no, change=change, proposer=proposer, commit=commit, status=status,
                          accepted=accepted, device="cpu", time=FIXED_DATE,
                          timing_label="CPU interpreter — timings are not GPU timings", **kw)


def fixed_workspace(path: Path) -> Workspace:
    """Four judged rounds, one of each kind, with fixed dates and numbers; the budget (4) is spent."""
    with fixed_git_dates():
        ws = preflighted(path)
        replay = ReplayProposer(CANDIDATES).info
        files = sorted(CANDIDATES.glob("*.py"))
        sources = [f.read_text() for f in files]
        base = ws.best.hexsha
        c1 = ws.commit_proposal(1, sources[0], "Block size 256 -> 1024: fewer, fuller programs", replay)
        ws.record_verdict(line(1, c1.hexsha, "Block size 256 -> 1024: fewer, fuller programs", "ok", True, replay,
                               reason="accepted: +18.0% (CI +12.0%…+24.0%) over 3 blocks", latency=1.64e-3,
                               incumbent_latency=2.0e-3, improvement=0.18, ci_low=0.12, ci_high=0.24, p_value=0.002,
                               incumbent_commit=base))
        ws.accept(c1)
        c2 = ws.commit_proposal(2, sources[1], "The same kernel again", replay)
        ws.record_verdict(line(2, c2.hexsha, "The same kernel again", "ok", False, replay,
                               reason="not faster: +0.3% (CI -2.1%…+2.6%)", latency=1.63e-3, incumbent_latency=1.64e-3,
                               improvement=0.003, ci_low=-0.021, ci_high=0.026, p_value=0.41, incumbent_commit=c1.hexsha))
        c3 = ws.commit_proposal(3, sources[2], "Block size 1024 -> 32", replay)
        ws.record_verdict(line(3, c3.hexsha, "Block size 1024 -> 32", "rejected_by_person", False, replay,
                               reason="far too small a block", incumbent_commit=c1.hexsha))
        c4 = ws.commit_proposal(4, sources[3], "Off by one in the mask", replay)
        ws.record_verdict(line(4, c4.hexsha, "Off by one in the mask", "incorrect", False, replay,
                               reason="case small/seed 17: max abs error 3.1 > atol", incumbent_commit=c1.hexsha))
        ws.write_json("session.json", {"max_steps": 4, "proposer": {"kind": "replay", "directory": str(CANDIDATES),
                                                                     "next": 4}, "finished": False})
    return ws


LONG_LINE_CHANGE = "Block size 1024, loads that evict first, 8 warps"


def long_line_candidate(directory: Path) -> Path:
    """The four replay candidates and a fifth whose changes sit at the far end of long lines."""
    import shutil

    directory.mkdir(parents=True, exist_ok=True)
    for f in sorted(CANDIDATES.glob("*.py")):
        shutil.copy(f, directory / f.name)
    source = (CANDIDATES / "01_block_1024.py").read_text()
    source = source.replace(source.splitlines()[0], f'"""{LONG_LINE_CHANGE}."""')
    source = source.replace("other=0.0).to(tl.float32)", 'other=0.0, eviction_policy="evict_first").to(tl.float32)')
    source = source.replace("num_warps=4", "num_warps=8")
    (directory / "05_evict_first.py").write_text(source)
    return directory


def waiting_workspace(path: Path, candidates: Path | None = None) -> Workspace:
    """The fixed workspace with one round left in its budget, whose proposal (long-line changes) waits: round 5.

    Its replay candidates are written to `candidates`, beside the workspace unless given."""
    ws = fixed_workspace(path)
    candidates = candidates or path.parent / "candidates"
    ws.write_json("session.json", {"max_steps": 5, "proposer": {"kind": "replay", "next": 4,
                                                                  "directory": str(long_line_candidate(candidates))},
                                   "finished": False})
    return ws


SLOW_CHANGE = "Block size 32, one warp"


def slow_round_workspace(path: Path) -> Workspace:
    """The fixed workspace and a fifth round 25× slower than best (the gate's estimate: -2455%); budget spent."""
    ws = fixed_workspace(path)
    with fixed_git_dates():
        replay = ReplayProposer(CANDIDATES).info
        incumbent = ws.best.hexsha
        c5 = ws.commit_proposal(5, (CANDIDATES / "03_block_32.py").read_text(), SLOW_CHANGE, replay)
        ws.record_verdict(line(5, c5.hexsha, SLOW_CHANGE, "ok", False, replay,
                               reason="not faster: -2455.0% (CI -2510.0%…-2400.0%)", latency=41.9e-3,
                               incumbent_latency=1.64e-3, improvement=-24.55, ci_low=-25.1, ci_high=-24.0, p_value=1.0,
                               incumbent_commit=incumbent))
        ws.write_json("session.json", {"max_steps": 5, "proposer": {"kind": "replay", "directory": str(CANDIDATES),
                                                                     "next": 4}, "finished": False})
    return ws


class RecordingReplay(ReplayProposer):
    """The replay proposer, keeping the feedback it is given."""

    def __init__(self, directory: Path = CANDIDATES) -> None:
        super().__init__(directory)
        self.feedbacks = []

    def feedback(self, feedback) -> None:
        self.feedbacks.append(feedback)
