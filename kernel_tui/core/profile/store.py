"""Profiles of a workspace's versions: one run under Nsight Compute in the isolated worker, kept beside the
version's evaluation (or under profiles/ for a version no round made) and as a git note on its commit
(refs/notes/profiles), and read back from the note.

Where profiling cannot work on this machine (no GPU, no ncu, no access to the counters, ncu unable to
attach), the Profiler says why once and stays off; everything else goes on without profiles."""

from __future__ import annotations

import os
import time
import weakref
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.evaluator.models import UNCONFINED_REFUSAL
from kernel_tui.core.history import origin
from kernel_tui.core.profile.models import Profile
from kernel_tui.core.profile.ncu import (
    ENV_VAR,
    METRIC_NAMES,
    failure_reason,
    find_ncu,
    refused_command_line,
    unknown_metrics,
)
from kernel_tui.core.profile.parse import ProfileError, parse_ncu_csv
from kernel_tui.core.workspace import PROFILES_REF, Workspace

# ncu's words for a machine that cannot profile at all (not one version's problem): stop trying
_MACHINE_PROBLEMS = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded", "not supported", "Failed to load", "injection",
                     "no private network for the profiler")

# what one Profiler learned about the machine holds for every later one in this process (a suite opens one a
# task): keyed by the ncu and whether workers are confined, each found off costs a profiled worker's start
_MACHINE_OFF: dict[tuple[str, bool], str] = {}


class ProfileRecord(BaseModel):
    """One profile of one version, or why there is none."""

    commit: str
    round: int | None = None  # the round that proposed it; None for the baseline or a restore
    status: Literal["ok", "unavailable", "failed"]
    reason: str = ""
    profile: Profile | None = None
    shape: str = ""  # the benchmark shape it was profiled at
    device_name: str = ""
    seconds: float | None = None  # wall time of the profiled worker, ncu included
    created: str = ""

    def headline(self) -> str:
        if self.profile is None:
            return f"no profile: {self.reason}"
        return f"profile at shape {self.shape}: {self.profile.bottleneck_hint()}"


def version_round(ws: Workspace, sha: str) -> int | None:
    return next((ln.round for ln in ws.trajectory() if ln.commit == sha), None)


def stored(ws: Workspace, sha: str) -> ProfileRecord | None:
    """The version's profile as its git note holds it (None if it was never profiled); a restore, which is
    a copy of an earlier version, has the profile of the version it carries."""
    data = ws.read_note(PROFILES_REF, sha)
    if data is None:
        carried = origin(ws, ws.repo.commit(sha)).hexsha
        data = ws.read_note(PROFILES_REF, carried) if carried != sha else None
    if data is None:
        return None
    try:
        return ProfileRecord.model_validate(data)
    except ValueError:
        return None


def save(ws: Workspace, record: ProfileRecord) -> None:
    if record.round is not None:
        ws.write_json("profile.json", record, directory=ws.evaluation_dir(record.round))
    else:
        (ws.root / "profiles").mkdir(exist_ok=True)
        ws.write_json(f"{record.commit}.json", record, directory=ws.root / "profiles")
    ws.add_note(PROFILES_REF, record.commit, record.model_dump(mode="json"))


class Profiler:
    """Profiles versions of one workspace with one evaluator (its GPU lease, its sandbox)."""

    def __init__(self, ws: Workspace, evaluator: Evaluator, ncu: str | None = None) -> None:
        self.ws, self.evaluator = ws, evaluator
        self.ncu = ncu or find_ncu()
        self.metrics: list[str] = list(METRIC_NAMES)  # less any name this ncu said it does not know
        self.off: str | None = self._why_off()  # set once: the one line that says why there are no profiles

    def _why_off(self) -> str | None:
        if self.evaluator.device != "cuda":
            return "profiles need a GPU: the CPU interpreter has no hardware counters"
        chosen = os.environ.get(ENV_VAR)
        if chosen in ("", "0"):
            return f"profiles are turned off ({ENV_VAR}={chosen})"
        if self.ncu is None and chosen is not None:
            return f"profiles need Nsight Compute: {ENV_VAR}={chosen} is not an executable file"
        if self.ncu is None:
            return "profiles need Nsight Compute: ncu was not found (install it, or set KERNEL_TUI_NCU=/path/to/ncu)"
        return _MACHINE_OFF.get(self._machine)

    @property
    def _machine(self) -> tuple[str, bool]:
        return str(self.ncu), self.evaluator.confined

    def _machine_off(self, why: str) -> str:
        self.off = _MACHINE_OFF[self._machine] = f"profiles are off on this machine: {why}"
        return self.off

    def profile(self, sha: str) -> ProfileRecord:
        """Profile one version now and store the result (an unavailable or cancelled one is not stored)."""
        source = self.ws.source_at(sha)
        trusted = self.ws.task.baseline_is_pytorch and source == self.ws.task.baseline_source
        record = self.profile_source(source, trusted=trusted).model_copy(
            update={"commit": sha, "round": version_round(self.ws, sha)})
        kept = stored(self.ws, sha)
        if record.status == "failed" and kept is not None and kept.status == "ok":
            return record  # a failed retake does not replace a good profile
        if record.status != "unavailable" and not self.evaluator.cancel.is_set():
            save(self.ws, record)
        return record

    def profile_source(self, source: str, *, trusted: bool = False) -> ProfileRecord:
        """Profile a module that is not (yet) a version: the static policy first, nothing stored."""
        created = datetime.now(UTC).isoformat(timespec="seconds")
        if self.off is not None or self.ncu is None:
            return ProfileRecord(commit="", status="unavailable", reason=self.off or "no ncu", created=created)
        if not trusted and (rejected := self.evaluator.check_policy(source)) is not None:
            return ProfileRecord(commit="", status="failed", reason=f"not profiled: {rejected.reason}", created=created)
        started = time.monotonic()
        result, log = self.evaluator.profile(source, self.ncu, trusted=trusted, metrics=self.metrics)
        if (unknown := [m for m in unknown_metrics(log) if m in self.metrics]) and len(unknown) < len(self.metrics):
            # this ncu or GPU lacks some names (the tensor pipes differ by architecture): once more without them
            self.metrics = [m for m in self.metrics if m not in unknown]
            result, log = self.evaluator.profile(source, self.ncu, trusted=trusted, metrics=self.metrics)
        base = {"commit": "", "created": created, "seconds": time.monotonic() - started,
                "shape": self.ws.task.spec.timing_shape(self.evaluator.device).name,
                "device_name": result.environment.device_name if result.environment else ""}
        why = failure_reason(log, None)
        if why is not None and (any(word in log for word in _MACHINE_PROBLEMS) or refused_command_line(log)):
            return ProfileRecord(status="unavailable", reason=self._machine_off(why), **base)
        if result.status is Status.timeout and not self.evaluator.cancel.is_set():
            # a run that never ends under ncu (it could not reach the process, or replays far too slowly)
            # would hold every later accepted round as long: say so once and stop
            self.off = (f"profiles are off for this session: the profiled run did not finish under ncu "
                        f"({result.reason}){'; ' + why if why else ''}")
            return ProfileRecord(status="unavailable", reason=self.off, **base)
        if result.status is Status.evaluator_fault and result.reason.startswith(UNCONFINED_REFUSAL):
            # a sandbox layer this machine cannot give a profiled worker (root under ncu, say): every later
            # profile would be refused alike, so say it once and stop asking
            return ProfileRecord(status="unavailable", reason=self._machine_off(result.reason), **base)
        if result.status is not Status.ok:
            said = f"; {why}" if why is not None and "==ERROR==" in log else ""  # ncu's own word says more
            return ProfileRecord(status="failed",
                                 reason=f"the profiled run failed ({result.status}): {result.reason}{said}", **base)
        if why is not None:
            return ProfileRecord(status="failed", reason=why, **base)
        try:
            profile = parse_ncu_csv(log)
        except ProfileError as exc:
            return ProfileRecord(status="failed", reason=str(exc), **base)
        if not profile.kernels:
            return ProfileRecord(status="failed", reason="ncu recorded no kernel in the profiled call", **base)
        return ProfileRecord(status="ok", profile=profile, **base)

    def stored_or_profile(self, sha: str) -> ProfileRecord:
        found = stored(self.ws, sha)
        return found if found is not None and found.status == "ok" else self.profile(sha)


_PROFILERS: weakref.WeakKeyDictionary[Evaluator, Profiler] = weakref.WeakKeyDictionary()


def profiler_for(ws: Workspace, evaluator: Evaluator) -> Profiler:
    """The one Profiler of an evaluator (the session's and its agent's alike), made on first use: what it
    learned (ncu missing, counters refused, metrics this ncu lacks) holds for every caller."""
    found = _PROFILERS.get(evaluator)
    if found is None or found.ws.root != ws.root:
        found = _PROFILERS[evaluator] = Profiler(ws, evaluator)
    return found
