"""The built-in search replayed over the measured tables: each seed's evaluations until a proposal within
3% of the sweep best.

The search sees the swept values of the swept knobs. A knob the sweep did not measure at all (load hints,
loop unrolling, GROUP_M on the matmul) is offered in full, and a change of it is measured like the table
entry it leaves unchanged: no effect, 0% give or take the timing noise. That is what the live H200 runs
saw of the load hints on the matmul, and it lets the replay show rounds spent on such knobs, which a
table cut to the swept knobs hides. As in a live run, the search is told the incumbent's bottleneck,
from its place on the roofline the sweep measured (copy bandwidth, torch.matmul's FLOP/s)."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.sweep.settings import TARGETS
from bench.sweep.space import Config

if TYPE_CHECKING:
    from kernel_tui.core.proposers.transforms import Analysis


def roof_of(task, hardware: dict | None) -> dict | None:
    """The task's roofline on the sweep's machine, as plain numbers (a payload crosses processes); None
    where the sweep measured no bandwidth (then the search is told no bottleneck, as off a GPU)."""
    from kernel_tui.core import metrics

    roof = metrics.roof(task.spec, hardware)
    if not roof.usable:
        return None
    return {"nbytes": roof.nbytes, "flops": roof.flops, "bandwidth": roof.bandwidth, "peak": roof.peak}


def hardware_from(copy_bandwidth: float | None, torch_matmul_s: float | None, matmul_task) -> dict | None:
    """hardware.json's two roofs from a sweep's own measurements: the copy bandwidth, and torch.matmul's
    FLOP/s on the matmul task (in its compute dtype) as the compute peak."""
    from kernel_tui.core import metrics

    if not copy_bandwidth:
        return None
    out: dict = {"copy_bandwidth_bytes_per_s": copy_bandwidth}
    if torch_matmul_s and matmul_task is not None:
        flops = matmul_task.spec.cost_at(matmul_task.spec.shape)[0]
        out["matmul_flops_per_s"] = {metrics.compute_dtype(matmul_task.spec): flops / torch_matmul_s}
    return out


def unswept_key(assignment: dict, allowed: dict) -> str:
    """The table key of an assignment's swept knobs alone: what a change of an unswept knob leaves."""
    from kernel_tui.core.proposers.search import state_key

    return state_key({k: assignment.get(k) for k in allowed})


def replay_payloads(name: str, task, configs: list[Config], sweep: dict, seeds: int, *,
                    hardware: dict | None = None, unswept: str = "no-effect",
                    within: float = TARGETS["within"]) -> list[dict] | None:
    """What each seed's replay needs: the table (assignment key -> measured latency or status), the start,
    the swept values, the target, the noise, the roofline (for the bottleneck) and what becomes of a knob
    the sweep did not measure ("no-effect": offered, measured as the entry it leaves; "cut": not offered).
    `within`: the target, as a fraction above the sweep's best latency (0: the best itself)."""
    from kernel_tui.core.proposers.search import state_key

    records = {r["index"]: r for r in sweep.get("configs", [])}
    refined = {e["index"]: e["candidate_s"] for e in sweep.get("retime", []) if "candidate_s" in e}
    table, swept = {}, {}
    for cfg in configs:
        r = records.get(cfg.index, {})
        status = r.get("status", "pending")
        latency = refined.get(cfg.index, r.get("candidate_s")) if status == "ok" else None
        table[state_key(cfg.assignment)] = {"index": cfg.index, "status": "unmeasured" if status == "pending" else status,
                                            "latency": latency}
        swept[unswept_key(cfg.assignment, sweep["values"])] = state_key(cfg.assignment)
    measured = [e["latency"] for e in table.values() if e["latency"] is not None]
    start = sweep.get("start_index", 0)
    if not measured or records.get(start, {}).get("status") != "ok":
        return None
    best = min(measured)
    base = {
        "task": name, "table": table, "start_source": configs[start].source, "start_index": start,
        "allowed": sweep["values"], "target": best * (1 + within), "best_latency": best,
        "sweep_best_index": (sweep.get("best") or {}).get("index"), "noise_sd": (sweep.get("noise") or {}).get("sd", 0.01),
        "limit": len(configs), "budget_hint": task.spec.optimization.max_rounds,
        "min_improvement": task.spec.optimization.min_improvement_fraction,
        "swept": swept if unswept == "no-effect" else {}, "free_unswept": unswept == "no-effect",
        "roof": roof_of(task, hardware),
    }
    return [{**base, "seed": s} for s in range(seeds)]


def restricted_analyze(allowed: dict[str, list], free_unswept: bool = False) -> Callable[[str], Analysis]:
    """The analysis the search is given: each swept knob's domain cut to the swept values, so that it
    proposes inside the table; a knob the sweep did not measure keeps its whole domain where
    `free_unswept` (its changes are measured as no effect), else only its current value."""
    from kernel_tui.core.proposers.transforms import analyze

    def keep(kid: str, k, v) -> bool:
        return v == k.value or v in allowed.get(kid, ()) or (free_unswept and kid not in allowed)

    def restricted(source: str, **kw) -> Analysis:
        a = analyze(source, **kw)
        a.knobs = {kid: dataclasses.replace(k, domain=tuple(v for v in k.domain if keep(kid, k, v)))
                   for kid, k in a.knobs.items()}
        return a

    return restricted


def replay_task(p: dict) -> dict:
    """One seed: the Session's loop over the measured table (accept an improvement >= the task's
    threshold), counting evaluations until a candidate within 3% of the sweep best is evaluated."""
    from kernel_tui.core.metrics import Roof
    from kernel_tui.core.proposers.base import Feedback, ProposerContext
    from kernel_tui.core.proposers.search import SearchProposer, state_key
    from kernel_tui.core.proposers.transforms import analyze  # unrestricted: the table is keyed by every knob

    table, seed, swept = p["table"], p["seed"], p.get("swept") or {}
    roof = Roof(**p["roof"]) if p.get("roof") else None
    rng = random.Random(1000 + seed)
    proposer = SearchProposer(seed=seed, budget_hint=p["budget_hint"],
                              analyze=restricted_analyze(p["allowed"], p.get("free_unswept", False)))
    start = p["start_source"]
    best = start
    incumbent = table[state_key(analyze(start).assignment)]
    reached, outside, unmeasured, failed, accepted, no_effect, trail = None, 0, 0, 0, 0, 0, []
    n = 0
    if incumbent["latency"] <= p["target"]:  # already there: no evaluation needed
        reached = 0
    while reached is None and n < p["limit"]:
        n += 1
        place = roof.place(incumbent["latency"]) if roof is not None else None
        proposal = proposer.propose(ProposerContext(round=n, best_source=best, baseline_source=start, history=[],
                                                    bottleneck=place.bottleneck if place else None))
        if proposal is None:  # the search has nothing left to offer
            n -= 1
            break
        assignment = analyze(proposal.source).assignment
        key = state_key(assignment)
        if key not in table and (same := swept.get(unswept_key(assignment, p["allowed"]))) is not None:
            key, no_effect = same, no_effect + 1  # only unswept knobs differ from this entry: measured as it
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
        t_inc = incumbent["latency"] * math.exp(rng.gauss(0, p["noise_sd"]))
        improvement = 1 - t_cand / t_inc
        ok = improvement >= p["min_improvement"]
        proposer.feedback(Feedback(round=n, status="ok", accepted=ok, reason="", improvement=improvement,
                                   latency=t_cand, incumbent_latency=t_inc))
        if ok:
            best, incumbent, accepted = proposal.source, entry, accepted + 1
        trail.append([entry["index"], true, ok])
        if true <= p["target"]:
            reached = n
    return {"seed": seed, "evaluations_to_target": reached, "evaluations": n, "outside": outside,
            "unmeasured": unmeasured, "failed": failed, "accepted": accepted, "no_effect": no_effect,
            "final_best_index": incumbent["index"], "final_best_latency": incumbent["latency"], "trail": trail}


def start_bottleneck(p: dict) -> str | None:
    """What the search is told of the starting config: its place on the sweep's roofline."""
    from kernel_tui.core.metrics import Roof

    start = next((e for e in p["table"].values() if e["index"] == p["start_index"]), None)
    place = Roof(**p["roof"]).place(start["latency"]) if p.get("roof") and start else None
    return place.bottleneck if place else None


def summarize_replay(name: str, p: dict, results: list[dict], complete: bool) -> dict:
    found = [r["evaluations_to_target"] for r in results]
    reached = [n for n in found if n is not None]
    # a seed that never got there counts as worse than any that did
    ranked = sorted(n if n is not None else math.inf for n in found)
    median = statistics.median(ranked) if ranked else None
    out: dict[str, Any] = {
        "sweep_size": p["limit"], "start_index": p["start_index"], "start_bottleneck": start_bottleneck(p), "target_s": p["target"],
        "best_latency_s": p["best_latency"], "sweep_best_index": p["sweep_best_index"], "noise_sd": p["noise_sd"],
        "seeds_run": len(results), "complete": complete, "reached": len(reached),
        "median_evaluations": None if median in (None, math.inf) else median,
        "max_evaluations": max(ranked) if ranked and max(ranked) != math.inf else None,
        "outside_proposals": sum(r["outside"] for r in results),
        "unmeasured_proposals": sum(r["unmeasured"] for r in results),
        "no_effect_proposals": sum(r.get("no_effect", 0) for r in results), "per_seed": results,
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
