"""hardware.json: what the device can do, measured, so roofline figures rest on numbers from this machine."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from kernel_tui.core.evaluator.evaluator import Evaluator
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


def measure(evaluator: Evaluator) -> dict:
    if evaluator.device == "cpu":
        return {"device": "cpu", "statement": "CPU interpreter run: no GPU figures exist; timings are not GPU timings"}
    boot = f"import sys; sys.path[:0] = {package_paths()!r}\n" + _COPY_BANDWIDTH
    with tempfile.TemporaryDirectory() as tmp:
        try:
            out = subprocess.run(
                [sys.executable, "-I", "-c", boot], capture_output=True, text=True, timeout=120,
                env=worker_env(Path(tmp), "cuda", Path(tmp) / "triton"), cwd=tmp,
            )
            data = json.loads(out.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            return {"device": "cuda", "error": f"copy bandwidth not measured: {exc}"}
    return {"device": "cuda", **data}
