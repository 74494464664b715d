"""The caller's side of evaluation: static policy, worker processes, and the sequential gate.

One evaluation = the static policy, then a first worker that checks the candidate's correctness and
times one block, then further blocks in fresh processes until the gate decides, then fresh confirmation
blocks for a winner. Every block is a separate process, so process-to-process variance is in the data
the gate tests across.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from tempfile import mkdtemp
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kernel_tui.core import gate
from kernel_tui.core.evaluator.fork_server import ForkServer
from kernel_tui.core.evaluator.gating import Evaluation, gate_policy_for
from kernel_tui.core.evaluator.memory import MAX_LEVEL, parse_bytes
from kernel_tui.core.evaluator.models import (
    EvalResult,
    Status,
    TimingPlan,
    WorkerRequest,
    WorkerResult,
)
from kernel_tui.core.evaluator.protocol import WorkerSetup
from kernel_tui.core.evaluator.runner import package_paths, run_judge, run_worker, worker_env
from kernel_tui.core.evaluator.sandbox import SandboxPlan, build_plan, for_profiler, for_worker, netns, with_inductor
from kernel_tui.core.policy import check_source
from kernel_tui.core.profile.ncu import METRIC_NAMES, NCU_PORTS, ncu_messages, ncu_wrapper
from kernel_tui.core.task import Task

PROFILE_TIMEOUT = 300.0  # seconds: ncu replays each kernel once per pass of counters (~38 passes for a full set)
# The interpreter runs kernels thousands of times slower than a GPU and its timings mean nothing for
# GPU performance, so a CPU block is kept short: enough pairs for the pipeline and the gate to run.
INTERPRETER_PAIRS = 8
INTERPRETER_INNER = 2


class Progress(BaseModel):
    """A phase of an evaluation with k of n steps done (for progress bars)."""

    model_config = ConfigDict(frozen=True)
    phase: str  # policy, correctness, timing, confirmation, done
    k: int
    n: int
    block: int = 0


@functools.cache
def cuda_available() -> bool:
    """Asked of a child interpreter so the caller never imports torch itself."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
            capture_output=True, text=True, timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.strip().endswith("True")


def resolve_device(device: str) -> Literal["cpu", "cuda"]:
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r} (auto, cuda or cpu)")
    return device  # type: ignore[return-value]


def policy_rejection(task: Task, source: str, device: Literal["cpu", "cuda"]) -> EvalResult | None:
    """None when `source` passes the task's static policy, else the rejection as a result."""
    spec = task.spec
    report = check_source(
        source, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
        tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"],
        max_source_chars=spec.optimization.max_source_chars,
    )
    if report.syntax_error:
        return EvalResult(status=Status.compile_error, reason=f"syntax error {report.syntax_error}", device=device)
    if not report.ok:
        return EvalResult(
            status=Status.policy_violation, reason=report.summary(), device=device,
            policy_rule=report.violations[0].rule,
        )
    return None


class Evaluator:
    def __init__(
        self,
        task: Task,
        *,
        device: str = "auto",
        workdir: Path | None = None,
        enforce_policy: bool = True,
        cancel: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        policy: gate.GatePolicy | None = None,
        timeout: float | None = None,
        fork_server: bool = True,
        memory_budget: int | None = None,
        gpu: str | None = None,
        unconfined: bool = False,
        returning: Iterable[str] = (),
        inductor: Iterable[str] = (),
    ) -> None:
        self.task = task
        # Trusted PyTorch sources that return their outputs rather than write them (the suite's eager and
        # torch.compile sides, the task's eager baseline): timed as a user calls them, the copy into the
        # checked buffers made after the timed region. Matched by exact source: no candidate can opt in.
        self.returning = set(returning)
        if task.baseline_is_pytorch:
            self.returning.add(task.baseline_source)
        # Trusted sources that compile with torch.compile: their workers may run Inductor's compilers
        self.inductor = set(inductor)
        # a lease of the GPU pool: every worker of this evaluator (both sides of each paired block) runs on it
        self.gpu = gpu
        self.device = resolve_device(device)
        # absolute: workers (forked ones too) change directory before they read their paths
        self.workdir = (Path(workdir) if workdir else Path(mkdtemp(prefix="kernel-tui-eval-"))).resolve()
        # a folder of our own making goes when the evaluator does (or at exit); a given one is the caller's
        # (KERNEL_TUI_KEEP_WORKDIR=1 keeps it, for a look at the judges' logs)
        keep = workdir is not None or os.environ.get("KERNEL_TUI_KEEP_WORKDIR") == "1"
        self._cleanup = None if keep else weakref.finalize(self, shutil.rmtree, self.workdir, True)
        self.triton_cache = self.workdir / "triton-cache"
        self.enforce_policy = enforce_policy
        self.cancel = cancel or threading.Event()
        self.on_progress = on_progress
        self.policy = policy or gate_policy_for(task, self.device)
        self.timeout = timeout or task.spec.benchmark.timeout_seconds
        self._runs = 0
        # KERNEL_TUI_MEMORY_BUDGET (e.g. 40GiB) caps the device memory an evaluation plans with: a shared GPU
        budget = os.environ.get("KERNEL_TUI_MEMORY_BUDGET", "").strip()
        self.memory_budget = memory_budget if memory_budget is not None else (parse_bytes(budget) if budget else None)
        # the smallest memory plan that was needed so far: later workers start there instead of failing again
        self.memory_level = 0
        # KERNEL_TUI_FORK_SERVER=0 forces a fresh interpreter per worker (an escape hatch)
        self._use_fork_server = fork_server and os.environ.get("KERNEL_TUI_FORK_SERVER", "1") != "0"
        self._server: ForkServer | None = None
        self._server_lock = threading.Lock()
        # KERNEL_TUI_SANDBOX=0 runs workers unconfined (for debugging); every result then says so
        self._sandbox: SandboxPlan | None = (
            build_plan(self.device, self.triton_cache, package_paths())
            if os.environ.get("KERNEL_TUI_SANDBOX", "1") != "0" else None
        )
        # --unconfined (KERNEL_TUI_UNCONFINED=1): run candidates even where user namespaces or Landlock are
        # missing; every result says so
        self.unconfined = unconfined or os.environ.get("KERNEL_TUI_UNCONFINED", "0") == "1"

    @property
    def confined(self) -> bool:
        """Workers run in the sandbox and refuse to run where a layer of it is missing."""
        return self._sandbox is not None and not self.unconfined

    @property
    def address_space_limit(self) -> int | None:
        """The sandbox's address-space limit on a worker (the CPU interpreter's), if any."""
        return self._sandbox.max_address_space if self._sandbox else None

    def _fork_server(self) -> ForkServer | None:
        """Started on first use, restarted if it died; None (fresh interpreters) if it cannot start."""
        if not self._use_fork_server:
            return None
        with self._server_lock:
            if self._server is None or not self._server.alive:
                if self._server is not None:
                    self._server.close()
                folder = self.workdir / "fork-server"
                self._server = ForkServer(folder, worker_env(folder, self.device, self.triton_cache, self.gpu),
                                          package_paths())
                weakref.finalize(self, self._server.close)
                if not self._server.alive:
                    self._use_fork_server = False
                    return None
            return self._server

    def close(self) -> None:
        """Stop the fork server, and remove the working folder if this evaluator made it."""
        with self._server_lock:
            if self._server is not None:
                self._server.close()
                self._server = None
        if self._cleanup is not None:
            self._cleanup()

    # --- helpers --------------------------------------------------------------------------------
    def _emit(self, phase: str, k: int, n: int, block: int = 0) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(phase=phase, k=k, n=n, block=block))

    def plan(self, seed: int = 0) -> TimingPlan:
        b = self.task.spec.benchmark
        if self.device == "cpu":
            return TimingPlan(
                pairs=min(b.samples, INTERPRETER_PAIRS), inner_repeats=min(b.inner_repeats, INTERPRETER_INNER),
                warmup=1, method=b.timing, seed=seed,
            )
        return TimingPlan(pairs=b.samples, inner_repeats=b.inner_repeats, warmup=b.warmup, method=b.timing, seed=seed)

    def _worker(
        self, candidate: str, incumbent: str | None, *, correctness: bool, timing: TimingPlan | None,
        block: int, deadline: float, phase: str, trusted: bool = False,
    ) -> WorkerResult:
        """One worker; after an evaluator out-of-memory the same work again with smaller memory plans,
        each with a fresh time limit (a retry must not be cut short and read as the candidate's timeout).
        When even the smallest plan fails, the incumbent in the candidate's place tells whose fault it
        is: if the evaluation fits without the candidate, the candidate holds the memory."""
        notes: list[str] = []
        res = self._worker_once(candidate, incumbent, correctness=correctness, timing=timing, block=block,
                                deadline=deadline, phase=phase, trusted=trusted)
        while res.status is Status.evaluator_fault and res.retry_smaller and self.memory_level < MAX_LEVEL \
                and not self.cancel.is_set():
            self.memory_level += 1
            notes.append(f"{res.reason} — retried with a smaller memory plan (level {self.memory_level})")
            fault = res
            res = self._worker_once(candidate, incumbent, correctness=correctness, timing=timing, block=block,
                                    deadline=max(deadline, time.monotonic() + self.timeout), phase=phase,
                                    trusted=trusted)
            if res.status is Status.timeout:  # the retry ran out of time: still the evaluator's fault
                res = fault.model_copy(update={"reason": f"{fault.reason}; the retry timed out"})
            elif res.status is Status.evaluator_fault and not res.retry_smaller:
                # the smaller plan was refused (less is free now): the fault stands, and whose it is is asked below
                res = fault.model_copy(update={"reason": f"{fault.reason}; the smaller plan did not fit: {res.reason}"})
                break
        if res.status is Status.evaluator_fault and res.retry_smaller and incumbent is not None \
                and candidate != incumbent and not self.cancel.is_set():
            # the same work (correctness too, where the fault may have been) with the incumbent in its place
            control = self._worker_once(incumbent, incumbent, correctness=correctness, timing=timing, block=block,
                                        deadline=time.monotonic() + self.timeout, phase=phase, trusted=True)
            if control.status is Status.ok:
                res = res.model_copy(update={"status": Status.runtime_error, "reason": (
                    f"out of memory with this candidate, and not with the incumbent in its place (the candidate "
                    f"holds device memory the evaluation needs): {res.reason}")})
        return res.model_copy(update={"memory_retries": notes}) if notes else res

    def reset_memory_plan(self) -> None:
        """Each evaluation starts from the full plan; a smaller one lasts only through the evaluation
        that needed it (workers plan again from what is free)."""
        self.memory_level = 0

    def _worker_once(
        self, candidate: str, incumbent: str | None, *, correctness: bool, timing: TimingPlan | None,
        block: int, deadline: float, phase: str, trusted: bool,
    ) -> WorkerResult:
        """One block: a judge process with the workers it needs (the candidate; the incumbent and, on a GPU,
        the timing probe when the block is timed)."""
        folder = self._next_workdir()
        request = self._request(candidate, incumbent, correctness=correctness, timing=timing, block=block,
                                trusted=trusted, workdir=folder)
        request = request.model_copy(update={"secret": secrets.randbits(63)})  # fresh and unknown, every block
        setups = [self._setup("candidate", candidate, folder, enforce=self.enforce_policy and not trusted)]
        if timing is not None:
            setups.append(self._setup("incumbent", candidate if incumbent is None else incumbent, folder,
                                      enforce=False))
            if self.device == "cuda":
                setups.append(self._setup("probe", "", folder, enforce=False))
        remaining = max(1.0, deadline - time.monotonic())
        return run_judge(
            request, setups, folder, timeout=remaining, cancel=self.cancel, server=self._fork_server(),
            gpu=self.gpu, on_progress=lambda ph, k, n: self._emit(phase if ph == "timing" else ph, k, n, block),
        )

    def _setup(self, role: str, source: str, folder: Path, *, enforce: bool) -> WorkerSetup:
        """A worker's setup: its own fresh folder inside the judge's, and a Triton cache of its own source's
        that no other side writes (a candidate cannot leave slow binaries for the incumbent)."""
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        cache = (self.triton_cache / f"{role}-{digest}").resolve()
        own = (folder / role).resolve()
        sandbox = None
        if self._sandbox is not None:
            sandbox = self._sandbox.model_copy(update={"write": [str(own), str(cache)]})
            if source in self.inductor:
                sandbox = with_inductor(sandbox)
        spec = self.task.spec
        returns = [spec.launch_arguments.index(n) for n in spec.output_order()] if source in self.returning else None
        return WorkerSetup(role=role, source=source, entrypoint=spec.entrypoint, device=self.device,
                           enforce_policy=enforce, sandbox=sandbox, folder=str(own), triton_cache=str(cache),
                           returns=returns)

    def _next_workdir(self) -> Path:
        """A folder no process has had: numbering goes on past any folder an earlier evaluator left here (a
        resumed workspace starts counting from one again)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        while True:
            self._runs += 1
            folder = self.workdir / f"worker-{self._runs:04d}"
            if not os.path.lexists(folder):
                return folder

    def _request(
        self, candidate: str, incumbent: str | None, *, correctness: bool, timing: TimingPlan | None, block: int,
        trusted: bool, workdir: Path, profile: bool = False, sandbox: SandboxPlan | None = None,
    ) -> WorkerRequest:
        sandbox = sandbox or self._sandbox
        return WorkerRequest(
            task=self.task.spec.model_dump(mode="json", by_alias=True),
            reference_source=self.task.reference_source,
            generator_source=self.task.generator_source,
            candidate_source=candidate,
            incumbent_source=incumbent,
            device=self.device,
            check_correctness=correctness,
            timing=timing,
            block=block,
            enforce_policy=self.enforce_policy and not trusted,
            sandbox=for_worker(sandbox, workdir) if sandbox else None,
            memory_level=self.memory_level, memory_budget=self.memory_budget, profile=profile,
            allow_unconfined=self.unconfined, trusted=trusted,
        )

    def compile_facts(self, candidate: str) -> WorkerResult:
        """The candidate compiled and called at the timing shape (warm-up calls, nothing checked or timed):
        what the compiler made of its kernels (`kernels`: registers, spills, shared memory, occupancy; GPU
        only). The policy is checked first; a rejection comes back as the worker result's status."""
        rejected = self.check_policy(candidate)
        if rejected is not None:
            return WorkerResult(status=rejected.status, reason=rejected.reason)
        self.reset_memory_plan()
        workdir = self._next_workdir()
        request = self._request(candidate, None, correctness=False, timing=None, block=0, trusted=False,
                                workdir=workdir, profile=True)
        return run_worker(request, workdir, timeout=self.timeout, triton_cache=self.triton_cache, cancel=self.cancel,
                          server=self._fork_server(), gpu=self.gpu)

    def profile(self, candidate: str, ncu: str, *, trusted: bool = False,
                metrics: Sequence[str] = METRIC_NAMES) -> tuple[WorkerResult, str]:
        """One worker under Nsight Compute: warm-up calls, then one profiled call at the timing shape.
        Returns the worker's result and ncu's log (its CSV, or why it could not profile; ncu's messages
        that reached the console instead are added). Always a fresh interpreter (ncu starts the process),
        confined like every worker, with ncu's own files readable; ncu and the worker share a private
        network of loopback alone, where the worker may use ncu's TCP ports and nothing else."""
        workdir = self._next_workdir().resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "ncu.log"
        wrapper = ncu_wrapper(ncu, log, list(metrics))
        sandbox = None
        if self._sandbox:
            sandbox = for_profiler(self._sandbox, ncu, NCU_PORTS)
            wrapper = [sys.executable, "-I", netns.__file__, "--", *wrapper]
        self.reset_memory_plan()
        request = self._request(candidate, None, correctness=False, timing=None, block=0, trusted=trusted,
                                workdir=workdir, profile=True, sandbox=sandbox)
        res = run_worker(request, workdir, timeout=max(self.timeout, PROFILE_TIMEOUT), triton_cache=self.triton_cache,
                         cancel=self.cancel, gpu=self.gpu, wrapper=wrapper,
                         on_progress=lambda ph, k, n: self._emit("profile", k, n))
        def read(path: Path) -> str:
            try:
                return path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return ""

        if (text := read(log)).strip():
            return res, text
        # ncu prints errors met before it opens its log file (a refused option, the launcher's) to the
        # console. Only then is the console read: once the log exists, a candidate's own printing (it
        # shares the console) cannot pass for ncu's word.
        return res, ncu_messages(read(workdir / "stdout.log") + read(workdir / "stderr.log"))

    def check_policy(self, source: str) -> EvalResult | None:
        """None when the source passes the static policy (or the policy is off), else the rejection."""
        return policy_rejection(self.task, source, self.device) if self.enforce_policy else None

    # --- public ---------------------------------------------------------------------------------
    def timing_run(
        self, candidate: str, incumbent: str, *, block: int, correctness: bool, phase: str = "timing", seed: int = 0,
        plan: TimingPlan | None = None, trusted: bool = False,
    ) -> WorkerResult:
        """One fresh worker process timing one interleaved block (used by the re-test and the benchmarks).
        `trusted`: the candidate side is the task's own PyTorch code, exempt from the host-op policy."""
        deadline = time.monotonic() + self.timeout
        return self._worker(
            candidate, incumbent, correctness=correctness, timing=plan or self.plan(seed), block=block,
            deadline=deadline, phase=phase, trusted=trusted,
        )

    def check(self, candidate: str, *, timeout: float | None = None, trusted: bool = False) -> EvalResult:
        """Policy and correctness only: no timing. `trusted`: the task's own PyTorch starting point,
        exempt from the policy (it is checked for correctness all the same)."""
        self._emit("policy", 0, 1)
        rejected = None if trusted else self.check_policy(candidate)
        if rejected is not None:
            return rejected
        self.reset_memory_plan()
        deadline = time.monotonic() + (timeout or self.timeout)
        res = self._worker(candidate, None, correctness=True, timing=None, block=0, deadline=deadline,
                           phase="correctness", trusted=trusted)
        return EvalResult(
            status=res.status, reason=res.reason, device=self.device, cases=res.cases,
            environment=res.environment, seconds=res.seconds, sandbox=res.sandbox,
            peak_memory_bytes=res.peak_memory_bytes, memory_retries=res.memory_retries,
        )

    def evaluate(self, candidate: str, incumbent: str | None = None, *, seed: int = 0, timeout: float | None = None) -> EvalResult:
        """Policy, correctness, then blocks of paired timing against the incumbent until the gate decides."""
        started = time.monotonic()
        incumbent = self.task.baseline_source if incumbent is None else incumbent
        self._emit("policy", 0, 1)
        rejected = self.check_policy(candidate)
        if rejected is not None:
            return rejected
        self.reset_memory_plan()
        deadline = started + (timeout or self.timeout)
        weights = {case.name: w for case, w in self.task.spec.benchmark_shapes(self.device)}
        run = Evaluation(self.policy, weights, self.device, started)

        def block(index: int, phase: str) -> WorkerResult:
            res = self._worker(
                candidate, incumbent, correctness=index == 0, timing=self.plan(seed), block=index,
                deadline=deadline, phase=phase,
            )
            run.record(res)
            return res

        while True:
            res = block(len(run.blocks), "timing")
            if res.status is not Status.ok:
                return run.result(res.status, res.reason)
            assert res.timing is not None
            run.blocks.append(res.timing)
            verdict = run.decide()
            if verdict.decision != "continue":
                break
        if verdict.decision == "confirm":
            for i in range(self.policy.confirm_blocks):
                res = block(len(run.blocks) + i, "confirmation")
                if res.status is not Status.ok:
                    return run.result(res.status, res.reason)
                assert res.timing is not None
                run.confirmation.append(res.timing)
            verdict = run.confirm()
        self._emit("done", 1, 1)
        return run.result(Status.ok, verdict.reason)
