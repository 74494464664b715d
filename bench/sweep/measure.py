"""Timing one space: precompile in the pool, time every config against the baseline, re-time the
fastest; what was measured is kept as it goes."""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.sweep.pool import WorkerPool, lost_precompiles, precompile_task
from bench.sweep.settings import PRECOMPILE_SHARE, RETIME_SHARE, Options, left, log
from bench.sweep.space import Config, timing_order
from bench.sweep.timing import cache_entries, check_context, precompile_spec, run_block, timing_request


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
    done, complete = pool.map_until(precompile_task, items, pre_deadline, lambda: lost_precompiles(markers))
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
