"""The judge: the trusted process of one evaluation block.

    caller (kernel-tui; never imports torch)
      │ request files in a fresh folder ─────────────► judge (trusted: reference, truth, checks, timers)
      │ ◄──────── progress and result over a pipe ──────┤ forks, before it loads anything:
      │                                                  ├─► candidate worker (sandboxed: the candidate alone)
      │                                                  ├─► incumbent worker (sandboxed: the incumbent alone)
      │                                                  └─► probe worker (GPU: a one-element kernel, trusted)

The judge forks each worker before it reads the task, loads the reference or touches the device, so a worker
starts as a copy of a process that holds no answer and no check. It then allocates every buffer a side works
on in memory it shares with that side alone, runs the reference on its own copy of the inputs, calls a side
through its socket, and reads the side's outputs from its own mapping of that memory. The result goes to the
caller over a pipe that no worker holds; a worker's folder is never read for anything that decides.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import time
from pathlib import Path
from typing import Any

from kernel_tui.core.evaluator.checks import CandidateFault
from kernel_tui.core.evaluator.draw import derive
from kernel_tui.core.evaluator.memory import (
    SMALLEST,
    MemoryPlan,
    blame_out_of_memory,
    evaluator_out_of_memory,
    fitting_plan,
    free_bytes,
    is_out_of_memory,
)
from kernel_tui.core.evaluator.models import (
    UNCONFINED_REFUSAL,
    CaseResult,
    Environment,
    Status,
    WorkerRequest,
    WorkerResult,
    last_resort,
)
from kernel_tui.core.evaluator.protocol import Command, Reply, WorkerSetup
from kernel_tui.core.evaluator.side import Side, SideFault

ROLES = ("candidate", "incumbent", "probe")  # the order the workers are forked in
EDGE_SEED = 7_777  # the edge-value case of each correctness shape
READY_SECONDS = 300.0  # a worker's start: the sandbox, the device, importing its module (Triton compiles later)


def seed_of(secret: int, seed: int, shape_index: int) -> int:
    """A correctness case's seed: the task's seed and shape, mixed with the block's secret (a task's seeds are
    public; the inputs they give must not be)."""
    return derive(secret, "case", seed, shape_index)


class Emit:
    """Lines to the caller: progress as it goes, the result at the end (JSON, one per line)."""

    def __init__(self, fd: int) -> None:
        self.out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def progress(self, phase: str, k: int, n: int) -> None:
        import json

        try:
            self.out.write(json.dumps({"progress": [phase, k, n]}) + "\n")
        except OSError:
            pass

    def result(self, result: WorkerResult) -> None:
        try:
            self.out.write('{"result": ' + result.model_dump_json() + "}\n")
            self.out.flush()
        except OSError:
            pass


class Judge:
    def __init__(self, req: WorkerRequest, folder: Path, sides: dict[str, Side], emit: Emit) -> None:
        self.req, self.folder, self.sides, self.emit = req, folder, sides, emit
        self.started = time.monotonic()
        self.deadline = self.started + req.timeout_seconds
        self.seconds: dict[str, float] = {}
        self.cases: list[CaseResult] = []
        self.env: Environment | None = None
        self.kernels: list = []
        self.peaks: list[int] = []
        self.signals: dict = {}  # role -> timing_gpu.Signals (GPU)
        self.calibration: Any = None  # timing_gpu.Calibration (GPU, timed blocks)

    def timeout(self) -> float:
        """Seconds one request may take: what is left of the block's time, less a margin to report in."""
        return max(1.0, self.deadline - time.monotonic() - 2.0)

    def result(self, status: str | Status, reason: str, **kw) -> WorkerResult:
        self.seconds["total"] = time.monotonic() - self.started
        cand = self.sides.get("candidate")
        sandbox = cand.sandbox if cand is not None else None
        if cand is not None and cand.violations and Status(status) not in (Status.crashed, Status.timeout):
            status, reason = Status.sandbox_violation, cand.violations[0] + (
                f" (+{len(cand.violations) - 1} more)" if len(cand.violations) > 1 else "")
            kw.pop("timing", None)
            kw.pop("more_timings", None)
        if sandbox is not None:
            sandbox = sandbox.model_copy(update={"violations": cand.violations[:20] if cand else []})
        return WorkerResult(status=Status(status), reason=reason, cases=self.cases, environment=self.env,
                            seconds=self.seconds, sandbox=sandbox, kernels=self.kernels,
                            peak_memory_bytes=max(self.peaks) if self.peaks else None, secret=self.req.secret, **kw)

    # --- the block ------------------------------------------------------------------------------------
    def run(self) -> WorkerResult:
        from kernel_tui.core.task import TaskSpec

        self.spec = TaskSpec.model_validate(self.req.task)
        import torch

        from kernel_tui.core.evaluator.device_info import device_environment

        if self.req.device == "cuda" and not torch.cuda.is_available():
            return self.result(Status.invalid_task, "device cuda requested but no GPU is visible")
        if self.req.device == "cpu":
            torch.set_num_threads(1)
        self.env = device_environment(self.req.device)  # the judge's own context, while the workers start
        t0 = time.monotonic()
        failed = self._wait_ready()
        self.seconds["load"] = time.monotonic() - t0
        if failed is not None:
            return failed
        failed = self._load_task()
        if failed is not None:
            return failed
        if self.req.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        self.free = free_bytes(self.req.device, self.req.memory_budget)
        from kernel_tui.core.evaluator.shared_sets import SharedSets

        self.shared = SharedSets(self.spec, self.req.device, self.sides, self.timeout)
        try:
            return self._evaluate()
        except SideFault as fault:
            return self._side_fault(fault, "")
        except CandidateFault as fault:
            return self.result(fault.status, fault.reason)

    def _evaluate(self) -> WorkerResult:
        if self.req.check_correctness:
            failed = self._correctness()
            if failed is not None:
                return failed
        timing, more = None, []
        if self.req.timing is not None:
            outcome = self._timing()
            if isinstance(outcome, WorkerResult):
                return outcome
            timing, more = outcome[0], outcome[1:]
        self._facts()
        return self.result(Status.ok, "correct" + (" and timed" if timing else ""), timing=timing, more_timings=more)

    def _wait_ready(self) -> WorkerResult | None:
        """Every worker confined (or refused, before its side's code is loaded); the probe loaded and the
        handoff measured on a GPU no side's code has touched yet; then the sides loaded."""
        try:
            for side in self.sides.values():
                missing = unconfined(side.wait_confined(min(READY_SECONDS, self.timeout())))
                if missing and not self.req.allow_unconfined and side.role != "probe":
                    return self.result(Status.evaluator_fault, (
                        f"{UNCONFINED_REFUSAL} ({'; '.join(missing)}): nothing was "
                        "run; evaluate anyway with --unconfined (or KERNEL_TUI_SANDBOX=0)"), retry_smaller=False)
            order = sorted(self.sides.values(), key=lambda s: s.role != "probe")
            for side in order:
                side.load(min(READY_SECONDS, self.timeout()))
                side.stop()
                if side.role == "probe":
                    self._calibrate(side)
        except SideFault as fault:
            return self._side_fault(fault, "loading")
        return None

    def _calibrate(self, probe: Side) -> None:
        from kernel_tui.core.evaluator.timing_gpu import Signals, calibrate

        self.signals = {"probe": Signals.share(probe, self.timeout())}
        self.calibration = calibrate(probe, self.signals["probe"], self.timeout())

    def _load_task(self) -> WorkerResult | None:
        from kernel_tui.core.evaluator.draw import use_generator
        from kernel_tui.core.evaluator.harness import load_module

        try:
            module = load_module(self.req.reference_source, self.folder / "ref", "kt_reference")
            self.reference = getattr(module, self.spec.reference.entrypoint)
        except Exception as exc:  # noqa: BLE001 - any failure here is the task's fault
            return self.result(Status.invalid_task, f"reference failed to load: {type(exc).__name__}: {exc}")
        if self.req.generator_source is not None and self.spec.generator is not None:
            try:
                gen = load_module(self.req.generator_source, self.folder / "gen", "kt_inputs")
                use_generator(getattr(gen, self.spec.generator.entrypoint))
            except Exception as exc:  # noqa: BLE001 - the task's fault
                return self.result(Status.invalid_task, f"the input generator failed to load: {type(exc).__name__}: {exc}")
        return None

    def _side_fault(self, fault: SideFault, what: str) -> WorkerResult:
        """A side's failure as the block's result: the candidate's is its own; the incumbent's makes the
        comparison impossible (the task's side, or this machine's); the probe's is the evaluator's."""
        role = fault.role
        if fault.reply is not None and fault.reply.oom is not None and role in ("candidate", "incumbent"):
            status, reason = blame_out_of_memory(role, fault.reason, fault.reply.oom.requested,
                                                 fault.reply.oom.held, self._plan_now(), what or "a call")
            return self.result(status, reason)
        if role == "candidate" or fault.status == "evaluator_fault":
            return self.result(fault.status, fault.reason)
        if role == "probe":
            return self.result(Status.evaluator_fault, f"the timing probe failed: {fault.reason}")
        return self.result(Status.invalid_task, f"the incumbent failed ({fault.status}): {fault.reason}")

    def _plan_now(self) -> MemoryPlan:
        case = self.spec.timing_shape(self.req.device)
        return self.plan_for(case)

    def plan_for(self, case) -> MemoryPlan:
        # as the timer assumes when the device reports no L2 size
        l2 = (self.env.l2_bytes if self.env else None) or (50 * 2**20 if self.req.device == "cuda" else 0)
        return fitting_plan(self.spec, case.name, case.dims, free_bytes=self.free, l2_bytes=l2,
                            level=self.req.memory_level)

    @property
    def stale(self) -> bool:
        return self.req.memory_level < SMALLEST

    # --- correctness ----------------------------------------------------------------------------------
    def _correctness(self) -> WorkerResult | None:
        from kernel_tui.core.errors import TaskError

        t1 = time.monotonic()
        try:
            shapes = self.spec.correctness_shapes(self.req.device)
        except TaskError as exc:
            return self.result(Status.invalid_task, str(exc))
        too_big = [p for p in map(self.plan_for, [*shapes, self.spec.timing_shape(self.req.device)]) if not p.fits]
        if too_big:  # refused before anything is built: no smaller plan helps
            return self.result(Status.evaluator_fault, too_big[0].refusal(), retry_smaller=False)
        if self.req.device == "cuda":
            failed = self._first_call()
            if failed is not None:
                return failed
        plan = [(si, case, seed, False) for si, case in enumerate(shapes) for seed in self.spec.correctness.seeds]
        plan += [(si, case, EDGE_SEED, True) for si, case in enumerate(shapes) if _has_edges(self.spec, case.dims)]
        for k, (si, case, seed, edge) in enumerate(plan, 1):
            failed = self._case(case, si, seed, edge)
            if failed is not None:
                return failed
            self.emit.progress("correctness", k, len(plan))
        self.seconds["correctness"] = time.monotonic() - t1
        return None

    def _first_call(self) -> WorkerResult | None:
        """The candidate's first call at the timing shape (it compiles there), then the capture check."""
        case = self.spec.timing_shape(self.req.device)
        step = "first call at the timing shape"
        try:
            (s,) = self.shared.build(case.dims, [seed_of(self.req.secret, 0, 0)], ["candidate"], stale=self.stale)
        except Exception as exc:  # noqa: BLE001 - building the evaluator's buffers
            return self._own_failure(exc, step, case)
        side = self.sides["candidate"]
        try:
            s.prepare_call("candidate")
            self._sync()
            t_call = time.monotonic()
            side.request(Command(op="call", calls=[self.shared.call(s)], shape=case.name), self.timeout())
            self.seconds["first_call"] = time.monotonic() - t_call
            capture = side.request(Command(op="capture", calls=[self.shared.call(s)]), self.timeout())
        except SideFault as fault:
            return self._side_fault(fault, step)
        finally:
            self.shared.release([s])
        if capture.unjoined:
            return self.result(Status.policy_violation, (
                "side-stream: the candidate forks work onto another stream and never joins it back to the "
                f"calling stream, so the timed stream ends before its kernels do ({capture.unjoined.splitlines()[0][:120]})"))
        return None

    def _case(self, case, si: int, seed: int, edge: bool) -> WorkerResult | None:
        from kernel_tui.core.evaluator.draw import TaskFault

        what = f"shape {case.name} {tuple(case.dims.values())} " + ("edge values" if edge else f"seed {seed}")
        try:
            (s,) = self.shared.build(case.dims, [seed_of(self.req.secret, seed, si)], ["candidate"],
                                     stale=self.stale, edge=edge)
            s.compute_expected(self.reference)
            self._sync()
        except TaskFault as exc:
            if edge:  # values the reference itself cannot take (NaN or Inf out): nothing to judge with
                self.cases.append(CaseResult(shape=case.name, seed=seed, passed=True, values="edge",
                                             detail=f"edge values not checked: {exc}"))
                return None
            return self.result(Status.invalid_task, f"{what}: {exc}")
        except Exception as exc:  # noqa: BLE001
            if is_out_of_memory(exc):
                return self.result(Status.evaluator_fault, evaluator_out_of_memory(what, exc, self.plan_for(case)))
            return self.result(Status.invalid_task, f"reference failed at {what}: {type(exc).__name__}: {exc}")
        try:
            if not edge and (loose := s.loose_tolerances()):
                return self.result(Status.invalid_task, f"{what}: {loose[0]}")
            s.prepare_call("candidate")
            self._sync()
            t_call = time.monotonic()
            try:
                self.sides["candidate"].request(
                    Command(op="call", calls=[self.shared.call(s)], shape=case.name), self.timeout())
            except SideFault as fault:
                self.cases.append(CaseResult(shape=case.name, seed=seed, passed=False, detail=fault.reason,
                                             values="edge" if edge else "drawn"))
                return self._side_fault(fault, what)
            self.seconds.setdefault("first_call", time.monotonic() - t_call)
            try:
                err = s.check(what, "candidate")
            except CandidateFault as fault:
                self.cases.append(CaseResult(shape=case.name, seed=seed, passed=False, detail=fault.reason,
                                             values="edge" if edge else "drawn"))
                return self.result(fault.status, fault.reason)
            self.cases.append(CaseResult(shape=case.name, seed=seed, passed=True, max_abs_error=err,
                                         values="edge" if edge else "drawn"))
            return None
        finally:
            self.shared.release([s])

    def _own_failure(self, exc: Exception, what: str, case) -> WorkerResult:
        if is_out_of_memory(exc):
            return self.result(Status.evaluator_fault, evaluator_out_of_memory(what, exc, self.plan_for(case)))
        raise exc

    def _sync(self) -> None:
        if self.req.device == "cuda":
            import torch

            torch.cuda.synchronize()

    # --- timing ---------------------------------------------------------------------------------------
    def _timing(self) -> list | WorkerResult:
        from kernel_tui.core.evaluator.draw import TaskFault
        from kernel_tui.core.evaluator.timing import BlockTimer

        assert self.req.timing is not None
        t2 = time.monotonic()
        signals = self._signals()
        blocks = []
        timed = self.spec.benchmark_shapes(self.req.device)
        for case, _weight in timed:
            at = f" at shape {case.name}" if len(timed) > 1 else ""
            self.free = free_bytes(self.req.device, self.req.memory_budget)  # after correctness, or the last shape
            plan = self.plan_for(case)
            if not plan.fits:
                return self.result(Status.evaluator_fault, f"during timing: {plan.refusal()}", retry_smaller=False)
            timer = BlockTimer(self.spec, case, self.req.device, self.reference, self.req.timing, self.req.block,
                               self.emit.progress, memory=plan, shared=self.shared,
                               sides={r: self.sides[r] for r in ("incumbent", "candidate")}, timeout=self.timeout,
                               probe=self.sides.get("probe"), signals=signals, secret=self.req.secret,
                               calibration=self.calibration)
            try:
                if self.req.device == "cuda":
                    from kernel_tui.core.evaluator.timing_gpu import GpuWindows

                    blocks.append(GpuWindows(timer).run())
                else:
                    blocks.append(timer.run_interpreter())
            except TaskFault as exc:
                return self.result(Status.invalid_task, f"during timing{at}: {exc}")
            except CandidateFault as fault:  # an evaluator_fault here is a busy GPU: no memory plan cures it
                return self.result(fault.status, fault.reason, retry_smaller=False)
            except SideFault as fault:
                return self._side_fault(fault, f"during timing{at}")
            except Exception as exc:
                if is_out_of_memory(exc):  # the judge's own work: building, refreshing, checking sets
                    return self.result(Status.evaluator_fault, evaluator_out_of_memory(f"during timing{at}", exc, plan))
                raise
            finally:
                self.shared.release(timer.sets)
        self.seconds["timing"] = time.monotonic() - t2
        return blocks

    def _signals(self) -> dict:
        if self.req.device != "cuda":
            return {}
        from kernel_tui.core.evaluator.timing_gpu import Signals

        for role, side in self.sides.items():
            if role not in self.signals:
                self.signals[role] = Signals.share(side, self.timeout())
        return self.signals

    def _facts(self) -> None:
        """The candidate's compiled kernels (GPU), and the sides' peak memory: figures, never verdicts."""
        if self.req.device != "cuda":
            return
        import torch

        self.peaks.append(int(torch.cuda.max_memory_allocated()))
        try:
            reply: Reply = self.sides["candidate"].request(Command(op="facts"), self.timeout())
        except SideFault:
            return
        self.kernels = reply.kernels
        if reply.peak_memory_bytes is not None:
            self.peaks.append(self.peaks[-1] + reply.peak_memory_bytes)


def unconfined(report) -> list[str]:
    """What essential confinement the worker's report says the machine could not give (none for a sandbox
    switched off on purpose: the caller asked for that)."""
    if report is None:
        return []
    return [m for m in report.essential_missing if "switched off" not in m]


def _has_edges(spec, dims: dict[str, int]) -> bool:
    """Whether an edge draw differs from a plain one: some float input drawn from a distribution with edges."""
    from kernel_tui.core.evaluator.draw import DTYPES, distribution, edge_values, generator_in_use

    if generator_in_use():
        return False
    for t in spec.tensors:
        if t.is_argument_tensor and DTYPES[t.dtype].is_floating_point:
            if edge_values(distribution(spec, t, DTYPES[t.dtype]), dims, DTYPES[t.dtype]):
                return True
    return False


def setups_in(folder: Path) -> list[tuple[str, Path]]:
    return [(role, folder / f"{role}.side.json") for role in ROLES if (folder / f"{role}.side.json").exists()]


def main(folder_text: str, result_fd: int) -> None:
    """The judge process: fork the workers first, then read the request and judge."""
    folder = Path(folder_text)
    emit = Emit(result_fd)
    sides: dict[str, Side] = {}
    judge: Judge | None = None
    try:
        for role, path in setups_in(folder):  # each worker sees only the setups read before it
            sides[role] = Side.spawn(WorkerSetup.model_validate_json(path.read_text(encoding="utf-8")))
        req = WorkerRequest.model_validate_json((folder / "request.json").read_text(encoding="utf-8"))
        # a judge stuck past its time leaves its stacks in judge.err before the caller kills it
        faulthandler.dump_traceback_later(req.timeout_seconds + 5, exit=False)
        judge = Judge(req, folder, sides, emit)
        result = judge.run()
    except Exception as exc:  # noqa: BLE001 - last resort: report rather than die silently
        result = last_resort(exc, "judge")
    finally:
        for side in sides.values():
            side.close()
        if judge is not None and hasattr(judge, "shared"):
            judge.shared.release_all()  # the workers are gone: nothing maps the arenas any more
    emit.result(result)
    sys.stdout.flush()
    os._exit(0)  # a broken device context must not keep the process alive
