"""The run's parts, each within its share of the budget: environment, copy bandwidth, the two sweeps,
torch references, the search replay and the bandwidth of the memory-bound fixtures."""

from __future__ import annotations

import dataclasses
import datetime
import gc
import os
import platform
import shutil
import statistics
import subprocess
import time
import traceback
from collections.abc import Callable
from typing import Any

from bench.sweep.measure import run_sweep
from bench.sweep.pool import WorkerPool
from bench.sweep.replay import hardware_from, replay_payloads, replay_task, summarize_replay
from bench.sweep.results import Results
from bench.sweep.settings import (
    BANDWIDTH_FIXTURES,
    BANDWIDTH_KINDS,
    CANDIDATES,
    CPU_LABEL,
    FIXTURES,
    MATMUL_SPACE,
    ROOT,
    SHARES,
    SMOKE_SPACES,
    TARGETS,
    TORCH_REFERENCES,
    Clock,
    Options,
    left,
    log,
)
from bench.sweep.space import Config, build_space, enumerate_space, nearest_to_baseline
from bench.sweep.timing import ContextLost, check_context, chip_filling_dims, run_block, timing_request, with_shape


def command_output(args: list[str]) -> str | None:
    """A tool's one-line answer, or None where the tool is missing or fails."""
    if not shutil.which(args[0]):
        return None
    try:
        q = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return q.stdout.strip() or None


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
            "status": "ok", "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
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
        for r in refs.values():
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
        hardware = None  # off a GPU the search is told no bottleneck, as in a session there
        if self.opts.device == "cuda":
            refs = (((self.results.parts.get("torch_references") or {}).get("tasks") or {}).get("matmul") or {})
            ref = (refs.get("references") or {}).get("torch.matmul") or {}
            hardware = hardware_from(self.copy_bw, ref.get("kernel_s") if ref.get("status") == "ok" else None,
                                     self.sweeps["matmul"][0] if "matmul" in self.sweeps else None)
        # the smoke spaces sweep one or two knobs: offering every other one as no effect would only test
        # how long the search takes to stumble on them within a limit of two or three evaluations
        unswept = "cut" if self.opts.smoke else "no-effect"
        for name, (task, configs, sweep) in self.sweeps.items():
            payloads = replay_payloads(name, task, configs, sweep, self.opts.seeds, hardware=hardware, unswept=unswept)
            if payloads is None:
                out["tasks"][name] = {"error": "no measured table"}
                continue
            task_deadline = time.monotonic() + left(deadline) / (len(self.sweeps) - list(self.sweeps).index(name))
            if self.pool.pool is not None:  # warm: the seeds in parallel
                results, complete = self.pool.map_until(replay_task, payloads, task_deadline)
            else:  # a pool cut at a deadline would take longer to restart than the seeds take here
                results = [replay_task(p) for p in payloads if left(task_deadline) > 0]
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
