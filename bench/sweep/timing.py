"""One timing block through the evaluator's judge (a judge process and its workers, forked from one fork
server per task) and the shapes it times at."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.sweep.settings import PRECOMPILE_MAX_BYTES


def timing_request(spec_dict: dict, task, candidate: str, incumbent: str, device: str, plan, block: int,
                   enforce_policy: bool = True):
    from kernel_tui.core.evaluator.models import WorkerRequest

    return WorkerRequest(task=spec_dict, reference_source=task.reference_source, candidate_source=candidate,
                         incumbent_source=incumbent, device=device, check_correctness=False, timing=plan,
                         block=block, enforce_policy=enforce_policy)


_EVALUATORS: dict[tuple, Any] = {}


def _evaluator(req):
    """One Evaluator (one fork server, one Triton cache per source) per task, device and policy."""
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.task import Task, TaskSpec

    key = (req.model_dump_json(include={"task", "reference_source", "device"}), req.enforce_policy)
    if key not in _EVALUATORS:
        spec = TaskSpec.model_validate(req.task)
        task = Task(root=Path(tempfile.gettempdir()), spec=spec, reference_source=req.reference_source,
                    baseline_source=req.incumbent_source or req.candidate_source)
        _EVALUATORS[key] = Evaluator(task, device=req.device, enforce_policy=req.enforce_policy, timeout=600)
    return _EVALUATORS[key]


def run_block(req) -> dict:
    """One block by the judge, summarised: medians of both sides and of the pairs."""
    t0 = time.perf_counter()
    try:
        res = _evaluator(req).timing_run(req.candidate_source, req.incumbent_source or req.candidate_source,
                                         block=req.block, correctness=req.check_correctness, plan=req.timing,
                                         trusted=not req.enforce_policy)
    except Exception as exc:  # noqa: BLE001 - the evaluator's own last resort
        return {"status": "crashed", "reason": f"{type(exc).__name__}: {exc}", "wall_s": time.perf_counter() - t0}
    out: dict[str, Any] = {"status": res.status.value, "reason": res.reason, "wall_s": time.perf_counter() - t0}
    if res.timing is not None:
        tb = res.timing
        out.update(method=tb.method, shape=tb.shape, candidate=tb.candidate, incumbent=tb.incumbent,
                   candidate_s=statistics.median(tb.candidate), incumbent_s=statistics.median(tb.incumbent),
                   improvement=statistics.median(1 - c / i for c, i in zip(tb.candidate, tb.incumbent)),
                   checked=tb.timed_outputs_checked, hold_s=getattr(tb, "hold_seconds", None),
                   hold_retakes=getattr(tb, "hold_retakes", None))
    return out


class ContextLost(RuntimeError):
    """The CUDA context of this process is broken (an illegal access): nothing more can run on the GPU."""


def check_context(device: str, reason: str) -> None:
    if device != "cuda" or not any(s in reason for s in ("CUDA", "cuda", "illegal", "Xid")):
        return
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception as exc:  # noqa: BLE001
        raise ContextLost(f"CUDA context lost after: {reason[:200]} ({exc})") from None


def cache_entries(cache: Path) -> int:
    try:
        return len(os.listdir(cache))
    except OSError:
        return -1


def with_shape(spec, dims: dict[str, int]):
    from kernel_tui.core.task import TaskSpec

    return TaskSpec.model_validate({**spec.model_dump(mode="json", by_alias=True), "shape": dims})


def precompile_spec(spec, device: str):
    """The spec the pool compiles at: the timing shape, with fewer rows when it is large. The kernel is
    the same (rows only sets the grid; sizes keep their divisibility by 16 and their 32-bit range), so the
    cache entry is the one the timing uses, without every pool process holding gigabytes."""
    from kernel_tui.core.evaluator.harness import tensor_bytes

    dims = dict(spec.timing_shape(device).dims)
    size = tensor_bytes(spec, dims)
    if device != "cuda" or size <= PRECOMPILE_MAX_BYTES or "rows" not in dims:
        return spec
    rows = max(16, dims["rows"] * PRECOMPILE_MAX_BYTES // size // 16 * 16)
    return with_shape(spec, {**dims, "rows": rows})


def chip_filling_dims(spec, target_bytes: float) -> dict[str, int]:
    """The benchmark dims with `rows` scaled so one call moves about `target_bytes` (cost model), rows a
    multiple of 1024 (the columns, and so each row's layout, stay the fixture's)."""
    dims = dict(spec.shape)
    one = spec.cost_at({**dims, "rows": 1})[1]
    per_row = spec.cost_at({**dims, "rows": 2})[1] - one
    rows = max(1024, round((target_bytes - (one - per_row)) / per_row / 1024) * 1024)
    return {**dims, "rows": rows}
