"""A worker: the one process that runs a side's code, the candidate's or the incumbent's, and nothing else.

The judge forks it before the judge loads the reference or touches the device, so it begins as a copy of a
process that holds no answer, no check and no timer. It confines itself first (sandbox/), then loads its
side's module and serves the judge's commands over their socket: map an arena the judge shares with it, call
the entrypoint on a set of arguments there, enqueue a timed window behind the judge's gate. Its replies can
only report against its own side (an exception, a rule it broke); whether its outputs are right and how long
its kernels took, the judge finds out from memory and events of its own.

On a GPU the gate and done words live in a small allocation the judge shares: the worker's stream waits for
the gate word to reach the call's sequence number before its first launch and writes the number to the done
word after its last (stream memory operations, cuda_ipc.py).
"""

from __future__ import annotations

import gc
import os
import re
import time
import traceback
from pathlib import Path
from typing import Any

from kernel_tui.core.evaluator.arena import MappedArena
from kernel_tui.core.evaluator.channel import Channel, ChannelError
from kernel_tui.core.evaluator.memory import is_out_of_memory, requested_bytes
from kernel_tui.core.evaluator.protocol import Call, Command, Oom, Reply, WorkerSetup
from kernel_tui.core.evaluator.sandbox import Guard, SandboxRefused, SandboxReport, apply

GATE_OFFSET, DONE_OFFSET = 0, 128  # bytes into the signals allocation: two words on separate lines


def classify(exc: BaseException, filename: str, kernels: set[str], interpreted: bool) -> tuple[str, str]:
    """Map an exception from a side's call to a status and one-line reason."""
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        exc = exc.__cause__  # the interpreter wraps what the kernel raised
    kind = type(exc).__name__
    text = f"{kind}: {_message_line(str(exc))}{_source_line(exc, filename)}"
    if type(exc).__module__.startswith("triton.compiler") or kind in ("CompilationError", "PTXASError"):
        return "compile_error", text
    if interpreted and isinstance(exc, (NameError, AttributeError, TypeError)):
        in_kernel = any(
            f.filename == filename and f.name in kernels for f in traceback.extract_tb(exc.__traceback__)
        )
        if in_kernel:  # what a compiler would reject, met by the interpreter at run time
            return "compile_error", f"{text} [in a kernel, under the CPU interpreter]"
    return "runtime_error", text


def _message_line(message: str) -> str:
    """The line of an exception's message that says what went wrong: Python puts it last, while ptxas's
    (through Triton's PTXASError) is the `error :` line of its stderr, followed by a repro command."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Repro command:") and line != "`ptxas` stderr:"]
    said = [line for line in lines if re.match(r"ptxas\b.*\berror\s+:", line)]
    if said:
        return re.sub(r"^ptxas\s+\S+,\s*", "ptxas: ", said[0])  # the PTX file's temporary path says nothing
    return lines[-1] if lines else ""


def _source_line(exc: BaseException, filename: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return f" (candidate line {frames[-1].lineno})" if frames else ""


class Worker:
    def __init__(self, chan: Channel, setup: WorkerSetup, guard: Guard | None) -> None:
        self.chan, self.setup, self.guard = chan, setup, guard
        self.cuda = setup.device == "cuda"
        self.arenas: dict[int, MappedArena] = {}
        self.sets: dict[int, list[Any]] = {}  # launch argument templates: tensors, or scalar names
        self.signals: MappedArena | None = None
        self.fn: Any = None
        self.filename = ""
        self.kernels: set[str] = set()
        self.shapes: Any = None  # kernel_facts.FirstShapes
        self.reported = 0  # audit-hook violations already sent
        self.held: list[tuple[list[Any], Any]] = []  # a returning side's results, until `deliver`

    # --- setup -------------------------------------------------------------------------------------------
    def load(self) -> Reply:
        """Import the side's module (its import-time code runs here, after the sandbox)."""
        from kernel_tui.core.evaluator.harness import load_module

        if self.setup.role == "probe":  # trusted: a one-element kernel, the handoff's yardstick
            import torch

            tiny = torch.zeros(1, device="cuda")
            self.fn = lambda: tiny.fill_(1.0)
            self.sets[-1] = []
            return Reply(ok=True)
        name = f"kt_{self.setup.role}"
        folder = Path(self.setup.folder)
        self.filename = str(folder / f"{name}.py")
        if self.guard is not None:
            self.guard.arm(self.filename)
        try:
            module = load_module(self.setup.source, folder, name)
        except SyntaxError as exc:
            return self.failed("compile_error", f"syntax error line {exc.lineno}: {exc.msg}")
        except BaseException as exc:  # noqa: BLE001 - the side's import-time failure, SystemExit included
            return self.failed("compile_error", f"importing the {self.setup.role} raised {type(exc).__name__}: "
                                                f"{exc}{_source_line(exc, self.filename)}")
        fn = getattr(module, self.setup.entrypoint, None)
        if not callable(fn):
            return self.failed("compile_error", f"the {self.setup.role} defines no callable {self.setup.entrypoint}")
        self.fn = fn
        self.kernels = _kernel_names(module)
        if self.cuda:
            from kernel_tui.core.evaluator.kernel_facts import FirstShapes

            self.shapes = FirstShapes({n: getattr(module, n) for n in self.kernels})
        return Reply(ok=True)

    def failed(self, status: str, reason: str, oom: Oom | None = None) -> Reply:
        return Reply(ok=False, status=status, reason=reason[:4000], oom=oom)

    # --- commands ----------------------------------------------------------------------------------------
    def handle(self, cmd: Command, fds: list[int]) -> Reply | None:
        handler = getattr(self, f"op_{cmd.op}")
        return handler(cmd, fds)

    def op_arena(self, cmd: Command, fds: list[int]) -> Reply:
        assert cmd.arena is not None
        try:
            self.arenas[cmd.arena.arena] = MappedArena.open(cmd.arena, fds[0] if fds else None)
        except (OSError, MemoryError, RuntimeError) as exc:
            return self.failed("runtime_error", (
                f"the {self.setup.role}'s process could not map the {cmd.arena.nbytes} bytes of buffers the judge "
                f"shares with it ({type(exc).__name__}: {exc}): it holds the memory they need"))
        return Reply(ok=True)

    def op_signals(self, cmd: Command, fds: list[int]) -> Reply:
        assert cmd.arena is not None
        self.signals = MappedArena.open(cmd.arena, None)
        return Reply(ok=True)

    def op_set(self, cmd: Command, fds: list[int]) -> Reply:
        assert cmd.set_id is not None
        args: list[Any] = []
        for a in cmd.args:
            args.append(self.arenas[a.place.arena].tensor(a.place) if a.place is not None else _Scalar(a.scalar or ""))
        self.sets[cmd.set_id] = args
        return Reply(ok=True)

    def op_drop(self, cmd: Command, fds: list[int]) -> Reply:
        for k in cmd.sets:
            self.sets.pop(k, None)
        for a in cmd.arenas:
            arena = self.arenas.pop(a, None)
            if arena is not None:
                arena.close()
        return Reply(ok=True)

    def op_call(self, cmd: Command, fds: list[int]) -> Reply:
        """Calls run to completion (the device synchronised) before the reply."""
        return self._calls(cmd, synchronise=True)

    def op_window(self, cmd: Command, fds: list[int]) -> Reply:
        """A timed window: every launch enqueued behind the gate, the reply as soon as they are."""
        return self._calls(cmd, synchronise=False)

    def op_settle(self, cmd: Command, fds: list[int]) -> Reply:
        """Wait for the device; an error a kernel raised asynchronously surfaces here."""
        try:
            self._sync()
        except Exception as exc:  # noqa: BLE001 - the side's kernels failed on the device
            return self._exception(exc, "after a timed window")
        return Reply(ok=True)

    def op_deliver(self, cmd: Command, fds: list[int]) -> Reply:
        """A returning side's held results copied into its output arguments, then the device waited for: the
        copy a user's own call never makes, outside every timed region."""
        try:
            self._deliver()
            self._sync()
        except Exception as exc:  # noqa: BLE001 - results that do not fit the outputs, or a device error
            return self._exception(exc, "delivering the results")
        return Reply(ok=True)

    def _deliver(self) -> None:
        held, self.held = self.held, []
        positions = self.setup.returns or []
        for args, results in held:
            if results is None:  # a launch that wrote its outputs itself
                continue
            results = tuple(results) if isinstance(results, (tuple, list)) else (results,)
            if len(results) != len(positions):
                raise ValueError(f"returned {len(results)} results for {len(positions)} outputs")
            for position, value in zip(positions, results):
                args[position].copy_(value)

    def op_overhead(self, cmd: Command, fds: list[int]) -> Reply:
        """Host seconds per launch with the device never starving the host (sizes the judge's hold; a
        figure for the report, never a time that is judged)."""
        import statistics

        args = self._args(cmd.calls[0])
        per_call = []
        try:
            for _ in range(5):
                self._sync()
                t0 = time.perf_counter()
                for _ in range(cmd.repeat):
                    self.fn(*args)
                per_call.append((time.perf_counter() - t0) / max(cmd.repeat, 1))
            self._sync()
        except Exception as exc:  # noqa: BLE001
            return self._exception(exc, "measuring the launch overhead")
        return Reply(ok=True, seconds=statistics.median(per_call))

    def op_capture(self, cmd: Command, fds: list[int]) -> Reply:
        """A CUDA-graph capture of one call: it fails, deterministically, when work forked off the calling
        stream never joins back. A first filter for an honest mistake: the judge's own checks around every
        timed window are what a deliberate one meets."""
        from kernel_tui.core.evaluator.streams import capture_error

        try:
            unjoined = capture_error(self.fn, self._args(cmd.calls[0]))
        except Exception as exc:  # noqa: BLE001
            return self._exception(exc, "capturing one call")
        return Reply(ok=True, unjoined=unjoined[:600] if unjoined else None)

    def op_facts(self, cmd: Command, fds: list[int]) -> Reply:
        from kernel_tui.core.evaluator.kernel_facts import device_limits, facts_of

        if self.shapes is None:
            return Reply(ok=True)
        try:
            return Reply(ok=True, kernels=facts_of(self.shapes.kernels, device_limits(), self.shapes)[:64])
        except Exception:  # noqa: BLE001 - facts are a help, never a reason for a verdict
            return Reply(ok=True)

    def op_exit(self, cmd: Command, fds: list[int]) -> None:
        return None

    # --- calls ---------------------------------------------------------------------------------------------
    def _args(self, call: Call) -> list[Any]:
        return [call.scalars[a.name] if isinstance(a, _Scalar) else a for a in self.sets[call.set_id]]

    def _calls(self, cmd: Command, *, synchronise: bool) -> Reply:
        from kernel_tui.core.evaluator.recorder import HostOpRecorder

        recorder = HostOpRecorder()
        what = "a timed call" if not synchronise else "a call"
        try:
            argv = [self._args(c) for c in cmd.calls]
            if self.cuda and cmd.seq is not None:
                self._wait_gate(cmd.seq)
            before = self._allocated()
            returning = self.setup.returns is not None
            self.held = []
            try:
                with recorder:
                    for args in argv:
                        for _ in range(cmd.repeat):
                            results = self.fn(*args)
                        if returning:
                            self.held.append((args, results))
            except BaseException as exc:
                if is_out_of_memory(exc):
                    return self.failed("runtime_error", f"{what}: out of memory", Oom(
                        requested=requested_bytes(exc), held=self._allocated() - before))
                raise
            finally:
                if self.cuda and cmd.seq is not None:
                    self._write_done(cmd.seq)  # the judge's stream must never wait forever
            if synchronise:
                if returning and not cmd.hold:  # an untimed call: its results go where the checks read them
                    self._deliver()
                self._sync()
                self._note_shape(cmd.shape)
        except Exception as exc:  # noqa: BLE001 - the side's fault, classified
            return self._exception(exc, what)
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt raised by the side's code
            return self.failed("runtime_error", f"{what}: the {self.setup.role} raised {type(exc).__name__}")
        if recorder.forbidden and self.setup.enforce_policy:
            return self.failed("policy_violation", f"torch-compute: host code ran {recorder.forbidden[0]} during {what}")
        return Reply(ok=True)

    def _exception(self, exc: BaseException, what: str) -> Reply:
        if is_out_of_memory(exc):
            return self.failed("runtime_error", f"{what}: out of memory", Oom(requested=requested_bytes(exc), held=0))
        status, reason = classify(exc, self.filename, self.kernels, not self.cuda)
        return self.failed(status, f"{what}: {reason}")

    def _wait_gate(self, seq: int) -> None:
        import torch

        from kernel_tui.core.evaluator.cuda_ipc import stream_wait_value

        assert self.signals is not None, "no signals mapped"
        stream_wait_value(torch.cuda.current_stream().cuda_stream, self.signals.base.data_ptr() + GATE_OFFSET, seq)

    def _write_done(self, seq: int) -> None:
        import torch

        from kernel_tui.core.evaluator.cuda_ipc import stream_write_value

        assert self.signals is not None, "no signals mapped"
        stream_write_value(torch.cuda.current_stream().cuda_stream, self.signals.base.data_ptr() + DONE_OFFSET, seq)

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def _allocated(self) -> int:
        if not self.cuda:
            return 0
        import torch

        return torch.cuda.memory_allocated()

    def _note_shape(self, shape: str) -> None:
        if self.shapes is not None and shape:
            try:
                self.shapes.note(shape)
            except Exception:  # noqa: BLE001 - facts are a help, never a reason for a verdict
                pass

    def with_violations(self, reply: Reply) -> Reply:
        """What the audit hook saw since the last reply rides on every reply."""
        if self.guard is None or len(self.guard.violations) <= self.reported:
            return reply
        new = self.guard.violations[self.reported :]
        self.reported = len(self.guard.violations)
        return reply.model_copy(update={"violations": [v[:600] for v in new[:20]]})

    def peak(self) -> int | None:
        if not self.cuda:
            return None
        import torch

        return int(torch.cuda.max_memory_allocated())


class _Scalar:
    def __init__(self, name: str) -> None:
        self.name = name


def _kernel_names(module) -> set[str]:
    from triton.runtime.jit import KernelInterface

    return {n for n, v in vars(module).items() if isinstance(v, KernelInterface)}


def _init_device(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the context now, before the side's code, inside the sandbox
    else:
        torch.set_num_threads(1)


def _confine(setup: WorkerSetup) -> tuple[SandboxReport, Guard | None]:
    if setup.sandbox is None:
        return SandboxReport(missing=["the sandbox was switched off: candidates are not confined"]), None
    report = apply(setup.sandbox)
    guard = Guard(setup.sandbox)
    guard.install()
    return report, guard


def serve(chan: Channel, setup: WorkerSetup) -> None:
    """The worker's life: confine, reach the device, load, answer commands until told to exit."""
    gc.collect()  # whatever the judge held when it forked is unreachable here; drop it
    try:
        report, guard = _confine(setup)
    except SandboxRefused as exc:  # this machine's fault, not the side's: nothing of it was loaded
        chan.send(Reply(ok=False, status="evaluator_fault", reason=f"sandbox: {exc}"))
        return
    try:
        _init_device(setup.device)
    except Exception as exc:  # noqa: BLE001 - the machine's fault
        chan.send(Reply(ok=False, status="evaluator_fault", reason=f"the worker could not reach the device: {exc}"[:4000]))
        return
    worker = Worker(chan, setup, guard)
    chan.send(Reply(ok=True, sandbox=report))
    try:  # the judge reads the report first: where confinement is missing, it may not let the side load
        go, _ = chan.receive_with_fds(Command, None)
    except ChannelError:
        return
    if go.op != "load":
        return
    chan.send(worker.with_violations(worker.load()).model_copy(update={"nonce": go.nonce}))
    if worker.fn is None and setup.role != "probe":
        return
    while True:
        try:
            cmd, fds = chan.receive_with_fds(Command, None)
        except ChannelError:
            return  # the judge is gone: nothing left to do
        try:
            reply = worker.handle(cmd, fds)
        except Exception as exc:  # noqa: BLE001 - never die silently: the judge reads this as the side's fault
            reply = worker.failed("runtime_error", f"worker error on {cmd.op}: {type(exc).__name__}: {exc}")
        if reply is None:
            return
        if cmd.op == "settle" or cmd.op == "facts":
            reply = reply.model_copy(update={"peak_memory_bytes": worker.peak()})
        chan.send(worker.with_violations(reply).model_copy(update={"nonce": cmd.nonce}))


def main(sock_fd: int, setup: WorkerSetup) -> None:
    """In the forked child, after the judge set up its descriptors and folder."""
    import socket

    chan = Channel(socket.socket(fileno=sock_fd))
    try:
        serve(chan, setup)
    finally:
        os._exit(0)  # a side's stray threads or a broken device context must not keep the process alive
