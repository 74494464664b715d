"""The spawn pool that precompiles configs into the shared Triton cache while the parent times."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path

from bench.sweep.settings import left
from bench.sweep.timing import run_block


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lost_precompiles(markers: Path) -> list[dict]:
    """Configs whose precompile process died mid-task (the pool reaps dead workers, so their pids are gone)."""
    out = []
    for f in markers.iterdir():
        with contextlib.suppress(ValueError, OSError):
            if not _alive(int(f.read_text())):
                out.append({"index": int(f.name), "status": "crashed", "wall_s": None,
                            "reason": "the precompile process died (a compiler abort?)"})
    return out


def pool_init() -> None:
    import torch  # noqa: F401 - paid once per process, while the parent does other work
    import triton  # noqa: F401

    from kernel_tui.core.evaluator import evaluator  # noqa: F401


def precompile_task(item: tuple[int, str, str]) -> dict:
    """Compile (and run once) one config's kernels at the timing shape, so the Triton cache has them.
    A marker file names the process while it works: if a compiler abort kills it, the parent sees
    which config did it (and never runs that config in its own process)."""
    from kernel_tui.core.evaluator.models import WorkerRequest

    index, request_json, markers = item
    marker = Path(markers) / str(index)
    marker.write_text(str(os.getpid()))
    req = WorkerRequest.model_validate_json(request_json)
    out = {"index": index, **{k: v for k, v in run_block(req).items() if k in ("status", "reason", "wall_s")}}
    marker.unlink(missing_ok=True)
    gc.collect()
    if req.device == "cuda":
        import torch

        try:
            torch.cuda.empty_cache()  # idle pool processes must not hold memory the timing needs
        except Exception:  # noqa: BLE001 - a broken context: leave once the result is sent; the pool replaces us
            threading.Timer(1.0, os._exit, (1,)).start()
    return out


class WorkerPool:
    """The spawn pool, created on first use; terminated when a deadline leaves tasks running (they would
    hold the GPU while the parent times) and created afresh when next needed."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pool = None

    def start(self) -> None:
        if self.pool is None:
            self.pool = multiprocessing.get_context("spawn").Pool(self.size, initializer=pool_init)

    def map_until(self, fn: Callable, items: list, deadline: float,
                  lost: Callable[[], list] | None = None) -> tuple[list, bool]:
        """Results in completion order until `deadline` (plus what `lost` reports of tasks whose process
        died: their results never come); True if every task came back."""
        if not items:
            return [], True
        self.start()
        it = self.pool.imap_unordered(fn, items)
        results: list = []
        gone: list = []
        while len(results) + len(gone) < len(items) and left(deadline) > 0:
            try:
                results.append(it.next(timeout=min(2.0, max(0.01, left(deadline)))))
            except multiprocessing.TimeoutError:
                if lost is not None:
                    gone = lost()
        if len(results) < len(items):  # stragglers or a lost task: a fresh pool next time
            self.close(terminate=True)
        return results + gone, len(results) == len(items)

    def close(self, terminate: bool = False) -> None:
        if self.pool is not None:
            self.pool.terminate() if terminate else self.pool.close()
            self.pool.join()
            self.pool = None
