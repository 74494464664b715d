"""Spike: can a trusted process time a kernel that a sandboxed process launches, on one GPU?

The judge (this process) allocates the side's memory itself (cuMemAlloc) and hands the worker an IPC handle;
it also owns every event: a gate the worker's stream waits on, and a done event the worker records after its
launch. Per call the judge's stream runs: a hold (sleep kernel, so the host can do its round trip to the
worker before anything starts), the L2 flush, its own start event, the gate; then, once the worker says it
has enqueued, a wait on done and its own end event. The worker runs in the real sandbox (user, network and
IPC namespaces, seccomp, Landlock) and is forked before the judge touches CUDA.

Measured, each against the same kernel timed in-process the way the evaluator times it today:
- the handoff: an empty call (the worker waits on the gate and records done, launching nothing);
- vector_add (the fixture's baseline, block 256 and 1024) at three sizes;
- a slow kernel (a GPU sleep of known length): its trusted time must be its real time;
- a worker that ignores the gate: what the judge sees (written before the start?);
- SIGSTOP/SIGCONT of the worker between calls;
- a spinner the worker leaves running on another stream: how much the judge's own flush slows.

Usage: python bench/ipc_timing_spike.py OUT.json [--no-sandbox]
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_EVENTS = 8
SIZES = {"1M": 1 << 20, "8M (vector_add)": 4096 * 2048, "64M": 1 << 26}


def send(sock: socket.socket, obj) -> None:
    sock.send(json.dumps(obj).encode())


def recv(sock: socket.socket, timeout: float = 120.0):
    sock.settimeout(timeout)
    data = sock.recv(1 << 20)
    if not data:
        raise EOFError("the worker closed its socket")
    return json.loads(data)


def _baseline() -> dict:
    """The fixture's baseline as a module's namespace (Triton reads kernel source from a real file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("spike_baseline", ROOT / "fixtures/vector_add/baseline.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


# --- the worker ---------------------------------------------------------------------------------------
def worker(sock: socket.socket, sandbox: bool, workdir: Path) -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    spec = _baseline()  # before the sandbox: the worker may read only its own folder and the libraries
    report = {"sandbox": "off"}
    if sandbox:
        from kernel_tui.core.evaluator.runner import package_paths
        from kernel_tui.core.evaluator.sandbox import apply, build_plan, for_worker

        plan = for_worker(build_plan("cuda", workdir / "triton-cache", package_paths()), workdir)
        report = apply(plan).model_dump()
    import torch
    import triton

    from kernel_tui.core.evaluator.cuda_ipc import SharedDeviceMemory

    torch.cuda.init()
    torch.empty(1, device="cuda")
    send(sock, {"ready": report, "triton": triton.__version__})
    setup = recv(sock)
    mem = SharedDeviceMemory.open(setup["handle"], setup["nbytes"])
    n = setup["n"]
    half = mem.tensor.view(torch.float16)
    x, y, out = half[:n], half[n:2 * n], half[2 * n:3 * n]
    from kernel_tui.core.evaluator.cuda_ipc import stream_wait_value, stream_write_value

    signals = SharedDeviceMemory.open(setup["signals"], 4096)
    events = setup["mode"] == "events"
    gates = [torch.cuda.Event.from_ipc_handle(0, bytes.fromhex(h)) for h in setup["gates"]] if events else []
    dones = [torch.cuda.Event.from_ipc_handle(0, bytes.fromhex(h)) for h in setup["dones"]] if events else []
    stream = torch.cuda.current_stream()
    raw = stream.cuda_stream
    side = torch.cuda.Stream()
    send(sock, {"opened": True})
    while True:
        cmd = recv(sock, 600)
        kind = cmd["kind"]
        if kind == "exit":
            break
        if kind == "sync":
            torch.cuda.synchronize()
            send(sock, {"ok": True})
            continue
        i, seq = cmd["i"], cmd.get("seq", 0)
        if not cmd.get("nowait"):
            if events:
                stream.wait_event(gates[i])
            else:
                stream_wait_value(raw, signals.word(0), seq)
        if kind == "add":
            m = cmd["n"]
            spec["BLOCK_SIZE"] = cmd.get("block", 256)
            spec["launch"](x[:m], y[:m], out[:m], m)
        elif kind == "sleep":
            torch.cuda._sleep(cmd["cycles"])
        elif kind == "spinner":
            with torch.cuda.stream(side):
                torch.cuda._sleep(cmd["cycles"])
        if events:
            dones[i].record(stream)
        else:
            stream_write_value(raw, signals.word(64), seq)
        send(sock, {"ok": i})
    signals.close()
    mem.close()


# --- the judge ----------------------------------------------------------------------------------------
class Judge:
    def __init__(self, sock: socket.socket, pid: int, mode: str) -> None:
        import torch

        from kernel_tui.core.evaluator.cuda_ipc import SharedDeviceMemory
        from kernel_tui.core.evaluator.streams import _sleep_cycles_per_second, gpu_sleep

        self.torch, self.sock, self.pid, self.gpu_sleep, self.mode = torch, sock, pid, gpu_sleep, mode
        self.seq = 0
        self.ready = recv(sock)
        self.n = max(SIZES.values())
        self.mem = SharedDeviceMemory.allocate(3 * self.n * 2)
        half = self.mem.tensor.view(torch.float16)
        self.x, self.y, self.out = half[: self.n], half[self.n : 2 * self.n], half[2 * self.n :]
        self.x.normal_()
        self.y.normal_()
        self.gates = [torch.cuda.Event(interprocess=True) for _ in range(N_EVENTS)]
        self.dones = [torch.cuda.Event(interprocess=True) for _ in range(N_EVENTS)]
        for e in self.gates + self.dones:
            e.record()
        self.signals = SharedDeviceMemory.allocate(4096)
        self.signals.tensor.zero_()
        torch.cuda.synchronize()
        send(sock, {"handle": self.mem.handle(), "nbytes": self.mem.nbytes, "n": self.n, "mode": mode,
                    "signals": self.signals.handle(),
                    "gates": [e.ipc_handle().hex() for e in self.gates],
                    "dones": [e.ipc_handle().hex() for e in self.dones]})
        assert recv(sock)["opened"]
        self.flush = torch.empty(2 * 60 * 2**20 // 4, dtype=torch.int32, device="cuda")
        torch.cuda._sleep(1000)  # the first sleep loads its module: not part of the rate
        torch.cuda.synchronize()
        self.cycles_per_s = _sleep_cycles_per_second()  # measured now, after the warm-up: the hold uses it too
        self.local = _baseline()
        from kernel_tui.core.evaluator.cuda_ipc import stream_wait_value, stream_write_value

        self.memops = (stream_wait_value, stream_write_value)

    def remote(self, cmd: dict, hold: float = 2e-3, check_early: bool = False) -> dict:
        """One call through the worker: (trusted time, flush time, round trip, written before start?)."""
        torch = self.torch
        pre, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        poisoned = None
        if check_early:
            self.out.fill_(float("nan"))
        self.gpu_sleep(hold)
        pre.record()
        self.flush.zero_()
        if check_early:  # still unwritten at the start?
            poisoned = torch.isnan(self.out[: cmd.get("n", 1)]).all()
        start.record()
        self.seq += 1
        raw = torch.cuda.current_stream().cuda_stream
        if self.mode == "events":
            self.gates[0].record()
        else:
            self.memops[1](raw, self.signals.word(0), self.seq)
        t0 = time.perf_counter()
        send(self.sock, {**cmd, "i": 0, "seq": self.seq})
        recv(self.sock)
        trip = time.perf_counter() - t0
        if self.mode == "events":
            torch.cuda.current_stream().wait_event(self.dones[0])
        else:
            self.memops[0](raw, self.signals.word(64), self.seq)
        end.record()
        end.synchronize()
        return {"t": start.elapsed_time(end) / 1e3, "flush": pre.elapsed_time(start) / 1e3, "trip": trip,
                "untouched_at_start": None if poisoned is None else bool(poisoned)}

    def local_call(self, fn, hold: float = 2e-3) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.gpu_sleep(hold)
        self.flush.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def local_add(self, m: int, block: int) -> None:
        self.local["BLOCK_SIZE"] = block
        self.local["launch"](self.x[:m], self.y[:m], self.out[:m], m)


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"median_us": statistics.median(xs) * 1e6, "p10_us": xs[len(xs) // 10] * 1e6,
            "p90_us": xs[(9 * len(xs)) // 10] * 1e6, "n": len(xs)}


def run(out_path: Path, sandbox: bool, mode: str) -> None:
    import torch  # imported before the fork, CUDA untouched

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    workdir = Path(tempfile.mkdtemp(prefix="spike-worker-"))
    pid = os.fork()
    if pid == 0:
        a.close()
        try:
            worker(b, sandbox, workdir)
        except BaseException:  # noqa: BLE001 - whatever ends the worker is printed
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        os._exit(0)
    b.close()
    j = Judge(a, pid, mode)
    res: dict = {"sandbox": j.ready["ready"], "device": torch.cuda.get_device_name(), "mode": mode,
                 "sleep_cycles_per_s": j.cycles_per_s}
    reps = 40
    # warm-up: compile both block sizes on both sides
    for block in (256, 1024):
        for _ in range(3):
            j.remote({"kind": "add", "n": 1 << 20, "block": block})
            j.local_call(lambda block=block: j.local_add(1 << 20, block))
    res["empty"] = summary([j.remote({"kind": "empty"})["t"] for _ in range(reps)])
    res["empty_trip"] = summary([j.remote({"kind": "empty"})["trip"] for _ in range(10)])
    res["flush_quiet"] = summary([j.remote({"kind": "empty"})["flush"] for _ in range(reps)])
    res["local_empty"] = summary([j.local_call(lambda: None) for _ in range(reps)])
    for name, m in SIZES.items():
        for block in (256, 1024):
            rem, loc = [], []
            for _ in range(reps):  # interleaved
                rem.append(j.remote({"kind": "add", "n": m, "block": block})["t"])
                loc.append(j.local_call(lambda m=m, block=block: j.local_add(m, block)))
            res[f"add {name} block {block}"] = {"remote": summary(rem), "local": summary(loc)}
    for ms in (0.05, 1.0):
        cycles = int(ms * 1e-3 * j.cycles_per_s)
        rem = [j.remote({"kind": "sleep", "cycles": cycles})["t"] for _ in range(10)]
        loc = [j.local_call(lambda c=cycles: torch.cuda._sleep(c)) for _ in range(10)]
        res[f"sleep {ms} ms"] = {"remote": summary(rem), "local": summary(loc)}
    # a worker that ignores the gate: is its output written before the judge's start?
    early = [j.remote({"kind": "add", "n": SIZES["8M (vector_add)"], "nowait": True}, check_early=True)
             for _ in range(10)]
    honest = [j.remote({"kind": "add", "n": SIZES["8M (vector_add)"]}, check_early=True) for _ in range(10)]
    res["ignores_gate"] = {"t": summary([e["t"] for e in early]),
                           "untouched_at_start": sum(bool(e["untouched_at_start"]) for e in early),
                           "honest_untouched_at_start": sum(bool(e["untouched_at_start"]) for e in honest)}
    # are two contexts' kernels run at once? the worker sleeps 20 ms on its stream, ungated; the judge times
    # vector_add meanwhile
    busy = int(20e-3 * j.cycles_per_s)
    quiet = [j.local_call(lambda: j.local_add(SIZES["8M (vector_add)"], 256), hold=50e-6) for _ in range(20)]
    send(j.sock, {"kind": "sleep", "cycles": busy, "i": 0, "seq": 0, "nowait": True})
    recv(j.sock)
    during = []
    t_end = time.perf_counter() + 15e-3
    while time.perf_counter() < t_end:
        during.append(j.local_call(lambda: j.local_add(SIZES["8M (vector_add)"], 256), hold=50e-6))
    send(j.sock, {"kind": "sync"})
    recv(j.sock)
    res["worker_busy_20ms"] = {"judge_add_quiet": summary(quiet), "judge_add_during": summary(during)}
    # stopped between calls
    stopped = []
    for _ in range(10):
        os.kill(pid, signal.SIGSTOP)
        os.waitpid(pid, os.WUNTRACED)
        os.kill(pid, signal.SIGCONT)
        stopped.append(j.remote({"kind": "add", "n": SIZES["8M (vector_add)"]})["t"])
    res["after_sigstop_sigcont"] = summary(stopped)
    # a spinner left running on another stream of the worker: the judge's flush, and an honest local call
    spin = int(0.5 * j.cycles_per_s)
    j.remote({"kind": "spinner", "cycles": spin})
    busy_flush, busy_local = [], []
    t_end = time.perf_counter() + 0.3
    while time.perf_counter() < t_end:
        busy_flush.append(j.remote({"kind": "empty"})["flush"])
        busy_local.append(j.local_call(lambda: j.local_add(SIZES["8M (vector_add)"], 256)))
    res["spinner_running"] = {"flush": summary(busy_flush), "local_add_8M": summary(busy_local)}
    send(j.sock, {"kind": "sync"})
    recv(j.sock)
    send(j.sock, {"kind": "exit"})
    os.waitpid(pid, 0)
    out_path.write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    run(Path(sys.argv[1]), "--no-sandbox" not in sys.argv, "events" if "--events" in sys.argv else "memops")
