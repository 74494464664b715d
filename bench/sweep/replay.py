"""The built-in search replayed over the measured tables: each seed's evaluations until a proposal within
3% of the sweep best, the search seeing only the swept values."""

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


def restricted_analyze(allowed: dict[str, list]) -> Callable[[str], Analysis]:
    """The analysis the search is given: each knob's domain cut to the swept values (an unswept knob: its
    current value), so that it proposes only inside the table."""
    from kernel_tui.core.proposers.transforms import analyze

    def restricted(source: str, **kw) -> Analysis:
        a = analyze(source, **kw)
        a.knobs = {kid: dataclasses.replace(k, domain=tuple(v for v in k.domain if v == k.value or v in allowed.get(kid, ())))
                   for kid, k in a.knobs.items()}
        return a

    return restricted


def replay_task(p: dict) -> dict:
    """One seed: the Session's loop over the measured table (accept an improvement >= the task's
    threshold), counting evaluations until a candidate within 3% of the sweep best is evaluated."""
    from kernel_tui.core.proposers.base import Feedback, ProposerContext
    from kernel_tui.core.proposers.search import SearchProposer, state_key
    from kernel_tui.core.proposers.transforms import analyze  # unrestricted: the table is keyed by every knob

    table, seed = p["table"], p["seed"]
    rng = random.Random(1000 + seed)
    proposer = SearchProposer(seed=seed, budget_hint=p["budget_hint"], analyze=restricted_analyze(p["allowed"]))
    start = p["start_source"]
    best, best_key = start, state_key(analyze(start).assignment)
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
        key = state_key(analyze(proposal.source).assignment)
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
