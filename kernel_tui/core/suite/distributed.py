"""A suite's tasks outside the suite's process: a child process per leased device, or a Dask worker per GPU.

Either way a task runs whole where it is sent (`SuiteRunner.run_task`: the session, then the scoring),
writing into the suite's out directory, and its TaskResult comes back as JSON; the suite's process writes
suite.json and the report. A task never shares a process with another task: git changes the process's
working directory while it stages files, and pyplot keeps one figure registry per process.

Local (`--gpus`): a spawned child per task, its evaluators pinned to the leased GPU; its events come back
over a pipe as the same typed events, and SIGTERM (or Ctrl-C, which reaches it too) stops it at a safe point.

Dask (`--scheduler`): the user starts one worker per GPU (`CUDA_VISIBLE_DEVICES=N dask worker
tcp://HOST:PORT --resources GPU=1 --nthreads 1`) and each task is submitted with resources={"GPU": 1}, so a
worker runs one task at a time. The out directory (and TASKS_DIR, --candidates) must be at the same path on
every worker: a shared filesystem, checked before anything is submitted. Printed lines come back as worker
events on a topic of the suite's own, the stop goes out as a distributed Event. Workers that would share one
GPU (the same device UUID: no CUDA_VISIBLE_DEVICES, say) are refused before anything is submitted. A task
that fails on its worker comes back as that task's failed result; one that ends in any way its GPU may have
caused (unfinished, failed, a side not measured) asks the GPU's health, and on a failed check its worker
stops offering GPU=1 and Dask runs the task again elsewhere (RETRIES); one whose worker dies is rescheduled
by the scheduler (up to its `distributed.scheduler.allowed-failures`). A task run again resumes its workspace.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kernel_tui.core.events import Event, LogEvent, ProgressEvent
from kernel_tui.core.gpus import DeviceFault, GpuPool, describe, gpu_of
from kernel_tui.core.suite.models import TaskResult
from kernel_tui.core.suite.runner import OnEvent, SuiteError, SuiteOptions, SuiteRunner, device_suspect
from kernel_tui.core.suite.score import one_line

if TYPE_CHECKING:
    from distributed import Client

    from kernel_tui.core.config import AgentSettings

RETRIES = 2  # runs of a task after its GPU failed the health check (a dead worker is the scheduler's to retry)
CONNECT_TIMEOUT = 30  # seconds to reach the scheduler
WORKER_WAIT = 60.0  # seconds to wait for a first worker
POLL = 0.25  # seconds between looks at the cancel event while tasks run elsewhere
STOP_POLL = 1.0  # seconds between a Dask worker's looks at the suite's stop event
PROBE = ".reachable-"  # a file the client writes in the out directory; every worker must read it back


class TaskJob(BaseModel):
    """One task as the process that runs it receives it: the suite's options with absolute paths."""

    model_config = ConfigDict(frozen=True)
    tasks_dir: str
    out: str
    proposer: str
    max_steps: int
    device: Literal["cpu", "cuda"]
    runs: int
    candidates: str | None = None
    task: str
    gpu: str | None = None  # the GPU its evaluators are pinned to (None: the process's own CUDA_VISIBLE_DEVICES)

    @classmethod
    def of(cls, o: SuiteOptions, task: str, gpu: str | None = None) -> TaskJob:
        return cls(tasks_dir=str(o.tasks_dir.resolve()), out=str(o.out.resolve()), proposer=o.proposer,
                   max_steps=o.max_steps, device=o.device, runs=o.runs,
                   candidates=str(o.candidates.resolve()) if o.candidates is not None else None, task=task, gpu=gpu)

    def options(self) -> SuiteOptions:
        return SuiteOptions(tasks_dir=Path(self.tasks_dir), out=Path(self.out), proposer=self.proposer,
                            max_steps=self.max_steps, device=self.device, runs=self.runs,
                            candidates=Path(self.candidates) if self.candidates else None)


def run_job(job: TaskJob, cancel: threading.Event, on_event: OnEvent, where: str,
            settings: AgentSettings | None = None) -> TaskResult | None:
    """The task, in this process; None when stopped. Whatever it raises is its failed result."""
    runner = SuiteRunner(job.options(), cancel=cancel, on_event=on_event, gpu=job.gpu, settings=settings)
    try:
        return runner.run_task(Path(job.tasks_dir) / job.task)
    except Exception as exc:  # noqa: BLE001 - the task's failure, not the suite's
        return runner._record(runner._failed(job.task, one_line(f"on {where}: {type(exc).__name__}: {exc}")))


# --- a child process per task (--gpus) ------------------------------------------------------------------


def run_in_child(runner: SuiteRunner, job: TaskJob, where: str) -> TaskResult | None:
    """The task in a spawned child (no fork: the suite's process has threads); None when stopped."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    # the settings the front end loaded go to the child as they are (spawn pickles them through a pipe)
    child = ctx.Process(target=_child, args=(job.model_dump_json(), where, send, runner.settings),
                        name=f"kernel-tui-{job.task}", daemon=True)
    child.start()
    send.close()  # the child holds the only writer: its exit is this end's EOF
    answer: str | None = None
    stopping = False
    try:
        while True:
            if runner.cancel.is_set() and not stopping:
                child.terminate()  # SIGTERM: the child stops at a safe point, as on Ctrl-C
                stopping = True
            if not receive.poll(POLL):
                continue
            try:
                kind, payload = receive.recv()
            except EOFError:
                break
            if kind == "event":
                runner.on_event(job.task, _event(*payload))
            else:
                answer = payload
    finally:
        receive.close()
        child.join()
    if answer is None:
        if stopping or runner.cancel.is_set():  # Ctrl-C may reach the child before the parent sees it
            return None
        return runner._record(runner._failed(
            job.task, f"on {where}: the task's process ended without a result (exit status {child.exitcode})"))
    return TaskResult.model_validate_json(answer) if answer else None


def _child(job_json: str, where: str, send: Connection, settings: AgentSettings | None) -> None:
    job = TaskJob.model_validate_json(job_json)
    cancel, lock = threading.Event(), threading.Lock()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: cancel.set())

    def relay(task: str, e: Event) -> None:  # evaluator progress comes from reader threads too
        with lock:
            send.send(("event", (type(e).__module__, type(e).__name__, e.model_dump_json(), e.text)))

    result = run_job(job, cancel, relay, where, settings)
    with lock:
        send.send(("result", result.model_dump_json() if result is not None else ""))
    send.close()


def _event(module: str, name: str, data: str, text: str) -> Event:
    """The child's event as the same typed event (a front end dispatches on the type), else its line."""
    kind = getattr(importlib.import_module(module), name, None) if module.startswith("kernel_tui.") else None
    if isinstance(kind, type) and issubclass(kind, Event):
        try:
            return kind.model_validate_json(data)
        except ValidationError:
            pass
    return LogEvent(text=text)


# --- a Dask worker per task (--scheduler) ---------------------------------------------------------------


def unreachable(out: str, tasks_dir: str, candidates: str | None, probe: str = "") -> str:
    """Why this host cannot run the suite's tasks in place ("" when it can): a worker's side of the check."""
    for path in (tasks_dir, candidates, out):
        if path is not None and not Path(path).is_dir():
            return f"{path}: no such directory here"
    if probe and not (Path(out) / probe).is_file():
        return f"{out}: a directory here, but not the client's (a file written there is missing)"
    if not os.access(out, os.W_OK):
        return f"{out}: not writable here"
    return ""


def run_parallel(runner: SuiteRunner, tasks: list[Path], pool: GpuPool) -> list[TaskResult] | None:
    """One task per device at a time, each in a child process (git and pyplot keep process-wide state:
    the working directory, the figure registry). A task that ends unfinished on a device that then fails
    its health check runs again on another device (its workspace resumes); that device leaves the pool."""
    runner._say("suite", f"{len(tasks)} tasks in parallel on {', '.join(describe(d) for d in pool.devices)}")

    def on_device(job: tuple[int, Path], device: str) -> TaskResult | None:
        index, task_dir = job
        if runner.cancel.is_set():
            return None
        runner._say(task_dir.name, f"task {index}/{len(tasks)}: {task_dir.name} on {describe(device)}")
        result = run_in_child(runner, TaskJob.of(runner.options, task_dir.name, gpu=gpu_of(device)), describe(device))
        if result is not None and device_suspect(result) and (fault := pool.check(device)) is not None:
            runner._say(task_dir.name, f"{describe(device)} leaves the pool: {fault}; the task runs again elsewhere")
            raise DeviceFault(fault)
        return None if result is None else runner.ended(result, device)

    outcomes = pool.run(list(enumerate(tasks, start=1)), on_device)
    if runner.cancel.is_set() or any(o.ok and o.value is None for o in outcomes):
        return None
    results = []
    for task_dir, outcome in zip(tasks, outcomes):
        if outcome.value is not None:
            results.append(outcome.value)
            continue
        where = f"on {describe(outcome.device)}: " if outcome.device else ""
        failed = runner._record(runner._failed(task_dir.name, one_line(f"{where}{outcome.error}")))
        results.append(runner.ended(failed))
    return results


def run_on_cluster(runner: SuiteRunner, tasks: list[Path]) -> list[TaskResult] | None:
    """Every task on a worker of the scheduler, the results in task order; None when stopped."""
    from distributed import Client
    from distributed import Event as StopEvent

    o = runner.options
    try:
        client = Client(o.scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SuiteError(one_line(f"--scheduler {o.scheduler}: could not connect: {exc}")) from None
    try:
        _check_cluster(client, o)
        token = uuid.uuid4().hex[:12]
        topic, stop_name = f"kernel-tui-suite-{token}", f"kernel-tui-suite-stop-{token}"
        client.subscribe_topic(topic, lambda event: runner.on_event(event[1]["task"], LogEvent(text=event[1]["text"])))
        stop = StopEvent(stop_name, client=client)
        futures = [client.submit(run_remote, TaskJob.of(o, t.name).model_dump_json(), f"{i}/{len(tasks)}", topic,
                                 stop_name, key=f"kernel-tui-{t.name}-{token}", resources={"GPU": 1},
                                 retries=RETRIES, pure=False)
                   for i, t in enumerate(tasks, start=1)]
        while not all(f.done() for f in futures):
            if runner.cancel.wait(POLL):
                stop.set()  # running tasks stop at a safe point, the others return at once
                while not all(f.done() for f in futures):
                    threading.Event().wait(POLL)
                return None
        results = [_collect(runner, future, t.name) for future, t in zip(futures, tasks)]
        return None if runner.cancel.is_set() or any(r is None for r in results) else [r for r in results if r]
    finally:
        client.close()


def _check_cluster(client: Client, o: SuiteOptions) -> None:
    """At least one worker offers the GPU resource, and every such worker sees the suite's directories."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise SuiteError(f"--scheduler {o.scheduler}: no worker joined within {WORKER_WAIT:g} s") from None
    workers = client.scheduler_info(n_workers=-1)["workers"]
    gpu_workers = [addr for addr, w in workers.items() if (w.get("resources") or {}).get("GPU", 0) >= 1]
    if not gpu_workers:
        raise SuiteError(f"--scheduler {o.scheduler}: no worker offers the GPU resource; start each with "
                         "`dask worker ... --resources GPU=1 --nthreads 1`")
    job = TaskJob.of(o, "")
    probe = f"{PROBE}{uuid.uuid4().hex[:12]}"
    marker = o.out / probe
    marker.write_text("kernel-tui suite\n", encoding="utf-8")
    try:
        answers = client.run(unreachable, job.out, job.tasks_dir, job.candidates, probe, workers=gpu_workers,
                             on_error="return")
    finally:
        marker.unlink(missing_ok=True)
    bad = {addr: why if isinstance(why, str) else f"{type(why).__name__}: {why}" for addr, why in answers.items() if why}
    if bad:
        addr, why = next(iter(bad.items()))
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise SuiteError(one_line(f"worker {addr}{more} cannot reach the suite's files: {why}; --out, TASKS_DIR and "
                                  "--candidates must be on a filesystem every worker shares, at the same path"))
    if o.device == "cuda":
        from kernel_tui.core.gpus import gpu_uuid, shared_gpus

        uuids = client.run(gpu_uuid, workers=gpu_workers, on_error="return")
        shared = shared_gpus({addr: u if isinstance(u, str) else None for addr, u in uuids.items()})
        if shared:
            raise SuiteError(one_line(f"--scheduler {o.scheduler}: {shared}"))


def _collect(runner: SuiteRunner, future, task: str) -> TaskResult | None:
    """A future's TaskResult; whatever ended it on the cluster is that task's failure, not the suite's."""
    from distributed import KilledWorker

    try:
        text = future.result()
    except KilledWorker:
        reason = "on the cluster: its worker died each time it ran it (more often than the scheduler allows)"
        return runner.ended(runner._record(runner._failed(task, reason)))
    except Exception as exc:  # noqa: BLE001 - one task's failure, kept as its result
        reason = one_line(f"on the cluster: {type(exc).__name__}: {exc}")
        return runner.ended(runner._record(runner._failed(task, reason)))
    if not text:  # the worker stopped it
        return None
    return runner.ended(TaskResult.model_validate_json(text))


def run_remote(job_json: str, position: str, topic: str, stop_name: str) -> str:
    """One task on this Dask worker: its TaskResult as JSON, or "" when the suite was stopped."""
    from distributed import Event as StopEvent
    from distributed import get_worker

    from kernel_tui.core.config import AgentSettings
    from kernel_tui.core.errors import KernelTuiError
    from kernel_tui.core.gpus import cuda_health
    from kernel_tui.core.opening import uses_settings

    job = TaskJob.model_validate_json(job_json)
    worker = get_worker()
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f"worker {worker.address}" + (f" (GPU {gpu})" if job.device == "cuda" and gpu else "")

    def say(task: str, e: Event) -> None:
        if not isinstance(e, ProgressEvent):  # the client prints lines, not progress bars
            worker.log_event(topic, {"task": task, "text": e.text})

    stop = StopEvent(stop_name)
    if stop.is_set():
        return ""
    why = unreachable(job.out, job.tasks_dir, job.candidates)
    if why:  # nothing can be recorded there: the result travels back alone
        return SuiteRunner(job.options())._failed(job.task, one_line(f"on {where}: {why}")).model_dump_json()
    # A worker is a process of its own, often on another host: it reads its own agent settings, once, where its
    # task starts, as the command line does where the suite starts (the API key never crosses the scheduler).
    try:
        settings = AgentSettings.load() if uses_settings(job.proposer, None, None) else None
    except KernelTuiError as exc:
        runner = SuiteRunner(job.options())
        return runner._record(runner._failed(job.task, one_line(f"on {where}: {exc}"))).model_dump_json()
    cancel, ended = threading.Event(), threading.Event()

    def watch() -> None:
        while not ended.is_set():
            if stop.wait(timeout=STOP_POLL):
                cancel.set()
                return

    threading.Thread(target=watch, daemon=True).start()
    try:
        say(job.task, LogEvent(text=f"task {position}: {job.task} on {where}"))
        result = run_job(job, cancel, say, where, settings)
    finally:
        ended.set()
    if result is None:
        return ""
    if job.device == "cuda" and device_suspect(result) and (fault := cuda_health(gpu or "0")) is not None:
        say(job.task, LogEvent(text=f"{where}: {fault}; this worker leaves the GPU pool and the task runs again"))
        leave_gpu_pool(worker)
        raise DeviceFault(f"{where}: {fault}")
    return result.model_dump_json()


def leave_gpu_pool(worker) -> None:
    """A worker whose GPU failed its health check stops offering the GPU resource, so the scheduler sends it
    no more tasks (it would otherwise keep advertising GPU=1 and take the next one)."""
    from distributed.utils import sync

    sync(worker.loop, worker.set_resources, GPU=0)
