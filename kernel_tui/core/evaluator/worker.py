"""The evaluation worker: runs in its own process (`python -I`), never in the caller's.

Usage (the runner does this): worker REQUEST.json RESULT.json. Progress goes to progress.jsonl beside the
request. It loads the reference,
the candidate and the incumbent from source files in its private directory, checks the candidate's
correctness, times one block of interleaved pairs, and writes a WorkerResult. Anything the candidate
does wrong becomes a status with a reason; only a hard crash or a hang leaves no result, and the
runner reports those.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from kernel_tui.core.evaluator.kernel_facts import FirstShapes
from kernel_tui.core.evaluator.memory import (
    MAX_LEVEL,
    SMALLEST,
    MemoryPlan,
    first_line,
    gib,
    is_out_of_memory,
    requested_bytes,
)
from kernel_tui.core.evaluator.memory import plan as memory_plan
from kernel_tui.core.evaluator.models import (
    CaseResult,
    Environment,
    Status,
    WorkerRequest,
    WorkerResult,
)
from kernel_tui.core.evaluator.sandbox import Guard, SandboxRefused, SandboxReport, apply, for_profiled_process


class _Progress:
    """Progress lines appended to a file the runner tails (works for spawned and forked workers)."""

    def __init__(self, path: Path) -> None:
        self.stream = open(path, "a", buffering=1, encoding="utf-8")

    def __call__(self, phase: str, k: int, n: int) -> None:
        try:
            self.stream.write(json.dumps({"phase": phase, "k": k, "n": n}) + "\n")
        except OSError:
            pass


def _environment(device: str):
    import torch
    import triton

    # platform.machine(), not processor(): the latter runs `uname -p`, and workers start no programs
    name, l2, sms, vendor = platform.machine(), None, None, "cpu"
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        name = props.name
        l2 = int(getattr(props, "L2_cache_size", 0) or 0) or None
        sms = props.multi_processor_count
        vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
    return Environment(
        device=device, device_name=name, python=platform.python_version(), torch=torch.__version__,
        triton=triton.__version__, l2_bytes=l2, sm_count=sms, vendor=vendor,
    )


def _candidate_line(exc: BaseException, filename: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return f" (candidate line {frames[-1].lineno})" if frames else ""


def _kernel_names(module) -> set[str]:
    from triton.runtime.jit import KernelInterface

    return {n for n, v in vars(module).items() if isinstance(v, KernelInterface)}


def classify(exc: BaseException, filename: str, kernels: set[str], interpreted: bool) -> tuple[Status, str]:
    """Map an exception from a candidate call to a status and one-line reason."""
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        exc = exc.__cause__  # the interpreter wraps what the kernel raised
    kind = type(exc).__name__
    message = str(exc).strip().splitlines()
    text = f"{kind}: {message[-1] if message else ''}{_candidate_line(exc, filename)}"
    if type(exc).__module__.startswith("triton.compiler") or kind == "CompilationError":
        return Status.compile_error, text
    if interpreted and isinstance(exc, (NameError, AttributeError, TypeError)):
        in_kernel = any(
            f.filename == filename and f.name in kernels for f in traceback.extract_tb(exc.__traceback__)
        )
        if in_kernel:  # what a compiler would reject, met by the interpreter at run time
            return Status.compile_error, f"{text} [in a kernel, under the CPU interpreter]"
    return Status.runtime_error, text


def _seed(seed: int, shape_index: int) -> int:
    return seed * 7919 + shape_index * 104729


def free_bytes(device: str, budget: int | None) -> int:
    """Memory this worker may plan with: what the device has free (the host's available memory under
    the CPU interpreter), capped by the request's budget."""
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()  # what this process cached but no longer holds is free for the plan
        free = torch.cuda.mem_get_info()[0]
    else:
        free = host_free_bytes()
    return min(free, budget) if budget is not None else free


def host_free_bytes() -> int:
    """The host memory a CPU-interpreter worker may plan with: what the kernel says is available (half the
    physical memory where it cannot be read), and no more than half the address-space limit, if any."""
    import resource

    free = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return min(free, soft // 2) if soft != resource.RLIM_INFINITY else free


def blame_out_of_memory(side: str, error: BaseException, requested: int | None, held: int,
                        plan: MemoryPlan, what: str) -> tuple[Status, str]:
    """Whose fault an out-of-memory error in a kernel call is. The candidate's when it asked for more
    than the room the plan keeps for a kernel's own allocations, or when it fails even under the smallest
    plan; otherwise the evaluator's buffers left too little, and the evaluation is retried smaller."""
    cause = first_line(error)
    if side == "candidate":
        asked = (requested or 0) + max(held, 0)
        if asked > plan.workspace_bytes:
            return Status.runtime_error, (
                f"{what}: the candidate ran out of memory asking for {gib(asked)} beyond its arguments; the evaluator "
                f"keeps {gib(plan.workspace_bytes)} free for a kernel's own allocations ({cause})")
        if plan.level >= MAX_LEVEL:
            return Status.runtime_error, (
                f"{what}: the candidate ran out of memory even under the evaluator's smallest plan "
                f"({plan.summary(1)}) ({cause})")
    return Status.evaluator_fault, evaluator_out_of_memory(what, error, plan, side)


def evaluator_out_of_memory(what: str, error: BaseException, plan: MemoryPlan | None, side: str = "") -> str:
    during = f" in the {side}'s call" if side else ""
    planned = f" ({plan.summary()})" if plan is not None else ""
    return f"{what}: the evaluator ran out of memory{during} with its own buffers{planned}: {first_line(error)}"


def run(req: WorkerRequest, workdir: Path, progress: _Progress, guard: Guard | None = None) -> WorkerResult:
    from kernel_tui.core.errors import TaskError
    from kernel_tui.core.evaluator.harness import ArgumentSet, CandidateFault, TaskFault, load_module, use_generator
    from kernel_tui.core.task import TaskSpec

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    spec = TaskSpec.model_validate(req.task)

    import torch

    if req.device == "cpu":
        torch.set_num_threads(1)
    elif not torch.cuda.is_available():
        return WorkerResult(status=Status.invalid_task, reason="device cuda requested but no GPU is visible")
    env = _environment(req.device)
    sync = torch.cuda.synchronize if req.device == "cuda" else (lambda: None)
    stale = req.memory_level < SMALLEST  # the smallest plan precomputes no stale answer
    l2 = env.l2_bytes or (50 * 2**20 if req.device == "cuda" else 0)  # as the timer assumes when none is reported
    if req.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    free = free_bytes(req.device, req.memory_budget)

    def plan_for(case) -> MemoryPlan:
        return memory_plan(spec, case.name, case.dims, free_bytes=free, l2_bytes=l2, level=req.memory_level)

    try:
        ref_module = load_module(req.reference_source, workdir / "ref", "kt_reference")
        reference = getattr(ref_module, spec.reference.entrypoint)
    except Exception as exc:  # noqa: BLE001 - any failure here is the task's fault
        return WorkerResult(status=Status.invalid_task, reason=f"reference failed to load: {type(exc).__name__}: {exc}", environment=env)
    if req.generator_source is not None and spec.generator is not None:
        try:
            gen_module = load_module(req.generator_source, workdir / "gen", "kt_inputs")
            use_generator(getattr(gen_module, spec.generator.entrypoint))
        except Exception as exc:  # noqa: BLE001 - the task's fault
            return WorkerResult(status=Status.invalid_task, reason=f"the input generator failed to load: {type(exc).__name__}: {exc}", environment=env)

    cand_dir = workdir / "candidate"
    cand_file = str(cand_dir / "kt_candidate.py")
    if guard is not None:
        guard.arm(cand_file, str(workdir / "incumbent" / "kt_incumbent.py"))
    try:
        cand_module = load_module(req.candidate_source, cand_dir, "kt_candidate")
    except SyntaxError as exc:
        return WorkerResult(status=Status.compile_error, reason=f"syntax error line {exc.lineno}: {exc.msg}", environment=env)
    except Exception as exc:  # noqa: BLE001 - the candidate's import-time failure
        return WorkerResult(status=Status.compile_error, reason=f"importing the candidate raised {type(exc).__name__}: {exc}{_candidate_line(exc, cand_file)}", environment=env)
    candidate = getattr(cand_module, spec.entrypoint, None)
    if not callable(candidate):
        return WorkerResult(status=Status.compile_error, reason=f"the candidate defines no callable {spec.entrypoint}", environment=env)
    kernels = _kernel_names(cand_module)
    interpreted = req.device == "cpu"
    compiled_at = None if interpreted else FirstShapes({n: getattr(cand_module, n) for n in kernels})
    seconds["load"] = time.perf_counter() - t0

    cases: list[CaseResult] = []
    facts: list = []  # the candidate's compiled kernels, read after its correctness calls on a GPU

    def fail(status: str | Status, reason: str) -> WorkerResult:
        seconds["total"] = time.perf_counter() - t0
        return WorkerResult(status=Status(status), reason=reason, cases=cases, environment=env, seconds=seconds)

    from kernel_tui.core.evaluator.recorder import HostOpRecorder

    def candidate_failed(exc: Exception, case, what: str) -> WorkerResult:
        """A failed candidate call outside timing: out of memory is blamed by the plan, anything else classified."""
        if is_out_of_memory(exc):
            status, reason = blame_out_of_memory("candidate", exc, requested_bytes(exc), 0, plan_for(case), what)
            return fail(status, reason)
        status, reason = classify(exc, cand_file, kernels, interpreted)
        return fail(status, f"{what}: {reason}")

    if req.check_correctness:
        t1 = time.perf_counter()
        try:
            shapes = spec.correctness_shapes(req.device)
        except TaskError as exc:
            return fail(Status.invalid_task, str(exc))
        too_big = [p for p in map(plan_for, [*shapes, spec.timing_shape(req.device)]) if not p.fits]
        if too_big:  # refused before anything is built, not run out of memory on; no smaller plan helps
            return fail(Status.evaluator_fault, too_big[0].refusal()).model_copy(update={"retry_smaller": False})
        if req.device == "cuda":  # first: a stray stream can also race the poisoning of the next case
            from kernel_tui.core.evaluator.streams import check_stream_order
            from kernel_tui.core.evaluator.timing import KernelOutOfMemory, watch_memory

            step = "first call at the timing shape"
            first_case = spec.timing_shape(req.device)
            try:
                probe = ArgumentSet.build(spec, first_case.dims, req.device, _seed(0, 0), stale=stale)
            except TaskFault as exc:
                return fail(Status.invalid_task, f"{step}: {exc}")
            try:
                t_call = time.perf_counter()
                candidate(*probe.args())  # compiles: a blocked stream must not wait on the compiler
                sync()
                seconds["first_call"] = time.perf_counter() - t_call
                _note_shape(compiled_at, first_case.name)
                step = "stream-order check"
                # the probe's own buffers are the evaluator's; only the candidate's calls are its own
                why = check_stream_order(watch_memory("candidate", candidate), probe)
            except KernelOutOfMemory as oom:
                return fail(*blame_out_of_memory(oom.side, oom.error, oom.requested, oom.held, plan_for(first_case), step))
            except Exception as exc:  # noqa: BLE001 - the candidate's fault, classified
                if step == "stream-order check" and is_out_of_memory(exc):
                    return fail(Status.evaluator_fault, evaluator_out_of_memory(step, exc, plan_for(first_case)))
                return candidate_failed(exc, first_case, step)
            if why:
                return fail(Status.policy_violation, why)
            del probe
        total = len(shapes) * len(spec.correctness.seeds)
        k = 0
        s: ArgumentSet | None = None
        for si, case in enumerate(shapes):
            for seed in spec.correctness.seeds:
                what = f"shape {case.name} {tuple(case.dims.values())} seed {seed}"
                try:
                    s = None  # the last case's buffers go before this one's are made
                    s = ArgumentSet.build(spec, case.dims, req.device, _seed(seed, si), stale=stale)
                    s.compute_expected(reference)
                    sync()
                except TaskFault as exc:
                    return fail(Status.invalid_task, f"{what}: {exc}")
                except Exception as exc:  # noqa: BLE001
                    if is_out_of_memory(exc):
                        return fail(Status.evaluator_fault, evaluator_out_of_memory(what, exc, plan_for(case)))
                    return fail(Status.invalid_task, f"reference failed at {what}: {type(exc).__name__}: {exc}")
                loose = s.loose_tolerances()
                if loose:
                    return fail(Status.invalid_task, f"{what}: {loose[0]}")
                s.prepare_call()
                recorder = HostOpRecorder()
                t_call = time.perf_counter()
                try:
                    with recorder:
                        candidate(*s.args())
                    sync()
                except Exception as exc:  # noqa: BLE001 - the candidate's fault, classified
                    result = candidate_failed(exc, case, what)
                    cases.append(CaseResult(shape=case.name, seed=seed, passed=False, detail=result.reason))
                    return result
                if k == 0 and "first_call" not in seconds:
                    seconds["first_call"] = time.perf_counter() - t_call
                _note_shape(compiled_at, case.name)
                if recorder.forbidden and req.enforce_policy:
                    return fail(Status.policy_violation, f"torch-compute: host code ran {recorder.forbidden[0]} ({what})")
                try:
                    err = s.check(what)
                except CandidateFault as fault:
                    cases.append(CaseResult(shape=case.name, seed=seed, passed=False, detail=fault.reason))
                    return fail(fault.status, fault.reason)
                cases.append(CaseResult(shape=case.name, seed=seed, passed=True, max_abs_error=err))
                k += 1
                progress("correctness", k, total)
        s = None
        seconds["correctness"] = time.perf_counter() - t1
        if req.device == "cuda":  # every kernel the candidate launched is compiled by now
            facts = _kernel_facts(compiled_at)

    if req.profile:
        done = _profiled_call(req, spec, candidate, plan_for, stale, fail, candidate_failed, seconds, t0, env)
        if done.status is Status.ok and req.device == "cuda":  # compiled by the warm-up: what the compiler made
            _note_shape(compiled_at, spec.timing_shape(req.device).name)
            done = done.model_copy(update={"kernels": _kernel_facts(compiled_at)})
        return done

    timing, more_timings = None, []
    if req.timing is not None:
        from kernel_tui.core.evaluator.timing import BlockTimer, KernelOutOfMemory

        t2 = time.perf_counter()
        if req.incumbent_source is None:
            incumbent = candidate
        else:
            try:
                inc_module = load_module(req.incumbent_source, workdir / "incumbent", "kt_incumbent")
                incumbent = getattr(inc_module, spec.entrypoint)
            except Exception as exc:  # noqa: BLE001
                return fail(Status.invalid_task, f"the incumbent failed to load: {type(exc).__name__}: {exc}")
        blocks = []
        timed = spec.benchmark_shapes(req.device)
        for case, _weight in timed:
            at = f" at shape {case.name}" if len(timed) > 1 else ""
            free = free_bytes(req.device, req.memory_budget)  # after correctness, or the last shape, let go
            plan = plan_for(case)
            if not plan.fits:
                return fail(Status.evaluator_fault, f"during timing: {plan.refusal()}").model_copy(
                    update={"retry_smaller": False})
            timer = BlockTimer(spec, case, req.device, reference, req.timing, req.block, progress,
                               memory=plan, enforce_policy=req.enforce_policy)
            try:
                blocks.append(timer.run(incumbent, candidate))
            except TaskFault as exc:
                return fail(Status.invalid_task, f"during timing{at}: {exc}")
            except CandidateFault as fault:
                return fail(fault.status, fault.reason)
            except KernelOutOfMemory as oom:
                return fail(*blame_out_of_memory(oom.side, oom.error, oom.requested, oom.held, plan, f"during timing{at}"))
            except Exception as exc:  # noqa: BLE001
                if is_out_of_memory(exc):  # in the harness's own work: building, refreshing, checking sets
                    return fail(Status.evaluator_fault, evaluator_out_of_memory(f"during timing{at}", exc, plan))
                status, reason = classify(exc, cand_file, kernels, interpreted)
                return fail(status, f"during timing{at}: {reason}")
            del timer  # its input sets: the next shape may need the memory
        timing, more_timings = blocks[0], blocks[1:]
        seconds["timing"] = time.perf_counter() - t2

    seconds["total"] = time.perf_counter() - t0
    return WorkerResult(status=Status.ok, reason="correct" + (" and timed" if timing else ""), cases=cases, timing=timing,
                        more_timings=more_timings, environment=env, seconds=seconds, kernels=facts)


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
        inputs = ArgumentSet.build(spec, case.dims, req.device, _seed(0, 0), stale=stale)
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


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[0]), Path(argv[1])
    progress = _Progress(request_path.parent / "progress.jsonl")
    req = WorkerRequest.model_validate_json(request_path.read_text(encoding="utf-8"))
    try:
        confined, guard = _confine(req)
    except SandboxRefused as exc:  # this machine's fault, not the candidate's: nothing of it was loaded
        _write(result_path, WorkerResult(status=Status.evaluator_fault, reason=f"sandbox: {exc}"))
        os._exit(0)
    try:
        result = run(req, request_path.parent, progress, guard)
    except Exception as exc:  # noqa: BLE001 - last resort: report rather than die silently
        if is_out_of_memory(exc):  # the harness's own checks: never the candidate's fault
            result = WorkerResult(status=Status.evaluator_fault, reason=evaluator_out_of_memory("evaluation", exc, None))
        else:
            tail = traceback.format_exc().strip().splitlines()[-1]
            result = WorkerResult(status=Status.crashed, reason=f"worker error: {type(exc).__name__}: {exc} [{tail}]")
    tried = guard.violations if guard else []
    update: dict = {"sandbox": confined.model_copy(update={"violations": tried}), "peak_memory_bytes": _peak_memory()}
    if guard is not None and tried:  # whatever else happened, and even if the candidate caught the refusal
        update.update(status=Status.sandbox_violation, reason=guard.reason(), timing=None)
    result = result.model_copy(update=update)
    _write(result_path, result)
    sys.stdout.flush()
    # A candidate's stray threads or a broken CUDA context must not keep the process alive.
    os._exit(0)


BOOTSTRAP = (
    "import json,sys;"
    "sys.path[:0]=json.load(open(sys.argv[1]))['sys_path'];"
    "from kernel_tui.core.evaluator.worker import main;"
    "main(sys.argv[1:])"
)


def serve_forks() -> None:
    """The fork server's loop: torch and triton are imported once here, never CUDA-initialised, and
    each request is run by a fresh forked child in its own session. The child is a new process that no
    other candidate ever ran in; only the import cost is shared. Protocol on stdin/stdout, one JSON or
    text line each: request {"id", "request", "result", "workdir"} -> "pid ID PID"; "exit PID STATUS"
    when a child ends. EOF on stdin ends the server."""
    import select

    import torch  # noqa: F401 - the point of the server: pay these imports once
    import triton  # noqa: F401

    from kernel_tui.core.evaluator import harness, recorder, streams, timing  # noqa: F401

    print("ready", flush=True)
    children: set[int] = set()
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], 0.05)
        if readable:
            line = sys.stdin.readline()
            if not line:
                return
            req = json.loads(line)
            pid = os.fork()
            if pid == 0:  # the worker
                try:
                    os.setsid()
                    os.chdir(req["workdir"])
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    for fd, name in ((1, "stdout.log"), (2, "stderr.log")):
                        out = os.open(os.path.join(req["workdir"], name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                        os.dup2(out, fd)
                    sys.stdin = open(os.devnull)
                    sys.stdout = os.fdopen(1, "w", buffering=1)
                    sys.stderr = os.fdopen(2, "w", buffering=1)
                    os.environ["HOME"] = os.environ["TMPDIR"] = req["workdir"]
                    main([req["request"], req["result"]])
                finally:
                    os._exit(70)
            children.add(pid)
            print(f"pid {req['id']} {pid}", flush=True)
        while children:
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if done == 0:
                break
            children.discard(done)
            print(f"exit {done} {os.waitstatus_to_exitcode(status)}", flush=True)


FORK_SERVER_BOOTSTRAP = (
    "import json,sys;"
    "sys.path[:0]=json.loads(sys.argv[1]);"
    "from kernel_tui.core.evaluator.worker import serve_forks;"
    "serve_forks()"
)
