"""What crosses the process boundary: the plan a worker applies, and its report of what held."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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

    def summary(self) -> str:
        if not self.active and self.missing:
            return "sandbox off: " + "; ".join(self.missing)
        return "sandbox: " + ", ".join(self.active) + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")


