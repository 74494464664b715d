"""What crosses the process boundary: the plan a worker applies, and its report of what held."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The layers without which a candidate is not confined at all (their absence needs an explicit opt-in).
ESSENTIAL = ("user namespace", "no network", "Landlock:")


class SandboxPlan(BaseModel):
    """What a worker may touch. Built by the caller, applied by the worker to itself."""

    model_config = ConfigDict(frozen=True)
    read: list[str] = Field(default_factory=list)  # directories and files, read only
    write: list[str] = Field(default_factory=list)  # directories: the worker's folder, the Triton cache
    execute: list[str] = Field(default_factory=list)  # files: the compiler toolchain Triton runs
    devices: list[str] = Field(default_factory=list)  # device files: read, write and ioctl
    max_processes: int = 512  # threads count too: CUDA, OpenMP and the compiler need some
    max_file_bytes: int = 4 * 2**30
    max_address_space: int | None = None  # CPU only: CUDA reserves far more address space than it uses
    unix_sockets: bool = False  # the CUDA driver opens a Unix socket at initialisation (measured on an H200)
    # Under a profiler: (first port, count) of the TCP ports it and the worker talk over. The worker then
    # lives in the profiler's private network (loopback only; see sandbox.netns) instead of one of its own,
    # and may open TCP sockets on those ports only.
    profiler_ports: tuple[int, int] | None = None


class SandboxReport(BaseModel):
    """What was in force for one worker, what was missing and why, and what the candidate tried."""

    model_config = ConfigDict(frozen=True)
    active: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    violations: list[str] = Field(default_factory=list)  # "rule: detail", first ones only

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def essential_missing(self) -> list[str]:
        """What leaves a candidate unconfined: its own user namespace (no capability over the host, no network)
        or Landlock (no file outside its folder) missing, or the sandbox switched off."""
        return [m for m in self.missing if m.startswith(ESSENTIAL) or "switched off" in m]

    def not_confined(self) -> str:
        """'candidates are not confined: ...' where that is so, else ''. Said wherever the sandbox is shown."""
        missing = self.essential_missing
        return f"candidates are not confined: {'; '.join(missing)}" if missing else ""

    def summary(self) -> str:
        warning = self.not_confined()
        if not self.active and self.missing:
            return (warning + " — " if warning else "") + "sandbox off: " + "; ".join(self.missing)
        text = "sandbox: " + ", ".join(self.active) + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")
        return f"{warning} — {text}" if warning else text


