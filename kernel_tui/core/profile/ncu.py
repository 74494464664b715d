"""Nsight Compute on this machine: where ncu is, the metrics asked of it, the command line that runs a
target under it, and why a run could not profile.

The metric names were checked against ncu 2025's own section files (SpeedOfLight.section,
ComputeWorkloadAnalysis.section, WarpStateStatistics.section and the CPIStall rule, which request the same
names) and against a list of names enumerated from full-set sm_90 reports of ncu 2025.4.1.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ENV_VAR = "KERNEL_TUI_NCU"

# How a metric's value is read: converted by the units row ("time" to seconds, "bytes" to bytes), checked
# to be a percentage, or taken as a plain number (a count or a ratio, whose unit needs no conversion).
Kind = Literal["time", "bytes", "percent", "number"]


@dataclass(frozen=True)
class Metric:
    name: str  # ncu's metric name, as passed to --metrics and as the raw page's column header
    field: str  # the KernelProfile field it fills ("stalls": one entry of the stalls dict, under `reason`)
    kind: Kind
    reason: str = ""


# Warp states, as ncu's Warp State Statistics section reports them: the average number of cycles a warp
# spends in each state per issued instruction. "selected" is the issuing state itself, not a stall; "gmma"
# (waiting on a wgmma) exists on sm_90 only, "imc_miss" up to sm_90.
STALL_REASONS = (
    "long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle",
    "math_pipe_throttle", "wait", "not_selected", "selected", "dispatch_stall", "drain", "no_instruction",
    "branch_resolving", "imc_miss", "tex_throttle", "sleeping", "gmma", "misc",
)
NOT_A_STALL = "selected"

METRICS: tuple[Metric, ...] = (
    # SpeedOfLight.section: Duration, DRAM Throughput, Compute (SM) Throughput
    Metric("gpu__time_duration.sum", "duration_s", "time"),
    Metric("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram_pct", "percent"),
    Metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_pct", "percent"),
    # MemoryWorkloadAnalysis tables; present on sm_90 (dram__bytes.sum is not)
    Metric("dram__bytes_read.sum", "dram_read_bytes", "bytes"),
    Metric("dram__bytes_write.sum", "dram_write_bytes", "bytes"),
    # ComputeWorkloadAnalysis.section, pipe utilization over active cycles: "Tensor (All)" counts every MMA
    # (mma.sync and Hopper's wgmma), "Tensor (FP)" the hmma pipe (wgmma is counted there on sm_90),
    # "Tensor (Warp Group)" the wgmma instructions (sm_90 only). tensor_pct is the largest present.
    Metric("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pct", "percent"),
    Metric("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pct", "percent"),
    Metric("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active", "tensor_pct", "percent"),
    # Occupancy.section: Achieved Occupancy
    Metric("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy_pct", "percent"),
    # MemoryWorkloadAnalysis: L1/TEX and L2 hit rates
    Metric("l1tex__t_sector_hit_rate.pct", "l1_hit_pct", "percent"),
    Metric("lts__t_sector_hit_rate.pct", "l2_hit_pct", "percent"),
    # LaunchStatistics.section: Registers Per Thread
    Metric("launch__registers_per_thread", "registers", "number"),
    # WarpStateStatistics.section, one bar per warp state
    *(Metric(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", "stalls", "number", r)
      for r in STALL_REASONS),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)

# ncu and the process it profiles talk over sockets. ncu 2025.3.1 on an H200 chose Unix sockets (its target's
# NV_NSIGHT_INJECTION_TRANSPORT_TYPE=uds) and profiled a worker that could open no TCP socket; its TCP
# transport uses --port (first port, default 49152) and --max-connections (how many, default 64), left at
# their defaults. The profiled worker's sandbox opens these ports only, inside the private network it shares
# with ncu (abstract Unix sockets, too, belong to a network namespace).
NCU_PORTS = (49152, 64)


def find_ncu() -> str | None:
    """The ncu to profile with: KERNEL_TUI_NCU (empty or "0" turns profiling off), else ncu on PATH, else
    the CUDA toolkit's, else the newest standalone Nsight Compute. Only an executable file counts."""
    chosen = os.environ.get(ENV_VAR)
    if chosen is not None:
        return chosen if chosen not in ("", "0") and _executable(chosen) else None
    standalone = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), key=_version_key, reverse=True)
    cuda_home = os.environ.get("CUDA_HOME")
    candidates = [shutil.which("ncu"), str(Path(cuda_home) / "bin" / "ncu") if cuda_home else None,
                  "/usr/local/cuda/bin/ncu", *standalone]
    return next((c for c in candidates if c and _executable(c)), None)


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _version_key(path: str) -> tuple[int, ...]:
    """/opt/nvidia/nsight-compute/2025.2.1/ncu -> (2025, 2, 1): newest by number, not by string."""
    return tuple(int(n) for n in re.findall(r"\d+", Path(path).parent.name))


def ncu_wrapper(ncu: str, log_file: Path, metrics: tuple[str, ...] | list[str] = METRIC_NAMES) -> list[str]:
    """The command line that runs a target under ncu; the target's argv follows it.

    `metrics` defaults to METRICS; a caller whose ncu rejected some names (unknown_metrics) can run again
    without them.
    """
    return [
        ncu,
        "--csv", "--page", "raw",
        # base units (nsecond, byte): the units row still says which, but no value is rounded to a scaled
        # unit's two decimals. (The raw page's headers are metric names already; ncu refuses
        # --print-metric-name outside the details page.)
        "--print-units", "base",
        # the target brackets the candidate's calls with cudaProfilerStart/Stop: warm-up stays unprofiled
        "--profile-from-start", "off",
        # ncu locks clocks to base by default; the evaluator times at the GPU's natural clocks, and a profile
        # should describe the kernel the timings describe
        "--clock-control", "none",
        "--target-processes", "all",
        "--metrics", ",".join(metrics),
        # ncu's own output, the CSV included, goes to the log, apart from the target's stdout
        "--log-file", str(log_file),
    ]


_ERROR = re.compile(r"^==ERROR==\s*(.*)$", re.MULTILINE)
_MESSAGE = re.compile(r"^==(?:ERROR|WARNING|PROF)==.*$", re.MULTILINE)
# ncu refusing its own command line: this ncu and kernel-tui disagree, and every profile will fail alike
_USAGE = re.compile(r"Option '[^']*' is only supported|unrecogni[sz]ed option|unknown option|invalid option",
                    re.IGNORECASE)
_UNKNOWN_METRIC = re.compile(r"Failed to find metric\s+(?:regex:)?\^?([A-Za-z0-9_.]+)")
_UNSUPPORTED = re.compile(
    r"(not supported|unsupported|no longer supported).*(device|gpu|driver|architecture|chip)"
    r"|(device|gpu|driver|architecture|chip).*(not supported|unsupported|no longer supported|too old)",
    re.IGNORECASE)
_MAX_QUOTE = 160  # characters of an ncu error line quoted back


def unknown_metrics(log_text: str) -> list[str]:
    """Metric names ncu said it could not find (on this GPU, or in this version)."""
    return list(dict.fromkeys(m.rstrip(".") for m in _UNKNOWN_METRIC.findall(log_text)))


def ncu_messages(console: str) -> str:
    """ncu's own lines (==ERROR==, ==WARNING==, ==PROF==) from a target's console output: those it printed
    before its log file was open go there."""
    return "\n".join(m.group(0) for m in _MESSAGE.finditer(console))


def refused_command_line(log_text: str) -> bool:
    return bool(_USAGE.search(log_text))


def has_results(log_text: str) -> bool:
    """True when the log holds the raw page: a header row, the units row and at least one kernel row."""
    rows = [ln for ln in log_text.splitlines() if ln.startswith('"')]
    return bool(rows) and rows[0].startswith('"ID"') and len(rows) >= 3


def failure_reason(log_text: str, returncode: int | None) -> str | None:
    """One line saying why ncu could not profile, or None when the log holds usable results."""
    if has_results(log_text):
        return None
    if "ERR_NVGPUCTRPERM" in log_text:
        return ("ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): an administrator must "
                "allow it, e.g. the nvidia driver option NVreg_RestrictProfilingToAdminUsers=0")
    if "LibraryNotLoaded" in log_text or re.search(r"failed to load.*(injection|librar)", log_text, re.IGNORECASE):
        return ("ncu could not load its injection library into the target (LibraryNotLoaded): "
                "check that ncu matches the driver and that the target process may load it")
    if refused_command_line(log_text):
        line = next((e for e in _ERROR.findall(log_text) if _USAGE.search(e)), "")
        return f"this ncu refuses kernel-tui's command line: {_quote(line)}"
    if missing := unknown_metrics(log_text):
        return f"ncu does not know the metric {missing[0]} on this GPU or in this version"
    errors = [e.strip() for e in _ERROR.findall(log_text) if e.strip()]
    for line in [*errors, *log_text.splitlines()]:
        if _UNSUPPORTED.search(line):
            return f"ncu does not support this GPU or driver: {_quote(line)}"
    if "No kernels were profiled" in log_text:
        return ("ncu profiled no kernels: nothing ran between cudaProfilerStart and cudaProfilerStop, "
                "or the target failed first")
    if errors:
        return f"ncu: {_quote(errors[0])}"
    if returncode:
        return f"ncu exited with code {returncode} and wrote no results"
    return "ncu's log holds no results"


def _quote(line: str) -> str:
    line = re.sub(r"^==\w+==\s*", "", line.strip())
    return line if len(line) <= _MAX_QUOTE else line[: _MAX_QUOTE - 1] + "…"
