"""What a run is made of: the budget's shares, the swept spaces, the targets, the options and the clock."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
CANDIDATES = ROOT / "bench" / "candidates"
CPU_LABEL = "CPU interpreter — not GPU timings"

# Shares of the budget, in run order; what is left after the last part is slack for the summary.
SHARES = {"copy_bandwidth": 0.02, "vector_add": 0.20, "matmul": 0.33, "torch_references": 0.10,
          "replay": 0.04, "bandwidth": 0.28}
RESERVE = 0.03
PRECOMPILE_SHARE = 0.45  # of a sweep's allowance, at most
RETIME_SHARE = 0.25  # of a sweep's allowance kept for re-timing the top configs, at least

MATMUL_SPACE: dict[str, list] = {
    "const:BLOCK_M": [64, 128, 256],
    "const:BLOCK_N": [64, 128, 256],
    "const:BLOCK_K": [32, 64, 128],
    "launch:matmul_kernel:0:num_warps": [4, 8],
    "launch:matmul_kernel:0:num_stages": [3, 4],
    "kernel:matmul_kernel:launch_order": ["row-major", "grouped"],
}
SMOKE_SPACES: dict[str, dict[str, list]] = {
    "vector_add": {"const:BLOCK_SIZE": [256, 512, 1024]},
    "matmul": {"launch:matmul_kernel:0:num_stages": [3], "kernel:matmul_kernel:launch_order": ["row-major", "grouped"]},
}
# In run order: torch.compile last, since its first compile may take the rest of the part's time.
TORCH_REFERENCES = {
    "matmul": [("torch.matmul", "matmul_torch_matmul.py")],
    "vector_add": [("torch.add", "vector_add_torch_add.py"), ("torch.compile", "vector_add_torch_compile.py")],
}
BANDWIDTH_FIXTURES = ["vector_add", "softmax", "rmsnorm", "silu_mul", "row_sum"]
BANDWIDTH_KINDS = ("block", "num_warps")
PRECOMPILE_MAX_BYTES = 256 * 2**20  # larger timing shapes are precompiled with fewer rows (same kernel)
STEP_ORDER = {"launch_order": 0, "num_warps": 1}  # structural edits first; more warps relax per-thread bounds
TARGETS = {"replay_vector_add_evaluations": 25, "replay_matmul_fraction": 0.25, "matmul_of_torch": 0.90,
           "bandwidth_of_copy": 0.90, "within": 0.03}

T0 = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {message}", flush=True)


@dataclasses.dataclass(frozen=True)
class Options:
    device: str
    smoke: bool
    out: Path
    budget: float
    pairs: int
    inner: int
    warmup: int
    retime_top: int
    retime_blocks: int
    retime_pairs: int
    torch_blocks: int
    torch_pairs: int
    seeds: int
    bw_bytes: float
    bw_max_configs: int
    bw_pairs: int
    bw_inner: int
    pool_size: int
    triton_cache: Path
    own_cache: bool  # a fresh cache made for this run, removed at the end


class Clock:
    """The budget: each part's deadline is its share of what is left (earlier savings roll over)."""

    def __init__(self, budget: float) -> None:
        self.start, self.budget = time.monotonic(), budget
        self.end = self.start + budget * (1 - RESERVE)

    def deadline_for(self, part: str) -> float:
        names = list(SHARES)
        later = sum(SHARES[n] for n in names[names.index(part):])
        now = time.monotonic()
        return now + max(0.0, self.end - now) * SHARES[part] / later

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def left(deadline: float) -> float:
    return deadline - time.monotonic()
