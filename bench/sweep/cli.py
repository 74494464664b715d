"""The command line: options, the watchdog that writes what there is past the budget, and the run."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from bench.sweep.parts import Run
from bench.sweep.results import dump, summary_markdown
from bench.sweep.settings import ROOT, Options, log


def parse_args(argv: list[str] | None = None) -> Options:
    from bench import sweep

    p = argparse.ArgumentParser(prog="python -m bench.sweep", description=sweep.__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--smoke", action="store_true", help="tiny spaces and plans: checks the plumbing")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "bench" / "results" / "raw"))
    p.add_argument("--budget", type=float, default=480.0, help="wall-clock seconds for the whole run")
    p.add_argument("--pairs", type=int, default=None, help="pairs per config in the sweeps (default 5)")
    p.add_argument("--seeds", type=int, default=None, help="search replay seeds (default 20)")
    p.add_argument("--bw-bytes", type=float, default=1e9, help="cost-model bytes per call, bandwidth part")
    p.add_argument("--bw-max-configs", type=int, default=None, help="configs per bandwidth fixture (default 20, at most 30)")
    p.add_argument("--pool", type=int, default=None, help="precompile processes (default min(12, cpus - 2))")
    p.add_argument("--triton-cache", type=Path, default=None, help="shared Triton cache (default: a fresh one)")
    a = p.parse_args(argv)
    smoke = a.smoke
    pool = a.pool or max(1, min(12, (os.cpu_count() or 2) - 2))
    cache = a.triton_cache or Path(tempfile.mkdtemp(prefix="kt-sweep-triton-"))
    return Options(
        device=a.device, smoke=smoke, out=a.out, budget=a.budget,
        pairs=a.pairs or (2 if smoke else 5), inner=1 if smoke else 5, warmup=1 if smoke else 3,
        retime_top=2 if smoke else 5, retime_blocks=2 if smoke else 3, retime_pairs=2 if smoke else 15,
        torch_blocks=1 if smoke else 3, torch_pairs=2 if smoke else 15,
        seeds=a.seeds or (1 if smoke else 20), bw_bytes=a.bw_bytes,
        bw_max_configs=min(30, a.bw_max_configs or (2 if smoke else 20)),
        bw_pairs=2 if smoke else 3, bw_inner=1 if smoke else 3, pool_size=pool, triton_cache=cache,
        own_cache=a.triton_cache is None,
    )


def start_watchdog(run: Run, hard_stop: float) -> None:
    """If something hangs past the budget (a kernel that never returns), write what there is and exit."""

    def watch() -> None:
        while time.monotonic() < hard_stop:
            time.sleep(1.0)
        log("watchdog: past the budget, writing what there is and exiting")
        with contextlib.suppress(Exception):
            run.results.index["watchdog"] = "the run passed its budget and was stopped"
            write_summary(run, wait=5.0)
        with contextlib.suppress(Exception):
            run.pool.close(terminate=True)
        os._exit(3)

    threading.Thread(target=watch, daemon=True, name="watchdog").start()


def write_summary(run: Run, wait: float = -1) -> None:
    if not run.results.lock.acquire(timeout=wait):  # the watchdog does not wait on a stuck writer for ever
        return
    try:
        dump(run.opts.out / "sweep.json", run.results.index)
        (run.opts.out / "sweep_summary.md").write_text(summary_markdown(run.results, run.opts), encoding="utf-8")
    finally:
        run.results.lock.release()


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    # before torch/triton are imported here or in the pool: one shared cache, the interpreter on CPU
    os.environ["TRITON_CACHE_DIR"] = str(opts.triton_cache)
    if opts.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    opts.triton_cache.mkdir(parents=True, exist_ok=True)
    run = Run(opts)
    start_watchdog(run, run.clock.start + opts.budget + max(20.0, 0.05 * opts.budget))
    log(f"sweep on {opts.device}{' (smoke)' if opts.smoke else ''}, budget {opts.budget:.0f}s, "
        f"pool {opts.pool_size}, out {opts.out}")
    run.pool.start()  # the processes import torch while the copy bandwidth is measured
    try:
        run.part("environment", run.environment, gpu=False)
        run.part("copy_bandwidth", run.copy_bandwidth)
        run.part("vector_add", lambda d, f: run.sweep("vector_add", d, f))
        run.part("matmul", lambda d, f: run.sweep("matmul", d, f))
        run.part("torch_references", run.torch_references)
        run.part("replay", run.replay, gpu=False)
        run.part("bandwidth", run.bandwidth)
    finally:
        run.pool.close(terminate=True)
        if opts.own_cache:
            shutil.rmtree(opts.triton_cache, ignore_errors=True)
        run.results.index["finished"] = True
        run.results.index["seconds"] = run.clock.elapsed()
        write_summary(run)
    log(f"done in {run.clock.elapsed():.0f}s; results in {opts.out}")
    return 0
