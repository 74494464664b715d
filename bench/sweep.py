#!/usr/bin/env python3
"""Exhaustive knob sweeps on the GPU: the reference the built-in search is judged against.

One run, within a hard wall-clock budget, measures:

1. the device's copy bandwidth (`dst.copy_(src)` of 1 GiB fp16; read + write);
2. every configuration of two of the search's knob spaces, vector_add (all its knobs) and a matmul
   subspace (tiles, warps, stages, launch order), each timed against the baseline the evaluator's way
   (`worker.run` in this process: L2 flushed, kernel-only event timing, ABBA pairs, timed outputs
   checked), the kernels compiled beforehand by a spawn pool sharing one Triton cache; the five fastest
   are re-timed and the sweep best is picked from those;
3. torch's own kernels (torch.add, a torch.compile'd add, torch.matmul) against each sweep best;
4. the built-in search replayed over the measured tables (restricted to the swept values, lognormal
   noise from the sweep's repeats), 20 seeds: evaluations until within 3% of the sweep best;
5. the bandwidth of the memory-bound fixtures at chip-filling sizes, over a small block x warps sweep.

Each part has a share of the budget (what a part leaves rolls over to the next), stops when its share
runs out and keeps what it measured. JSON goes to --out after every part (and every few configs),
sweep_summary.md at the end. `--device cpu --smoke` runs the same code paths on tiny spaces under
Triton's CPU interpreter; its numbers mean nothing.

    python3 bench/sweep.py --device cuda --out DIR --budget 480      # PYTHONPATH=<repo root>
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import itertools
import json
import math
import multiprocessing
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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


# --- options and the clock ----------------------------------------------------------------------------------
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


def parse_args(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


# --- results on disk ----------------------------------------------------------------------------------------
class Results:
    """One JSON file per part plus sweep.json, the index of part statuses; every write is atomic."""

    def __init__(self, out: Path, opts: Options) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.parts: dict[str, dict] = {}
        self.index: dict[str, Any] = {"device": opts.device, "smoke": opts.smoke, "budget_s": opts.budget,
                                      "parts": {}, "finished": False}
        self.lock = threading.Lock()

    def write(self, part: str, data: dict) -> None:
        with self.lock:
            self.parts[part] = data
            self.index["parts"][part] = {k: data.get(k) for k in ("status", "error", "seconds")}
            _dump(self.out / f"{part}.json", data)
            _dump(self.out / "sweep.json", self.index)


def _dump(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str, allow_nan=True), encoding="utf-8")
    os.replace(tmp, path)


# --- the knob spaces ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Config:
    index: int
    assignment: dict  # every knob of the built source
    swept: dict  # the swept knobs' values
    change: str
    source: str | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k.rsplit(':', 1)[-1]}={v if v != '' else 'default'}" for k, v in self.swept.items())


def build_source(baseline: str, target: dict) -> tuple[str, list[str]]:
    """The baseline with `target`'s knob values, one action at a time (every step keeps the constraints);
    a depth-first search over the order of the steps, since a step may only be allowed after another."""
    from kernel_tui.core.proposers.transforms import analyze, source_hash

    seen: set[str] = set()

    def search(source: str, changes: list[str]) -> tuple[str, list[str]] | None:
        a = analyze(source)
        todo = {k: v for k, v in target.items() if a.assignment.get(k, object()) != v}
        if not todo:
            return source, changes
        h = source_hash(source)
        if h in seen:
            return None
        seen.add(h)
        steps = [x for x in a.actions() if x.knob in todo and todo[x.knob] == x.new]
        for step in sorted(steps, key=lambda x: STEP_ORDER.get(x.kind, 2)):
            found = search(a.apply(step), [*changes, step.change])
            if found:
                return found
        return None

    found = search(baseline, [])
    if found is None:
        raise ValueError("no order of single-knob steps reaches this assignment")
    final = analyze(found[0])
    if final.violations(final.assignment):
        raise ValueError(f"the built source breaks {sorted(final.violations(final.assignment))}")
    return found


def enumerate_space(baseline: str, values: dict[str, list]) -> list[dict]:
    """Every assignment of the swept values (other knobs as in the baseline) that breaks no bound."""
    from kernel_tui.core.proposers.transforms import analyze

    a = analyze(baseline)
    unknown = sorted(set(values) - set(a.knobs))
    if unknown:
        raise ValueError(f"knobs not in the baseline: {unknown}")
    knobs = list(values)
    out = []
    for combo in itertools.product(*(values[k] for k in knobs)):
        assignment = {**a.assignment, **dict(zip(knobs, combo))}
        if not a.violations(assignment):
            out.append(dict(zip(knobs, combo)))
    return out


def build_space(baseline: str, values: dict[str, list], swept_list: list[dict] | None = None) -> list[Config]:
    from kernel_tui.core.proposers.transforms import analyze

    base = analyze(baseline).assignment
    configs = []
    for i, swept in enumerate(swept_list if swept_list is not None else enumerate_space(baseline, values)):
        cfg = Config(index=i, assignment={**base, **swept}, swept=swept, change="")
        try:
            cfg.source, changes = build_source(baseline, {**base, **swept})
            cfg.assignment = analyze(cfg.source).assignment
            cfg.change = "; ".join(changes) or "baseline"
        except Exception as exc:  # noqa: BLE001 - one config's failure is recorded, not fatal
            cfg.error = f"{type(exc).__name__}: {exc}"
        configs.append(cfg)
    return configs


def nearest_to_baseline(baseline: str, configs: list[Config]) -> int:
    """The config differing from the baseline in the fewest knobs: where a replay starts."""
    from kernel_tui.core.proposers.transforms import analyze

    base = analyze(baseline).assignment
    ok = [c for c in configs if c.source is not None]
    return min(ok, key=lambda c: (sum(base.get(k) != v for k, v in c.swept.items()), c.index)).index


def timing_order(configs: list[Config], first: int) -> list[int]:
    """`first`, then the rest shuffled: a sweep cut short has timed a uniform sample, and drift over the
    run is not confounded with any knob."""
    rest = [c.index for c in configs if c.index != first]
    random.Random(0).shuffle(rest)
    return [first, *rest]


# --- one timing block, in this process ------------------------------------------------------------------------
def _quiet(_phase: str, _k: int, _n: int) -> None:
    pass


def timing_request(spec_dict: dict, task, candidate: str, incumbent: str, device: str, plan, block: int,
                   enforce_policy: bool = True):
    from kernel_tui.core.evaluator.models import WorkerRequest

    return WorkerRequest(task=spec_dict, reference_source=task.reference_source, candidate_source=candidate,
                         incumbent_source=incumbent, device=device, check_correctness=False, timing=plan,
                         block=block, enforce_policy=enforce_policy)


def run_block(req) -> dict:
    """One worker.run (a fresh workdir each time) summarised: medians of both sides and of the pairs."""
    from kernel_tui.core.evaluator import worker

    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="kt-sweep-") as d:
            res = worker.run(req, Path(d), _quiet)
    except Exception as exc:  # noqa: BLE001 - the worker's own last resort, as in worker.main
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


# --- the spawn pool -----------------------------------------------------------------------------------------
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


def _pool_init() -> None:
    import torch  # noqa: F401 - paid once per process, while the parent does other work
    import triton  # noqa: F401

    from kernel_tui.core.evaluator import worker  # noqa: F401


def _precompile_task(item: tuple[int, str, str]) -> dict:
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
            self.pool = multiprocessing.get_context("spawn").Pool(self.size, initializer=_pool_init)

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


# --- shapes -------------------------------------------------------------------------------------------------
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


# --- a sweep ------------------------------------------------------------------------------------------------
def config_record(cfg: Config) -> dict:
    return {"index": cfg.index, "label": cfg.label, "swept": cfg.swept, "assignment": cfg.assignment,
            "change": cfg.change, "status": "build_error" if cfg.error else "pending", "reason": cfg.error or ""}


def run_sweep(name: str, task, spec, configs: list[Config], first: int, opts: Options, plan, deadline: float,
              pool: WorkerPool, retime: bool, flush: Callable[[dict], None], data: dict) -> dict:
    """Precompile in the pool, time every config against the baseline here, re-time the fastest. Fills
    `data` as it goes, so that what was measured survives a crash of the part."""
    from kernel_tui.core.evaluator.models import TimingPlan

    spec_dict = spec.model_dump(mode="json", by_alias=True)
    records = [config_record(c) for c in configs]
    data.update({"task": task.name, "size": len(configs), "timing_dims": spec.timing_shape(opts.device).dims,
                 "plan": plan.model_dump(), "configs": records, "start_index": first, "status": "running"})
    buildable = [c for c in configs if c.source is not None]

    # 1. compile every kernel in parallel (shared Triton cache), with the baseline first
    t0 = time.monotonic()
    pre_spec = precompile_spec(spec, opts.device).model_dump(mode="json", by_alias=True)
    tiny = TimingPlan(pairs=1, inner_repeats=1, warmup=1, method=plan.method)
    markers = Path(tempfile.mkdtemp(prefix="kt-sweep-markers-"))
    items = [(i, timing_request(pre_spec, task, src, task.baseline_source, opts.device, tiny, 0).model_dump_json(), str(markers))
             for i, src in [(-1, task.baseline_source), *((c.index, c.source) for c in buildable)]]
    pre_deadline = time.monotonic() + PRECOMPILE_SHARE * max(0.0, left(deadline))
    done, complete = pool.map_until(_precompile_task, items, pre_deadline, lambda: lost_precompiles(markers))
    shutil.rmtree(markers, ignore_errors=True)
    for r in done:
        if r["index"] >= 0:
            records[r["index"]]["precompile"] = r
            if r["status"] != "ok":  # it ran in the pool already: the same failure here, and it could break our context
                records[r["index"]].update(status=r["status"], reason=f"precompile: {r['reason']}")
    data["precompile"] = {"seconds": time.monotonic() - t0, "configs": len(items), "returned": len(done),
                          "complete": complete, "failed": sum(r["status"] != "ok" for r in done),
                          "dims": pre_spec["shape"] if opts.device == "cuda" else None}
    log(f"{name}: precompiled {len(done)}/{len(items)} in {data['precompile']['seconds']:.0f}s"
        f" ({data['precompile']['failed']} failed{'' if complete else ', cut at the deadline'})")
    flush(data)

    # 2. time every config against the baseline, in shuffled order, while the time lasts
    t1 = time.monotonic()
    walls: list[float] = []
    timed = 0
    cut = False
    for pos, idx in enumerate(timing_order(configs, first)):
        rec, cfg = records[idx], configs[idx]
        if rec["status"] != "pending":
            continue
        est = statistics.median(walls) if walls else 0.0
        reserve = (RETIME_SHARE * (deadline - t1)) if retime else 0.0
        if left(deadline) - reserve < est:
            cut = True
            break
        before = cache_entries(opts.triton_cache)
        r = run_block(timing_request(spec_dict, task, cfg.source, task.baseline_source, opts.device, plan, 0))
        rec.update(r, compiled_here=cache_entries(opts.triton_cache) > before)
        walls.append(r["wall_s"])
        timed += 1
        if r["status"] != "ok":
            check_context(opts.device, r["reason"])
        if timed % 20 == 0:
            log(f"{name}: timed {timed} configs ({pos + 1}/{len(configs)} visited)")
            flush(data)
    ok = [r for r in records if r["status"] == "ok"]
    data.update(timed=timed, ok=len(ok), failed=sum(r["status"] not in ("ok", "pending") for r in records),
                cut_short=cut, timing_seconds=time.monotonic() - t1,
                compiled_here=sum(bool(r.get("compiled_here")) for r in records))
    if ok:
        data["baseline_s"] = statistics.median(r["incumbent_s"] for r in ok)
    log(f"{name}: timed {timed}/{len(configs)} configs ({len(ok)} ok){' - cut short by the budget' if cut else ''}")
    flush(data)

    # 3. re-time the fastest with fresh blocks; the best of those is the sweep best
    if retime and ok:
        data["retime"] = retime_top(name, task, spec_dict, configs, records, opts, plan, deadline)
        data["noise"] = noise_from_retime(data["retime"])
    pick_best(data, records, configs)
    data["status"] = "cut_short" if cut else "ok"
    return data


def retime_top(name: str, task, spec_dict: dict, configs: list[Config], records: list[dict], opts: Options,
               plan, deadline: float) -> list[dict]:
    top = sorted((r for r in records if r["status"] == "ok"), key=lambda r: r["candidate_s"])[: opts.retime_top]
    rplan = plan.model_copy(update={"pairs": opts.retime_pairs})
    out = []
    for r in top:
        blocks = []
        for b in range(opts.retime_blocks):
            if left(deadline) < r["wall_s"] * (opts.retime_pairs + 2) / (plan.pairs + 2):
                break
            res = run_block(timing_request(spec_dict, task, configs[r["index"]].source, task.baseline_source,
                                           opts.device, rplan, block=b + 1))
            blocks.append(res)
            if res["status"] != "ok":
                check_context(opts.device, res["reason"])
                break
        good = [b for b in blocks if b["status"] == "ok"]
        entry = {"index": r["index"], "label": r["label"], "blocks": blocks, "complete": len(good) == opts.retime_blocks}
        if good:
            entry.update(candidate_s=statistics.median(x for b in good for x in b["candidate"]),
                         incumbent_s=statistics.median(x for b in good for x in b["incumbent"]),
                         improvement=statistics.median(b["improvement"] for b in good))
        out.append(entry)
    log(f"{name}: re-timed {len(out)} configs ({sum(e['complete'] for e in out)} complete)")
    return out


def noise_from_retime(retime: list[dict]) -> dict:
    """The per-measurement noise the replay draws from: the spread (log) of a config's paired ratio
    across repeated blocks, pooled over the re-timed configs, split over the two sides of a pair."""
    ss, dof = 0.0, 0
    for e in retime:
        logs = [math.log(statistics.median(c / i for c, i in zip(b["candidate"], b["incumbent"])))
                for b in e["blocks"] if b["status"] == "ok"]
        if len(logs) >= 2:
            m = statistics.fmean(logs)
            ss += sum((x - m) ** 2 for x in logs)
            dof += len(logs) - 1
    if not dof:
        return {"sd": 0.01, "source": "default 1% (no repeated blocks)"}
    ratio_sd = math.sqrt(ss / dof)
    return {"sd": max(0.002, ratio_sd / math.sqrt(2)), "ratio_sd": ratio_sd, "dof": dof,
            "source": "pooled SD of log paired ratio across re-timed blocks / sqrt(2), floor 0.2%"}


def pick_best(data: dict, records: list[dict], configs: list[Config]) -> None:
    retimed = [e for e in data.get("retime", []) if "candidate_s" in e]
    if retimed:
        best = min(retimed, key=lambda e: e["candidate_s"])
        data["best"] = {"index": best["index"], "label": best["label"], "candidate_s": best["candidate_s"],
                        "incumbent_s": best["incumbent_s"], "improvement": best["improvement"], "by": "re-timed"}
    else:
        ok = [r for r in records if r["status"] == "ok"]
        if not ok:
            return
        best = min(ok, key=lambda r: r["candidate_s"])
        data["best"] = {"index": best["index"], "label": best["label"], "candidate_s": best["candidate_s"],
                        "incumbent_s": best["incumbent_s"], "improvement": best["improvement"], "by": "sweep"}
    cfg = configs[data["best"]["index"]]
    data["best"].update(assignment=cfg.assignment, change=cfg.change, source=cfg.source)


def command_output(args: list[str]) -> str | None:
    """A tool's one-line answer, or None where the tool is missing or fails."""
    if not shutil.which(args[0]):
        return None
    try:
        q = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return q.stdout.strip() or None


# --- parts --------------------------------------------------------------------------------------------------
class Run:
    """What the parts share: options, clock, results, the pool, and what earlier parts found."""

    def __init__(self, opts: Options) -> None:
        self.opts, self.clock, self.results = opts, Clock(opts.budget), Results(opts.out, opts)
        self.pool = WorkerPool(opts.pool_size)
        self.sweeps: dict[str, tuple[Any, list[Config], dict]] = {}  # task -> (task, configs, data)
        self.copy_bw: float | None = None
        self.gpu_lost: str | None = None

    def part(self, name: str, fn: Callable[[float, Callable[[dict], None]], dict], gpu: bool = True) -> None:
        deadline = self.clock.deadline_for(name) if name in SHARES else time.monotonic() + 60
        log(f"part {name}: start ({left(deadline):.0f}s allowed)")
        t0 = time.monotonic()

        latest: dict = {}

        def flush(data: dict) -> None:
            latest["data"] = data
            self.results.write(name, {**data, "seconds": time.monotonic() - t0})

        if gpu and self.gpu_lost:
            data = {"status": "skipped", "error": self.gpu_lost}
        else:
            try:
                data = fn(deadline, flush)
            except ContextLost as exc:  # what was measured before stays
                self.gpu_lost = str(exc)
                data = {**latest.get("data", {}), "status": "crashed", "error": str(exc)}
            except Exception as exc:  # noqa: BLE001 - one part's crash must not stop the others
                data = {**latest.get("data", {}), "status": "crashed", "error": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc()}
        data["seconds"] = time.monotonic() - t0
        self.results.write(name, data)
        log(f"part {name}: {data.get('status')} in {data['seconds']:.0f}s" + (f" - {data['error']}" if data.get("error") else ""))

    # 0 ----------------------------------------------------------------------------------------------------
    def environment(self, _deadline: float, _flush) -> dict:
        import torch
        import triton

        env: dict[str, Any] = {
            "status": "ok", "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": self.opts.device, "smoke": self.opts.smoke, "python": platform.python_version(),
            "torch": torch.__version__, "triton": triton.__version__, "cpu_count": os.cpu_count(),
            "pool_size": self.opts.pool_size, "budget_s": self.opts.budget, "triton_cache": str(self.opts.triton_cache),
            "options": {k: str(v) for k, v in dataclasses.asdict(self.opts).items()},
        }
        if self.opts.device == "cuda":
            props = torch.cuda.get_device_properties(0)
            env.update(gpu=props.name, sm_count=props.multi_processor_count, memory_bytes=props.total_memory,
                       l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0) or None, cuda=torch.version.cuda)
        else:
            env["gpu"] = None
            env["note"] = CPU_LABEL
        env["nvidia_smi"] = command_output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        env["commit"] = command_output(["git", "-C", str(ROOT), "describe", "--always", "--dirty"])
        return env

    # 1 ----------------------------------------------------------------------------------------------------
    def copy_bandwidth(self, deadline: float, _flush) -> dict:
        import torch

        cuda = self.opts.device == "cuda"
        n_bytes = 2**30 if cuda and not self.opts.smoke else 16 * 2**20
        src = torch.randn(n_bytes // 2, device=self.opts.device).to(torch.float16)
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        times = []
        while len(times) < (25 if not self.opts.smoke else 5) and (left(deadline) > 0 or len(times) < 3):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                dst.copy_(src)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                dst.copy_(src)
                times.append(time.perf_counter() - t0)
        assert torch.equal(dst, src)
        del src, dst
        if cuda:
            torch.cuda.empty_cache()
        t = statistics.median(times)
        self.copy_bw = 2 * n_bytes / t
        log(f"copy bandwidth {self.copy_bw / 1e12:.3f} TB/s ({len(times)} reps of {n_bytes / 2**20:.0f} MiB)")
        return {"status": "ok", "bytes": n_bytes, "reps": len(times), "median_s": t, "times_s": times,
                "bandwidth_bytes_per_s": self.copy_bw, "counted": "read + write (2 x bytes)",
                "reference_tb_per_s": 4.27, "note": None if cuda else CPU_LABEL}

    # 2-3 --------------------------------------------------------------------------------------------------
    def sweep(self, name: str, deadline: float, flush) -> dict:
        from kernel_tui.core.evaluator.models import TimingPlan
        from kernel_tui.core.task import load_task

        task = load_task(FIXTURES / name)
        if self.opts.smoke:
            values = SMOKE_SPACES[name]
        elif name == "matmul":
            values = MATMUL_SPACE
        else:
            from kernel_tui.core.proposers.transforms import analyze

            values = {k: list(kn.domain) for k, kn in analyze(task.baseline_source).knobs.items()}
        configs = build_space(task.baseline_source, values)
        first = nearest_to_baseline(task.baseline_source, configs)
        log(f"{name}: {len(configs)} configs ({sum(c.error is not None for c in configs)} could not be built)")
        plan = TimingPlan(pairs=self.opts.pairs, inner_repeats=self.opts.inner, warmup=self.opts.warmup, method="flush")
        data: dict[str, Any] = {"values": values}
        self.sweeps[name] = (task, configs, data)  # a part cut by a crash still leaves its table to the replay
        run_sweep(name, task, task.spec, configs, first, self.opts, plan, deadline, self.pool, True, flush, data)
        if data.get("best"):
            (self.opts.out / f"best_{name}.py").write_text(data["best"]["source"], encoding="utf-8")
        return data

    # 4 ----------------------------------------------------------------------------------------------------
    def torch_references(self, deadline: float, flush) -> dict:
        from kernel_tui.core.evaluator.models import TimingPlan

        plan = TimingPlan(pairs=self.opts.torch_pairs, inner_repeats=self.opts.inner, warmup=self.opts.warmup, method="flush")
        out: dict[str, Any] = {"status": "ok", "plan": plan.model_dump(), "tasks": {}}
        for name, refs in TORCH_REFERENCES.items():
            if name not in self.sweeps:
                out["tasks"][name] = {"error": "no sweep result"}
                continue
            task, _configs, sweep = self.sweeps[name]
            best = sweep.get("best")
            incumbent = best["source"] if best else task.baseline_source
            entry: dict[str, Any] = {"incumbent": best["label"] if best else "baseline", "references": {}}
            out["tasks"][name] = entry
            for label, filename in refs:
                if left(deadline) <= 0:
                    entry["references"][label] = {"status": "skipped", "reason": "out of time"}
                    continue
                entry["references"][label] = self.time_reference(task, (CANDIDATES / filename).read_text(),
                                                                 incumbent, plan, deadline, label == "torch.compile")
                flush(out)
            entry.update(self.reference_metrics(name, task, sweep, entry["references"]))
        return out

    def time_reference(self, task, source: str, incumbent: str, plan, deadline: float, compiled: bool) -> dict:
        spec_dict = task.spec.model_dump(mode="json", by_alias=True)
        before = self._dynamo_counters() if compiled else None
        blocks = []
        for b in range(self.opts.torch_blocks):
            if blocks and left(deadline) < blocks[-1]["wall_s"]:
                break
            blocks.append(run_block(timing_request(spec_dict, task, source, incumbent, self.opts.device, plan,
                                                   block=b + 1, enforce_policy=False)))
            if blocks[-1]["status"] != "ok":
                check_context(self.opts.device, blocks[-1]["reason"])
                break
        good = [b for b in blocks if b["status"] == "ok"]
        rec: dict[str, Any] = {"status": "ok" if good else (blocks[-1]["status"] if blocks else "skipped"),
                               "reason": "" if good else (blocks[-1]["reason"] if blocks else "out of time"),
                               "blocks": blocks}
        if good:
            ratios = [c / i for b in good for c, i in zip(b["candidate"], b["incumbent"])]
            rec.update(kernel_s=statistics.median(x for b in good for x in b["candidate"]),
                       incumbent_s=statistics.median(x for b in good for x in b["incumbent"]),
                       best_speedup_vs_reference=statistics.median(ratios))  # t_ref / t_best, paired
        if compiled:
            after = self._dynamo_counters()
            rec["dynamo"] = {k: after.get(k, 0) - (before or {}).get(k, 0) for k in after}
        return rec

    @staticmethod
    def _dynamo_counters() -> dict[str, int]:
        try:
            from torch._dynamo.utils import counters
        except Exception:  # noqa: BLE001
            return {}
        return {"unique_graphs": counters["stats"].get("unique_graphs", 0),
                "graph_breaks": sum(counters["graph_break"].values())}

    def reference_metrics(self, name: str, task, sweep: dict, refs: dict) -> dict:
        """Speedups of the sweep best and the baseline against each reference, GB/s or TFLOP/s, roofline."""
        dims = task.spec.timing_shape(self.opts.device).dims
        flops, nbytes = task.spec.cost_at(dims)
        best = sweep.get("best") or {}
        retimed = next((e for e in sweep.get("retime", []) if e["index"] == best.get("index")), None)
        baseline_s = (retimed or {}).get("incumbent_s") or sweep.get("baseline_s")
        best_s = best.get("candidate_s")
        m: dict[str, Any] = {"dims": dims, "flops": flops, "bytes": nbytes, "best_s": best_s, "baseline_s": baseline_s}
        for label, r in refs.items():
            if r.get("status") != "ok":
                continue
            t = r["kernel_s"]
            r["baseline_speedup_vs_reference"] = t / baseline_s if baseline_s else None  # across blocks, not paired
            if name == "matmul":
                r["tflops"] = flops / t / 1e12
            else:
                r["gb_per_s"] = nbytes / t / 1e9
                r["of_copy_bandwidth"] = nbytes / t / self.copy_bw if self.copy_bw else None
        for who, t in (("best", best_s), ("baseline", baseline_s)):
            if not t:
                continue
            if name == "matmul":
                m[f"{who}_tflops"] = flops / t / 1e12
                ref = refs.get("torch.matmul", {})
                if ref.get("tflops"):
                    m[f"{who}_of_torch_matmul"] = m[f"{who}_tflops"] / ref["tflops"]
            else:
                m[f"{who}_gb_per_s"] = nbytes / t / 1e9
                m[f"{who}_of_copy_bandwidth"] = nbytes / t / self.copy_bw if self.copy_bw else None
        if name == "matmul" and "best_of_torch_matmul" in m:
            m["target_best_of_torch_matmul"] = TARGETS["matmul_of_torch"]
            m["meets_target"] = m["best_of_torch_matmul"] >= TARGETS["matmul_of_torch"]
        return m

    # 5 ----------------------------------------------------------------------------------------------------
    def replay(self, deadline: float, flush) -> dict:
        out: dict[str, Any] = {"status": "ok", "seeds": self.opts.seeds, "tasks": {}}
        for name, (task, configs, sweep) in self.sweeps.items():
            payloads = replay_payloads(name, task, configs, sweep, self.opts.seeds)
            if payloads is None:
                out["tasks"][name] = {"error": "no measured table"}
                continue
            task_deadline = time.monotonic() + left(deadline) / (len(self.sweeps) - list(self.sweeps).index(name))
            if self.pool.pool is not None:  # warm: the seeds in parallel
                results, complete = self.pool.map_until(_replay_task, payloads, task_deadline)
            else:  # a pool cut at a deadline would take longer to restart than the seeds take here
                results = [_replay_task(p) for p in payloads if left(task_deadline) > 0]
                complete = len(results) == len(payloads)
            out["tasks"][name] = summarize_replay(name, payloads[0], sorted(results, key=lambda r: r["seed"]), complete)
            s = out["tasks"][name]
            log(f"replay {name}: {s['reached']}/{len(payloads)} seeds within {TARGETS['within']:.0%}, median "
                f"{s['median_evaluations']} max {s['max_evaluations']} evaluations (sweep {s['sweep_size']})")
            flush(out)
        return out

    # 6 ----------------------------------------------------------------------------------------------------
    def bandwidth(self, deadline: float, flush) -> dict:
        out: dict[str, Any] = {"status": "ok", "copy_bandwidth_bytes_per_s": self.copy_bw, "fixtures": {},
                               "note": None if self.opts.device == "cuda" else CPU_LABEL}
        for k, name in enumerate(BANDWIDTH_FIXTURES):
            fixture_deadline = time.monotonic() + left(deadline) / (len(BANDWIDTH_FIXTURES) - k)
            partial: dict[str, Any] = {}
            try:
                out["fixtures"][name] = self.bandwidth_fixture(name, fixture_deadline, lambda d, n=name: flush(
                    {**out, "fixtures": {**out["fixtures"], n: d}}), partial)
            except ContextLost:
                out["fixtures"][name] = {**partial, "status": "crashed"}
                flush(out)
                raise
            except Exception as exc:  # noqa: BLE001 - the next fixture still runs
                out["fixtures"][name] = {**partial, "status": "crashed", "error": f"{type(exc).__name__}: {exc}",
                                         "traceback": traceback.format_exc()}
            flush(out)
            gc.collect()
            if self.opts.device == "cuda":
                import torch

                torch.cuda.empty_cache()
        return out

    def bandwidth_fixture(self, name: str, deadline: float, flush, data: dict) -> dict:
        from kernel_tui.core.evaluator.models import TimingPlan
        from kernel_tui.core.proposers.transforms import analyze
        from kernel_tui.core.task import load_task

        task = load_task(FIXTURES / name)
        spec = task.spec
        if self.opts.device == "cuda":
            spec = with_shape(spec, chip_filling_dims(spec, self.opts.bw_bytes))
        base = analyze(task.baseline_source)
        values = {k: list(kn.domain) for k, kn in base.knobs.items() if kn.kind in BANDWIDTH_KINDS}
        swept = bandwidth_subset(enumerate_space(task.baseline_source, values), base.assignment,
                                 self.opts.bw_max_configs)
        configs = build_space(task.baseline_source, values, swept)
        plan = TimingPlan(pairs=self.opts.bw_pairs, inner_repeats=self.opts.bw_inner, warmup=2, method="flush")
        run_sweep(f"bandwidth {name}", task, spec, configs, 0, self.opts, plan, deadline, self.pool, False, flush, data)
        dims = spec.timing_shape(self.opts.device).dims
        nbytes = spec.cost_at(dims)[1]
        data.update(values=values, dims=dims, bytes=nbytes)
        for who, t in (("baseline", data.get("baseline_s")), ("best", (data.get("best") or {}).get("candidate_s"))):
            if t:
                data[f"{who}_gb_per_s"] = nbytes / t / 1e9
                data[f"{who}_of_copy_bandwidth"] = nbytes / t / self.copy_bw if self.copy_bw else None
        if data.get("best_of_copy_bandwidth") is not None:
            data["meets_target"] = data["best_of_copy_bandwidth"] >= TARGETS["bandwidth_of_copy"]
        data.get("best", {}).pop("source", None)
        return data


def bandwidth_subset(swept: list[dict], base: dict, cap: int) -> list[dict]:
    """At most `cap` configs, the baseline's first; beyond the cap the smallest blocks go (for streaming
    at full chip, small blocks are the least likely to win)."""
    first = [s for s in swept if all(base.get(k) == v for k, v in s.items())]
    rest = [s for s in swept if s not in first]
    rest.sort(key=lambda s: tuple(-v if isinstance(v, int) else 0 for k, v in s.items() if ":BLOCK" in k))
    return (first + rest)[:cap]


# --- the search replay --------------------------------------------------------------------------------------
def replay_payloads(name: str, task, configs: list[Config], sweep: dict, seeds: int) -> list[dict] | None:
    """What each seed's replay needs: the table (assignment key -> measured latency or status), the start,
    the swept values, the target and the noise."""
    from kernel_tui.core.proposers.search import state_key

    records = {r["index"]: r for r in sweep.get("configs", [])}
    refined = {e["index"]: e["candidate_s"] for e in sweep.get("retime", []) if "candidate_s" in e}
    table = {}
    for cfg in configs:
        r = records.get(cfg.index, {})
        status = r.get("status", "pending")
        latency = refined.get(cfg.index, r.get("candidate_s")) if status == "ok" else None
        table[state_key(cfg.assignment)] = {"index": cfg.index, "status": "unmeasured" if status == "pending" else status,
                                            "latency": latency}
    measured = [e["latency"] for e in table.values() if e["latency"] is not None]
    start = sweep.get("start_index", 0)
    if not measured or records.get(start, {}).get("status") != "ok":
        return None
    best = min(measured)
    base = {
        "task": name, "table": table, "start_source": configs[start].source, "start_index": start,
        "allowed": sweep["values"], "target": best * (1 + TARGETS["within"]), "best_latency": best,
        "sweep_best_index": (sweep.get("best") or {}).get("index"), "noise_sd": (sweep.get("noise") or {}).get("sd", 0.01),
        "limit": len(configs), "budget_hint": task.spec.optimization.max_rounds,
        "min_improvement": task.spec.optimization.min_improvement_fraction,
    }
    return [{**base, "seed": s} for s in range(seeds)]


@contextlib.contextmanager
def restricted_search(allowed: dict[str, list]) -> Iterator[Callable]:
    """The search sees each knob's domain cut to the swept values (an unswept knob: its current value), so
    it proposes only inside the table; yields the unrestricted analysis for looking proposals up."""
    from kernel_tui.core.proposers import search

    original = search.analyze

    def analyze(source: str, **kw):
        a = original(source, **kw)
        a.knobs = {kid: dataclasses.replace(k, domain=tuple(v for v in k.domain if v == k.value or v in allowed.get(kid, ())))
                   for kid, k in a.knobs.items()}
        return a

    search.analyze = analyze
    try:
        yield original
    finally:
        search.analyze = original


def _replay_task(p: dict) -> dict:
    """One seed: the Session's loop over the measured table (accept an improvement >= the task's
    threshold), counting evaluations until a candidate within 3% of the sweep best is evaluated."""
    from kernel_tui.core.proposers.base import Feedback, ProposerContext
    from kernel_tui.core.proposers.search import SearchProposer, state_key

    table, seed = p["table"], p["seed"]
    rng = random.Random(1000 + seed)
    with restricted_search(p["allowed"]) as full_analyze:
        proposer = SearchProposer(seed=seed, budget_hint=p["budget_hint"])
        start = p["start_source"]
        best, best_key = start, state_key(full_analyze(start).assignment)
        reached, outside, unmeasured, failed, accepted, trail = None, 0, 0, 0, 0, []
        n = 0
        if table[best_key]["latency"] <= p["target"]:  # already there: no evaluation needed
            reached = 0
        while reached is None and n < p["limit"]:
            n += 1
            proposal = proposer.propose(ProposerContext(round=n, best_source=best, baseline_source=start, history=[]))
            if proposal is None:  # the search has nothing left to offer
                n -= 1
                break
            key = state_key(full_analyze(proposal.source).assignment)
            entry = table.get(key)
            if entry is None or entry["latency"] is None:
                if entry is None:
                    outside += 1
                elif entry["status"] == "unmeasured":
                    unmeasured += 1
                else:
                    failed += 1
                status = "cancelled" if entry is not None and entry["status"] == "unmeasured" else "runtime_error"
                proposer.feedback(Feedback(round=n, status=status, accepted=False,
                                           reason="outside the swept table" if entry is None else entry["status"]))
                trail.append([entry["index"] if entry else None, None, False])
                continue
            true = entry["latency"]
            t_cand = true * math.exp(rng.gauss(0, p["noise_sd"]))
            t_inc = table[best_key]["latency"] * math.exp(rng.gauss(0, p["noise_sd"]))
            improvement = 1 - t_cand / t_inc
            ok = improvement >= p["min_improvement"]
            proposer.feedback(Feedback(round=n, status="ok", accepted=ok, reason="", improvement=improvement,
                                       latency=t_cand, incumbent_latency=t_inc))
            if ok:
                best, best_key, accepted = proposal.source, key, accepted + 1
            trail.append([entry["index"], true, ok])
            if true <= p["target"]:
                reached = n
    return {"seed": seed, "evaluations_to_target": reached, "evaluations": n, "outside": outside,
            "unmeasured": unmeasured, "failed": failed, "accepted": accepted,
            "final_best_index": table[best_key]["index"], "final_best_latency": table[best_key]["latency"], "trail": trail}


def summarize_replay(name: str, p: dict, results: list[dict], complete: bool) -> dict:
    found = [r["evaluations_to_target"] for r in results]
    reached = [n for n in found if n is not None]
    # a seed that never got there counts as worse than any that did
    ranked = sorted(n if n is not None else math.inf for n in found)
    median = statistics.median(ranked) if ranked else None
    out: dict[str, Any] = {
        "sweep_size": p["limit"], "start_index": p["start_index"], "target_s": p["target"],
        "best_latency_s": p["best_latency"], "sweep_best_index": p["sweep_best_index"], "noise_sd": p["noise_sd"],
        "seeds_run": len(results), "complete": complete, "reached": len(reached),
        "median_evaluations": None if median in (None, math.inf) else median,
        "max_evaluations": max(ranked) if ranked and max(ranked) != math.inf else None,
        "outside_proposals": sum(r["outside"] for r in results),
        "unmeasured_proposals": sum(r["unmeasured"] for r in results), "per_seed": results,
        "table_measured": sum(e["latency"] is not None for e in p["table"].values()),
    }
    if name == "vector_add":
        out["target_evaluations"] = TARGETS["replay_vector_add_evaluations"]
    else:
        out["target_evaluations"] = TARGETS["replay_matmul_fraction"] * p["limit"]
    med = out["median_evaluations"]
    out["meets_target_median"] = med is not None and med <= out["target_evaluations"]
    out["meets_target_all_seeds"] = out["max_evaluations"] is not None and out["max_evaluations"] <= out["target_evaluations"]
    return out


# --- the summary --------------------------------------------------------------------------------------------
def us(t: float | None) -> str:
    return f"{t * 1e6:.2f}" if t else "—"


def dash(x: object) -> str:
    return "—" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def pct(x: float | None) -> str:
    return f"{x:.1%}" if x is not None else "—"


def summary_markdown(results: Results, opts: Options) -> str:
    parts = results.parts
    env = parts.get("environment", {})
    cpu = opts.device != "cuda"
    lines = ["# Knob sweeps, search replay and bandwidth", ""]
    if cpu:
        lines += [f"**{CPU_LABEL}.** Smoke run: the numbers only show the plumbing works.", ""]
    lines += [f"{env.get('date_utc', '')} · {env.get('gpu') or 'CPU'} · {env.get('nvidia_smi') or ''} · torch "
              f"{env.get('torch')} · triton {env.get('triton')} · commit {env.get('commit')} · budget {opts.budget:.0f} s",
              "", "| part | status | seconds | note |", "|---|---|---:|---|"]
    for name, meta in results.index["parts"].items():
        lines.append(f"| {name} | {meta.get('status')} | {meta.get('seconds') or 0:.0f} | {(meta.get('error') or '')[:120]} |")
    cb = parts.get("copy_bandwidth", {})
    if cb.get("bandwidth_bytes_per_s"):
        lines += ["", f"**Copy bandwidth** (dst.copy_(src), {cb['bytes'] / 2**20:.0f} MiB, read + write): "
                  f"{cb['bandwidth_bytes_per_s'] / 1e12:.3f} TB/s (median of {cb['reps']}; earlier on this GPU: 4.27 TB/s)"]
    for name in ("vector_add", "matmul"):
        lines += sweep_section(name, parts.get(name), cpu)
    lines += torch_section(parts.get("torch_references"), cpu)
    lines += replay_section(parts.get("replay"))
    lines += bandwidth_section(parts.get("bandwidth"), cpu)
    return "\n".join(lines) + "\n"


def sweep_section(name: str, d: dict | None, cpu: bool) -> list[str]:
    if not d or "configs" not in d:
        return ["", f"## Sweep: {name}", "", f"not run ({(d or {}).get('error', 'no data')})"]
    pre = d.get("precompile", {})
    out = ["", f"## Sweep: {name}" + (f" ({CPU_LABEL})" if cpu else ""), "",
           f"{d['size']} configs; timed {d.get('timed', 0)} ({d.get('ok', 0)} ok, {d.get('failed', 0)} failed)"
           + (" — **cut short by the budget**" if d.get("cut_short") else "")
           + f"; precompile {pre.get('returned', 0)}/{pre.get('configs', 0)} in {pre.get('seconds', 0):.0f} s"
           + f" ({d.get('compiled_here', 0)} compiled again while timing); timing shape {d.get('timing_dims')};"
           + f" plan {d['plan']['pairs']} pairs × {d['plan']['inner_repeats']} calls.", ""]
    if d.get("status") not in ("ok", "cut_short"):
        out += [f"**{d.get('status')}**: {d.get('error', '')}", ""]
    best = d.get("best")
    if best:
        base = d.get("baseline_s")
        out.append(f"**Sweep best** ({best['by']}): `{best['label']}` — {us(best['candidate_s'])} µs vs baseline "
                   f"{us(best['incumbent_s'])} µs (paired improvement {pct(best['improvement'])})"
                   + (f"; baseline over the sweep {us(base)} µs" if base else "") + ".")
        out.append("")
    ok = sorted((r for r in d["configs"] if r["status"] == "ok"), key=lambda r: r["candidate_s"])
    out += ["| rank | config | µs | baseline µs | vs baseline |", "|---:|---|---:|---:|---:|"]
    out += [f"| {i + 1} | `{r['label']}` | {us(r['candidate_s'])} | {us(r['incumbent_s'])} | {pct(r['improvement'])} |"
            for i, r in enumerate(ok[:10])]
    if d.get("retime"):
        out += ["", "Re-timed (fresh blocks): " + "; ".join(
            f"`{e['label']}` {us(e.get('candidate_s'))} µs ({len(e['blocks'])} blocks)" for e in d["retime"])]
    failures = [r for r in d["configs"] if r["status"] not in ("ok", "pending")]
    if failures:
        out += ["", f"Failed ({len(failures)}): " + "; ".join(f"`{r['label']}` {r['status']}: {r['reason'][:80]}"
                                                            for r in failures[:5])]
    return out


def torch_section(d: dict | None, cpu: bool) -> list[str]:
    out = ["", "## Torch references" + (f" ({CPU_LABEL})" if cpu else "")]
    if not d or "tasks" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| task | reference | status | µs | best µs (same blocks) | best vs ref | baseline vs ref | throughput | roofline |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, t in d["tasks"].items():
        for label, r in t.get("references", {}).items():
            if r.get("status") != "ok":
                out.append(f"| {name} | {label} | {r.get('status')} | — | — | — | — | — | {r.get('reason', '')[:60]} |")
                continue
            thr = f"{r['tflops']:.1f} TFLOP/s" if "tflops" in r else f"{r.get('gb_per_s', 0):.0f} GB/s"
            roof = "" if "tflops" in r else pct(r.get("of_copy_bandwidth")) + " of copy"
            base = r.get("baseline_speedup_vs_reference")
            out.append(f"| {name} | {label} | ok | {us(r['kernel_s'])} | {us(r['incumbent_s'])} | "
                       f"{r['best_speedup_vs_reference']:.3f}× | {f'{base:.3f}×' if base else '—'} | {thr} | {roof} |")
    for name, t in d["tasks"].items():
        if name == "matmul" and t.get("best_tflops"):
            out += ["", f"matmul best {t['best_tflops']:.1f} TFLOP/s = {pct(t.get('best_of_torch_matmul'))} of torch.matmul "
                    f"(target ≥ {TARGETS['matmul_of_torch']:.0%}: {'met' if t.get('meets_target') else 'not met'}); "
                    f"baseline {t.get('baseline_tflops', 0):.1f} TFLOP/s."]
        if name == "vector_add" and t.get("best_gb_per_s"):
            out += ["", f"vector_add best {t['best_gb_per_s']:.0f} GB/s = {pct(t.get('best_of_copy_bandwidth'))} of copy "
                    f"bandwidth; baseline {t.get('baseline_gb_per_s', 0):.0f} GB/s."]
    out += ["", "Speedup = t_reference / t_x (> 1: x is faster). Best vs reference is paired (same blocks); "
            "baseline vs reference compares medians from different blocks."]
    return out


def replay_section(d: dict | None) -> list[str]:
    out = ["", "## Search replay over the measured tables"]
    if not d or "tasks" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| task | sweep size | seeds reached / run | median evals | max evals | target | met (median / all) | outside | noise SD |",
            "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, s in d["tasks"].items():
        if "sweep_size" not in s:
            out.append(f"| {name} | — | — | — | — | — | {s.get('error')} | — | — |")
            continue
        out.append(f"| {name} | {s['sweep_size']} | {s['reached']} / {s['seeds_run']} | {dash(s['median_evaluations'])} | "
                   f"{dash(s['max_evaluations'])} | ≤ {s['target_evaluations']:g} | "
                   f"{'yes' if s['meets_target_median'] else 'no'} / {'yes' if s['meets_target_all_seeds'] else 'no'} | "
                   f"{s['outside_proposals']} | {s['noise_sd']:.2%} |")
    out += ["", f"Evaluations until a proposal within {TARGETS['within']:.0%} of the best measured latency is evaluated; "
            "the search sees only the swept values; a proposal outside the table counts as a failed evaluation."]
    return out


def bandwidth_section(d: dict | None, cpu: bool) -> list[str]:
    out = ["", "## Memory-bound fixtures at chip-filling sizes" + (f" ({CPU_LABEL})" if cpu else "")]
    if not d or "fixtures" not in d:
        return out + ["", f"not run ({(d or {}).get('error', 'no data')})"]
    out += ["", "| fixture | dims | MB/call | configs timed | baseline GB/s | best config | best GB/s | of copy BW | ≥ 90% |",
            "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for name, f in d["fixtures"].items():
        if "configs" not in f:
            out.append(f"| {name} | — | — | — | — | {f.get('status')}: {str(f.get('error'))[:60]} | — | — | — |")
            continue
        best = f.get("best") or {}
        out.append(f"| {name} | {f.get('dims')} | {f.get('bytes', 0) / 1e6:.3g} | {f.get('timed', 0)}/{f['size']} | "
                   f"{f.get('baseline_gb_per_s', 0):.0f} | `{best.get('label', '—')}` | {f.get('best_gb_per_s', 0):.0f} | "
                   f"{pct(f.get('best_of_copy_bandwidth'))} | {'yes' if f.get('meets_target') else 'no'} |")
    return out


# --- main ---------------------------------------------------------------------------------------------------
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
        _dump(run.opts.out / "sweep.json", run.results.index)
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


if __name__ == "__main__":
    sys.exit(main())
