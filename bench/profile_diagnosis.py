"""Why a profile does or does not finish: Nsight Compute on a tiny CUDA program, with the worker's sandbox
layers added one at a time, then the evaluator's own profile path with the sandbox on and off.

    python bench/profile_diagnosis.py --out DIAG.jsonl [--timeout 40] [--task fixtures/vector_add]

Each case runs `ncu` (kernel-tui's own command line) on a target that applies the chosen layers of the
sandbox plan a profiled worker gets, initialises CUDA, and runs one kernel between cudaProfilerStart and
Stop. The target notes each stage it reaches in a file, so a case that hangs says where: before CUDA, in
the profiled range, or after the target ended (ncu itself). One JSON line per case: wall seconds, exit
code, the stages reached, whether ncu's log holds results, and the tails of ncu's log and the console.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# layers, as the target applies them; "all" is sandbox.apply itself (what a profiled worker runs)
CASES = {
    "plain": (False, []),  # ncu alone: does it profile here at all, and how long does it take
    "netns": (True, []),  # the private network of loopback alone
    "netns+nnp+userns": (True, ["nnp", "userns"]),
    "netns+seccomp": (True, ["seccomp"]),
    "netns+limits": (True, ["limits"]),
    "netns+landlock": (True, ["landlock"]),  # the plan as the caller builds it
    "netns+landlock-wide": (True, ["landlock-wide"]),  # also /tmp and /dev/shm, sockets and fifos made
    "netns+landlock+read-all": (True, ["landlock", "read-all"]),  # every file readable
    "netns+landlock+write-all": (True, ["landlock", "write-all"]),  # every file writable
    "netns+landlock+trees": (True, ["landlock", "trees"]),  # ncu's trees from the environment (the worker's)
    "netns+all": (True, ["all", "trees"]),  # what a profiled worker applies
    "netns+all+exit": (True, ["all", "trees", "_exit"]),  # the worker leaves with os._exit
    "netns+all-inet": (True, ["all", "trees", "no-inet"]),  # no TCP sockets: does ncu need them?
}

TARGET = r'''
import json, os, sys, time
paths, plan_file, layers, stages = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), sys.argv[4]
sys.path[:0] = paths
def stage(name):
    with open(stages, "a") as f:
        f.write(f"{time.time():.3f} {name}\n")
stage("start")
from kernel_tui.core.evaluator.sandbox import confine, for_profiled_process
from kernel_tui.core.evaluator.sandbox.models import SandboxPlan
plan = SandboxPlan.model_validate_json(open(plan_file).read())
named = {k: v for k, v in os.environ.items() if "INJECTION" in k or k == "LD_PRELOAD" or k.startswith("NV")}
stage("environment " + json.dumps(named))
loaded = sorted({ln.split()[-1] for ln in open("/proc/self/maps") if ln.split()[-1].startswith("/")})
stage("loaded outside the plan's reads " + json.dumps(
    [p for p in loaded if not any(p == r or p.startswith(r.rstrip("/") + "/") for r in plan.read)]))
if "trees" in layers:
    plan = for_profiled_process(plan, dict(os.environ))
    stage("trees " + json.dumps(plan.read[-4:]))
if "read-all" in layers:
    plan = plan.model_copy(update={"read": [*plan.read, "/"]})
if "write-all" in layers:
    plan = plan.model_copy(update={"write": [*plan.write, "/"]})
libc = confine._libc()
notes = []
if "no-inet" in layers:
    seccomp = confine._seccomp
    confine._seccomp = lambda libc, no_processes, unix_sockets=False, inet=False: seccomp(libc, no_processes, True, False)
if "all" in layers:
    notes.append(confine.apply(plan).summary())
if "nnp" in layers:
    notes.append(f"nnp: {confine._no_new_privs(libc)}")
if "userns" in layers:
    notes.append(f"userns: {confine._namespaces(libc, network=False)}")
if "seccomp" in layers:
    notes.append(f"seccomp: {confine._seccomp(libc, False, True, True)}")
if "limits" in layers:
    notes.append(f"limits: {confine._limits(plan)}")
if "landlock" in layers or "landlock-wide" in layers:
    if "landlock-wide" in layers:
        confine.FS_MAKE_SOCK = confine.FS_MAKE_FIFO = 0  # the write rights then include both
        plan = plan.model_copy(update={"write": [*plan.write, "/tmp", "/dev/shm"]})
    notes.append(f"landlock: {confine._landlock(libc, plan, confine.landlock_abi())}")
stage("confined " + " | ".join(notes))
import torch
x = torch.randn(1 << 24, device="cuda")
y = x + 1
torch.cuda.synchronize()
stage("cuda ready")
torch.cuda.profiler.start()
y = x + 1
torch.cuda.synchronize()
torch.cuda.profiler.stop()
stage("profiled range done")
if "_exit" in layers:
    os._exit(0)
'''


def _tail(path: Path, limit: int = 1200) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def run_case(name: str, netns: bool, layers: list[str], ncu: str, workdir: Path, plan_file: Path,
             timeout: float) -> dict:
    from kernel_tui.core.evaluator.runner import worker_env
    from kernel_tui.core.evaluator.sandbox import netns as netns_module
    from kernel_tui.core.profile.ncu import has_results, ncu_wrapper

    case_dir = workdir / name
    case_dir.mkdir(parents=True)
    target = case_dir / "target.py"
    target.write_text(TARGET)
    log, stages = case_dir / "ncu.log", case_dir / "stages.txt"
    command = [*([sys.executable, "-I", netns_module.__file__, "--"] if netns else []), *ncu_wrapper(ncu, log),
               sys.executable, "-I", str(target), json.dumps([p for p in sys.path if p]), str(plan_file),
               ",".join(layers) or "-", str(stages)]
    env = worker_env(case_dir, "cuda", workdir / "triton-cache")
    t0 = time.monotonic()
    with open(case_dir / "console.log", "wb") as console:
        proc = subprocess.Popen(command, cwd=case_dir, env=env, stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.monotonic() - t0
    marks = _tail(stages, 4000).splitlines()
    return {"case": name, "wall_s": round(wall, 2), "exit": code, "timed_out": code is None,
            "stages": [f"{float(m.split()[0]) - t0_epoch(marks):.2f} {m.split(' ', 1)[1]}" for m in marks],
            "results": has_results(_tail(log, 10**7)), "ncu_log": _tail(log), "console": _tail(case_dir / "console.log")}


def t0_epoch(marks: list[str]) -> float:
    return float(marks[0].split()[0]) if marks else 0.0


def evaluator_profile(task_dir: Path, sandbox: bool, timeout: float) -> dict:
    """The path an accepted version takes: Profiler.profile on the task's baseline."""
    import kernel_tui.core.evaluator.evaluator as evaluator_module
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.profile.store import Profiler
    from kernel_tui.core.workspace import Workspace

    evaluator_module.PROFILE_TIMEOUT = timeout
    os.environ["KERNEL_TUI_SANDBOX"] = "1" if sandbox else "0"
    out: dict = {"case": f"evaluator-{'sandbox' if sandbox else 'unconfined'}", "task": task_dir.name}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.create(task_dir, path=Path(tmp) / "ws")
        ev = Evaluator(ws.task, device="cuda", workdir=Path(tmp) / "work", timeout=timeout)
        try:
            t0 = time.monotonic()
            record = Profiler(ws, ev).profile(ws.baseline.hexsha)
            out.update(wall_s=round(time.monotonic() - t0, 2), status=record.status, reason=record.reason,
                       sandbox=ev._sandbox is not None)
            if record.profile is not None:
                out.update(duration_s=record.profile.total_duration_s, dram_bytes=record.profile.total_dram_bytes)
            runs = sorted((Path(tmp) / "work").glob("worker-*"))
            if runs:
                out.update(ncu_log=_tail(runs[-1] / "ncu.log"), stdout=_tail(runs[-1] / "stdout.log"),
                           stderr=_tail(runs[-1] / "stderr.log"))
        except Exception as exc:  # noqa: BLE001 - one line per case, whatever happened
            out.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        finally:
            ev.close()
            del os.environ["KERNEL_TUI_SANDBOX"]
    return out


def facts(ncu: str | None) -> dict:
    from kernel_tui.core.evaluator.sandbox import landlock_abi

    def sh(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()[-400:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{type(exc).__name__}: {exc}"

    return {"case": "facts", "kernel": platform.release(), "euid": os.geteuid(), "landlock_abi": landlock_abi(),
            "ncu": ncu, "ncu_version": sh(ncu, "--version") if ncu else None,
            "dev_shm": sh("ls", "-la", "/dev/shm"), "tmp_ncu": sh("ls", "-la", "/tmp")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--timeout", type=float, default=40.0, help="seconds each case may take")
    p.add_argument("--task", type=Path, default=ROOT / "fixtures" / "vector_add")
    p.add_argument("--cases", nargs="*", help=f"of {', '.join(CASES)} (default: all)")
    args = p.parse_args(argv)

    from kernel_tui.core.evaluator.sandbox import build_plan, for_profiler, for_worker
    from kernel_tui.core.profile.ncu import NCU_PORTS, find_ncu

    ncu = find_ncu()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as f, tempfile.TemporaryDirectory() as tmp:
        def emit(row: dict) -> None:
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps({k: row.get(k) for k in ("case", "wall_s", "exit", "timed_out", "results", "status",
                                                       "reason", "stages")}), flush=True)

        emit(facts(ncu))
        if ncu is None:
            return 1
        workdir = Path(tmp)
        plan = for_profiler(build_plan("cuda", workdir / "triton-cache", [p for p in sys.path if p]), ncu, NCU_PORTS)
        for name in args.cases or CASES:
            netns, layers = CASES[name]
            case_plan = for_worker(plan, workdir / name)
            plan_file = workdir / f"{name}.plan.json"
            plan_file.write_text(case_plan.model_dump_json())
            emit(run_case(name, netns, layers, ncu, workdir, plan_file, args.timeout))
        shutil.rmtree(workdir / "triton-cache", ignore_errors=True)
        for sandbox in (True, False):
            emit(evaluator_profile(args.task, sandbox, args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
