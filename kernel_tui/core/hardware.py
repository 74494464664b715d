"""hardware.json: what the device can do, measured, so roofline figures rest on numbers from this machine."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kernel_tui.core.evaluator.evaluator import Evaluator
from kernel_tui.core.evaluator.memory import MemoryPlan, fitting_plan, host_free_bytes
from kernel_tui.core.evaluator.runner import package_paths, worker_env

# Device-to-device copy of a 1 GiB buffer, counting bytes read and written, best of 20 after warm-up.
_COPY_BANDWIDTH = """
import json, sys, torch
n = 1 << 30
src = torch.empty(n, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
for _ in range(3): dst.copy_(src)
times = []
for _ in range(20):
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
    a.record(); dst.copy_(src); b.record(); b.synchronize(); times.append(a.elapsed_time(b) / 1e3)
p = torch.cuda.get_device_properties(0)
print(json.dumps({"device_name": p.name, "copy_bandwidth_bytes_per_s": 2 * n / min(times),
                  "copy_seconds_best": min(times), "l2_bytes": getattr(p, "L2_cache_size", None),
                  "sm_count": p.multi_processor_count, "method": "torch copy_ of 1 GiB, read+write bytes, best of 20"}))
"""


# The compute roof: torch.matmul of n×n×n in each dtype, 2n³ FLOP per call, best of 10 after warm-up
# (float32 with TF32 off: the roof of exact fp32 arithmetic).
_MATMUL_PEAK = """
import json, torch
torch.backends.cuda.matmul.allow_tf32 = False
n = 8192
peaks = {}
for name in ("float16", "bfloat16", "float32"):
    dt = getattr(torch, name)
    a = torch.randn(n, n, device="cuda", dtype=dt); b = torch.randn(n, n, device="cuda", dtype=dt)
    for _ in range(3): a @ b
    best = float("inf")
    for _ in range(10):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); a @ b; e.record(); e.synchronize(); best = min(best, s.elapsed_time(e) / 1e3)
    peaks[name] = 2 * n**3 / best
    del a, b
print(json.dumps({"matmul_flops_per_s": peaks,
                  "matmul_method": f"torch.matmul {n}x{n}x{n}, 2n^3 FLOP, best of 10 after 3 warm-up; float32 with TF32 off"}))
"""


_FREE_MEMORY = """
import json, torch
free, total = torch.cuda.mem_get_info()
p = torch.cuda.get_device_properties(0)
print(json.dumps({"free": free, "total": total, "l2": getattr(p, "L2_cache_size", 0) or 50 * 2**20, "name": p.name}))
"""


def _child(code: str, device: str, timeout: float = 120) -> dict:
    """Run `code` in a fresh interpreter with the workers' environment; its last stdout line as JSON."""
    boot = f"import sys; sys.path[:0] = {package_paths()!r}\n" + code
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-I", "-c", boot], capture_output=True, text=True, timeout=timeout,
            env=worker_env(Path(tmp), device, Path(tmp) / "triton"), cwd=tmp,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])


def memory_plans(evaluator: Evaluator) -> list[MemoryPlan]:
    """The memory plan of each benchmark shape, from what the device has free now (a child process asks
    on a GPU; the host's available memory under the CPU interpreter), capped by the evaluator's budget."""
    spec = evaluator.task.spec
    if evaluator.device == "cuda":
        data = _child(_FREE_MEMORY, "cuda")
        free, l2 = int(data["free"]), int(data["l2"])
    else:
        free, l2 = host_free_bytes(), 0
        if evaluator.address_space_limit:  # what a confined worker plans with (host_free_bytes there)
            free = min(free, evaluator.address_space_limit // 2)
    if evaluator.memory_budget is not None:
        free = min(free, evaluator.memory_budget)
    shapes = {case.name: case for case in spec.correctness_shapes(evaluator.device)}
    shapes.update({case.name: case for case, _ in spec.benchmark_shapes(evaluator.device)})
    # as the judge plans, so that check-task refuses exactly what an evaluation would
    return [fitting_plan(spec, name, case.dims, free_bytes=free, l2_bytes=l2) for name, case in shapes.items()]


def measure(evaluator: Evaluator) -> dict:
    if evaluator.device == "cpu":
        return {"device": "cpu", "statement": "CPU interpreter run: no GPU figures exist; timings are not GPU timings"}
    try:
        data = _child(_COPY_BANDWIDTH, "cuda")
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return {"device": "cuda", "error": f"copy bandwidth not measured: {exc}"}
    try:
        data.update(_child(_MATMUL_PEAK, "cuda"))
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:  # the bytes-only roofline still holds
        data["matmul_error"] = f"matmul peak not measured: {exc}"
    return {"device": "cuda", **data}
