"""The profile worker: one process that calls the candidate alone, for a profiler to watch or for the
compiler's facts about its kernels. Nothing it reports decides a verdict (correctness and timing are the
judge's, judge.py); it holds no reference answer, no incumbent and no timer.

Usage (the runner does this): worker REQUEST.json RESULT.json. It builds the inputs of the timing shape
itself, makes a few warm-up calls, then one call between cudaProfilerStart and Stop, and writes a
WorkerResult. Anything the candidate does wrong becomes a status with a reason; only a hard crash or a hang
leaves no result, and the runner reports those.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from kernel_tui.core.evaluator.kernel_facts import FirstShapes
from kernel_tui.core.evaluator.kernel_worker import classify
from kernel_tui.core.evaluator.memory import (
    SMALLEST,
    MemoryPlan,
    blame_out_of_memory,
    first_line,
    fitting_plan,
    free_bytes,
    is_out_of_memory,
    requested_bytes,
)
from kernel_tui.core.evaluator.models import UNCONFINED_REFUSAL, Status, WorkerRequest, WorkerResult, last_resort
from kernel_tui.core.evaluator.sandbox import Guard, SandboxRefused, SandboxReport, apply, for_profiled_process


class _Progress:
    """Progress lines appended to a file the runner tails."""

    def __init__(self, path: Path) -> None:
        self.stream = open(path, "a", buffering=1, encoding="utf-8")

    def __call__(self, phase: str, k: int, n: int) -> None:
        try:
            self.stream.write(json.dumps({"phase": phase, "k": k, "n": n}) + "\n")
        except OSError:
            pass


def _kernel_names(module) -> set[str]:
    from triton.runtime.jit import KernelInterface

    return {n for n, v in vars(module).items() if isinstance(v, KernelInterface)}


def run(req: WorkerRequest, workdir: Path, progress: _Progress, guard: Guard | None = None) -> WorkerResult:
    from kernel_tui.core.evaluator.device_info import device_environment
    from kernel_tui.core.evaluator.harness import load_module
    from kernel_tui.core.task import TaskSpec

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    spec = TaskSpec.model_validate(req.task)

    import torch

    if req.device == "cpu":
        torch.set_num_threads(1)
    elif not torch.cuda.is_available():
        return WorkerResult(status=Status.invalid_task, reason="device cuda requested but no GPU is visible")
    env = device_environment(req.device)
    l2 = env.l2_bytes or (50 * 2**20 if req.device == "cuda" else 0)
    free = free_bytes(req.device, req.memory_budget)

    def plan_for(case) -> MemoryPlan:  # as the judge plans: a problem it can time, this worker can run
        return fitting_plan(spec, case.name, case.dims, free_bytes=free, l2_bytes=l2, level=req.memory_level)

    cand_dir = workdir / "candidate"
    cand_file = str(cand_dir / "kt_candidate.py")
    if guard is not None:
        guard.arm(cand_file)
    try:
        cand_module = load_module(req.candidate_source, cand_dir, "kt_candidate")
    except SyntaxError as exc:
        return WorkerResult(status=Status.compile_error, reason=f"syntax error line {exc.lineno}: {exc.msg}", environment=env)
    except Exception as exc:  # noqa: BLE001 - the candidate's import-time failure
        return WorkerResult(status=Status.compile_error, reason=f"importing the candidate raised {type(exc).__name__}: {exc}", environment=env)
    candidate = getattr(cand_module, spec.entrypoint, None)
    if not callable(candidate):
        return WorkerResult(status=Status.compile_error, reason=f"the candidate defines no callable {spec.entrypoint}", environment=env)
    kernels = _kernel_names(cand_module)
    interpreted = req.device == "cpu"
    compiled_at = None if interpreted else FirstShapes({n: getattr(cand_module, n) for n in kernels})
    seconds["load"] = time.perf_counter() - t0

    def fail(status: str | Status, reason: str) -> WorkerResult:
        seconds["total"] = time.perf_counter() - t0
        return WorkerResult(status=Status(status), reason=reason, environment=env, seconds=seconds)

    def candidate_failed(exc: Exception, case, what: str) -> WorkerResult:
        """A failed candidate call: out of memory is blamed by the plan, anything else classified."""
        if is_out_of_memory(exc):
            return fail(*blame_out_of_memory("candidate", first_line(exc), requested_bytes(exc), 0, plan_for(case), what))
        status, reason = classify(exc, cand_file, kernels, interpreted)
        return fail(status, f"{what}: {reason}")

    stale = req.memory_level < SMALLEST
    done = _profiled_call(req, spec, candidate, plan_for, stale, fail, candidate_failed, seconds, t0, env)
    if done.status is Status.ok and req.device == "cuda":  # compiled by the warm-up: what the compiler made
        _note_shape(compiled_at, spec.timing_shape(req.device).name)
        done = done.model_copy(update={"kernels": _kernel_facts(compiled_at)})
    return done


PROFILE_WARMUP = 3  # calls before the profiled one: compiling and autotuning stay outside the profiled range


def _profiled_call(req: WorkerRequest, spec, candidate, plan_for, stale: bool, fail, candidate_failed,
                   seconds: dict[str, float], t0: float, env) -> WorkerResult:
    """The candidate at the timing shape: warm-up calls, then one call inside cudaProfilerStart/Stop, so
    that a profiler started with profiling off records the candidate's own kernels and nothing else
    (input generation, the warm-up's compiles and autotuning stay outside)."""
    import torch

    from kernel_tui.core.evaluator.harness import ArgumentSet, TaskFault

    case = spec.timing_shape(req.device)
    plan = plan_for(case)
    if not plan.fits:
        return fail(Status.evaluator_fault, plan.refusal()).model_copy(update={"retry_smaller": False})
    try:
        inputs = ArgumentSet.build(spec, case.dims, req.device, 0, stale=stale)
    except TaskFault as exc:
        return fail(Status.invalid_task, f"profile at shape {case.name}: {exc}")
    cuda = req.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    step = "profile warm-up"
    try:
        for _ in range(PROFILE_WARMUP):
            candidate(*inputs.args())
        sync()
        step = "profiled call"
        if cuda:
            torch.cuda.profiler.start()
        candidate(*inputs.args())
        sync()
        if cuda:
            torch.cuda.profiler.stop()
    except Exception as exc:  # noqa: BLE001 - the candidate's fault, classified
        return candidate_failed(exc, case, step)
    seconds["total"] = time.perf_counter() - t0
    return WorkerResult(status=Status.ok, environment=env, seconds=seconds,
                        reason=f"{PROFILE_WARMUP + 1} calls at shape {case.name}, the last between cudaProfilerStart and Stop")


def _note_shape(shapes: FirstShapes | None, name: str) -> None:
    if shapes is not None:
        with contextlib.suppress(Exception):  # facts are a help, never a reason for a verdict
            shapes.note(name)


def _kernel_facts(shapes: FirstShapes | None) -> list:
    """The compiled facts of the candidate's kernels, each with the shape it was first compiled for; none
    (never an error) where Triton keeps them elsewhere."""
    from kernel_tui.core.evaluator.kernel_facts import device_limits, facts_of

    if shapes is None:
        return []
    try:
        return facts_of(shapes.kernels, device_limits(), shapes)
    except Exception:  # noqa: BLE001 - facts are a help, never a reason for a verdict
        return []


def _peak_memory() -> int | None:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    try:
        return int(torch.cuda.max_memory_allocated())
    except Exception:  # noqa: BLE001 - a broken CUDA context: the figure is missing, the result is not
        return None


def _write(path: Path, result: WorkerResult) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(result.model_dump_json(), encoding="utf-8")
    os.replace(tmp, path)


def _confine(req: WorkerRequest) -> tuple[SandboxReport, Guard | None]:
    """Apply the sandbox before any task or candidate code is loaded."""
    if req.sandbox is None:
        return SandboxReport(missing=["the sandbox was switched off (KERNEL_TUI_SANDBOX=0)"]), None
    plan = for_profiled_process(req.sandbox, dict(os.environ))
    report = apply(plan)
    widened = plan.read[len(req.sandbox.read):]
    if widened:  # said, so that a profiled worker's reads can be audited
        report = report.model_copy(update={"active": [*report.active, "reads the profiler's folders: " + ", ".join(widened)]})
    guard = Guard(plan)
    guard.install()
    return report, guard


def refusal(req: WorkerRequest, confined: SandboxReport) -> str | None:
    """Why this worker must not load its source, if it must not: a layer of the sandbox is missing and nobody
    opted out of it. Refused before anything is loaded, as the judge does; the task's own PyTorch baseline is
    the user's code, not a candidate's, and runs anyway."""
    from kernel_tui.core.evaluator.judge import unconfined

    missing = unconfined(confined)
    if not missing or req.allow_unconfined or req.trusted:
        return None
    return (f"{UNCONFINED_REFUSAL} ({'; '.join(missing)}): nothing was run; "
            "profile anyway with --unconfined (or KERNEL_TUI_SANDBOX=0)")


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[0]), Path(argv[1])
    progress = _Progress(request_path.parent / "progress.jsonl")
    req = WorkerRequest.model_validate_json(request_path.read_text(encoding="utf-8"))
    try:
        confined, guard = _confine(req)
    except SandboxRefused as exc:  # this machine's fault, not the candidate's: nothing of it was loaded
        _write(result_path, WorkerResult(status=Status.evaluator_fault, reason=f"sandbox: {exc}"))
        os._exit(0)
    refused = refusal(req, confined)
    if refused is not None:
        _write(result_path, WorkerResult(status=Status.evaluator_fault, sandbox=confined, reason=refused))
        os._exit(0)
    try:
        result = run(req, request_path.parent, progress, guard)
    except Exception as exc:  # noqa: BLE001 - last resort: report rather than die silently
        result = last_resort(exc, "worker")
    tried = guard.violations if guard else []
    update: dict = {"sandbox": confined.model_copy(update={"violations": tried}), "peak_memory_bytes": _peak_memory()}
    if guard is not None and tried:  # whatever else happened, and even if the candidate caught the refusal
        update.update(status=Status.sandbox_violation, reason=guard.reason(), timing=None)
    result = result.model_copy(update=update)
    _write(result_path, result)
    sys.stdout.flush()
    # A candidate's stray threads or a broken CUDA context must not keep the process alive.
    os._exit(0)
