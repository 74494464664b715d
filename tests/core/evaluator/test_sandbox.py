"""The OS sandbox around evaluation workers: the plan, each layer applied to a real process, and attacks
that pass a switched-off static policy stopped and named end to end."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.evaluator.runner import package_paths
from kernel_tui.core.evaluator.sandbox import Guard, SandboxPlan, build_plan, for_worker, landlock_abi
from kernel_tui.core.gate import GatePolicy
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES

LANDLOCK = landlock_abi()
SHORT_GATE = GatePolicy(min_blocks=2, max_blocks=2, confirm_blocks=0)
BASELINE = (FIXTURES / "vector_add" / "baseline.py").read_text()


def candidate(prelude: str, body: str) -> str:
    """The vector_add baseline with `body` run at the start of every launch (policy off)."""
    head = prelude + "\n" + BASELINE
    return head.replace("    grid = (triton.cdiv", body + "    grid = (triton.cdiv", 1)


# --- the plan ----------------------------------------------------------------------------------


def test_plan_reads_what_python_needs_and_nothing_of_the_user(tmp_path):
    plan = build_plan("cpu", tmp_path / "cache", package_paths())
    assert any(p.startswith("/usr") for p in plan.read) and "/proc" in plan.read
    assert os.path.realpath(sys.prefix) in plan.read
    project = Path(__file__).resolve().parents[3]
    assert str(project) not in plan.read and str(project / "kernel_tui") in plan.read  # not its workspaces
    home = os.path.expanduser("~")
    assert home not in plan.read and "/tmp" not in plan.read and "/etc" not in plan.read
    assert plan.write == [str((tmp_path / "cache").resolve())] and plan.execute == []
    assert plan.max_address_space and plan.max_processes > 0
    worker = for_worker(plan, tmp_path / "worker-0001")
    assert worker.write[0] == str((tmp_path / "worker-0001").resolve())


def test_gpu_plan_may_run_the_compiler_triton_uses_and_no_shell(tmp_path):
    plan = build_plan("cuda", tmp_path / "cache", package_paths())
    names = {os.path.basename(p) for p in plan.execute}
    assert "ptxas" in names, plan.execute
    assert any("gcc" in n or "clang" in n or n == "cc" for n in names), plan.execute
    shells = {os.path.realpath(s) for s in ("/bin/sh", "/bin/bash", "/usr/bin/env", "/usr/bin/python3") if os.path.exists(s)}
    assert not shells & set(plan.execute)
    assert plan.max_address_space is None  # CUDA reserves more address space than it uses


# --- each layer, applied to a real process -----------------------------------------------------

PROBE = r"""
import json, os, socket, subprocess, sys, threading
from kernel_tui.core.evaluator.sandbox import SandboxPlan, apply
plan = SandboxPlan.model_validate_json(sys.argv[1])
report = apply(plan)
out = {"report": report.model_dump()}
def attempt(name, fn):
    try:
        fn()
        out[name] = "allowed"
    except (OSError, RuntimeError) as exc:
        out[name] = type(exc).__name__
work, secret, outside = sys.argv[2], sys.argv[3], sys.argv[4]
attempt("write_inside", lambda: open(os.path.join(work, "ok"), "w").write("x"))
attempt("write_outside", lambda: open(outside, "w").write("x"))
attempt("read_secret", lambda: open(secret).read())
attempt("exec_shell", lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True))
attempt("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("unix_socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("signal_parent", lambda: os.kill(os.getppid(), 0))
def threads():
    started = []
    stop = threading.Event()
    try:
        for _ in range(200):
            t = threading.Thread(target=stop.wait)
            t.start()
            started.append(t)
    finally:
        stop.set()
        out["threads_started"] = len(started)
attempt("many_threads", threads)
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
attempt("fork", fork)
print(json.dumps(out))
"""


@pytest.fixture
def probe(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("key")
    plan = for_worker(build_plan("cpu", tmp_path / "cache", package_paths()), work)
    plan = plan.model_copy(update={"max_processes": 64})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(package_paths())}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, plan.model_dump_json(), str(work), str(secret), str(tmp_path / "outside")],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), tmp_path


def test_a_sandboxed_process_keeps_to_its_folder(probe):
    result, tmp_path = probe
    report = result["report"]
    assert result["write_inside"] == "allowed"
    if LANDLOCK:
        assert any("Landlock" in a for a in report["active"]), report
        assert result["write_outside"] == "PermissionError" and not (tmp_path / "outside").exists()
        assert result["read_secret"] == "PermissionError"
        assert result["exec_shell"] == "PermissionError"
    else:  # never silently weaker: the report names what is missing
        assert any("Landlock" in m for m in report["missing"]), report


def test_a_sandboxed_process_has_no_network_and_cannot_signal_out(probe):
    result, _ = probe
    report = result["report"]
    assert any(a.startswith("no sockets") for a in report["active"]), report
    assert result["socket"] == "PermissionError" and result["unix_socket"] == "PermissionError"
    if LANDLOCK >= 6:
        assert result["signal_parent"] == "PermissionError"
    else:
        assert any("signals" in m for m in report["missing"]), report


def test_a_sandboxed_process_on_the_cpu_starts_threads_but_no_processes(probe):
    result, _ = probe
    report = result["report"]
    assert any(a.startswith("limits (") and "file size" in a and "memory" in a for a in report["active"]), report
    assert "no sockets, no new processes (seccomp)" in report["active"], report
    assert result["fork"] == "PermissionError"
    if os.geteuid() == 0:  # the kernel exempts root from the process limit; seccomp bounds it instead
        assert result["many_threads"] == "allowed" and result["threads_started"] == 200
    else:
        assert result["many_threads"] == "RuntimeError" and result["threads_started"] < 64


# --- naming what was tried ---------------------------------------------------------------------


def test_guard_names_each_kind_of_attempt(tmp_path):
    plan = SandboxPlan(read=["/usr"], write=[str(tmp_path)], execute=["/usr/bin/gcc-like"])
    guard = Guard(plan)
    guard._hook("os.mkdir", ("/tmp/before", 0o777, -1))  # before candidate code is loaded: trusted code only
    guard.arm(__file__)  # this test stands for the candidate
    guard._hook("open", (str(tmp_path / "fine"), "w", 0))
    guard._hook("open", ("/usr/lib/os.py", "r", 0))
    assert guard.violations == []
    guard._hook("open", ("/etc/shadow", "r", 0))
    guard._hook("open", ("/tmp/elsewhere", None, os.O_WRONLY | os.O_CREAT))
    guard._hook("os.mkdir", ("/tmp/newdir", 0o777, -1))
    guard._hook("socket.__new__", (None, 2, 1, 0))
    guard._hook("subprocess.Popen", ("/bin/sh", ["/bin/sh"], None, None))
    guard._hook("os.kill", (1, 9))
    guard._hook("ctypes.dlopen", ("libc.so.6",))
    rules = [v.split(":")[0] for v in guard.violations]
    assert rules == ["sandbox-read", "sandbox-write", "sandbox-write", "sandbox-network", "sandbox-exec",
                     "sandbox-signal", "sandbox-native"]
    assert guard.reason().startswith("sandbox-read: read of /etc/shadow") and "(+6 more)" in guard.reason()


def test_a_library_probing_for_a_file_is_not_named_but_the_candidate_is(tmp_path):
    guard = Guard(SandboxPlan(read=["/usr"]))
    guard.arm("/work/candidate/kt_candidate.py")  # not this file: the read below is a library's
    guard._hook("open", ("/home/user/project/pkg.egg-info/entry_points.txt", "r", 0))
    assert guard.violations == []
    guard.files.add(__file__)
    guard._hook("open", ("/home/user/.ssh/id_ed25519", "r", 0))
    assert guard.violations and guard.violations[0].startswith("sandbox-read")


def test_a_symlink_out_of_the_folder_is_judged_by_its_target(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    (inside / "link").symlink_to("/etc")
    guard = Guard(SandboxPlan(write=[str(inside)]))
    guard.arm()
    guard._hook("open", (str(inside / "link" / "passwd"), "a", 0))
    assert guard.violations and guard.violations[0].startswith("sandbox-write")


# --- end to end, with the static policy switched off ---------------------------------------------


@pytest.fixture(scope="module")
def unchecked(tmp_path_factory):
    """An evaluator with the static policy off: only the sandbox stands between a candidate and the host."""
    task = load_task(FIXTURES / "vector_add")
    ev = Evaluator(task, device="cpu", enforce_policy=False, policy=SHORT_GATE,
                   workdir=tmp_path_factory.mktemp("unchecked"), timeout=120)
    yield ev
    ev.close()


def test_writing_outside_is_stopped_and_named(unchecked, tmp_path):
    target = tmp_path / "escaped"
    result = unchecked.evaluate(candidate("import os", f"    os.makedirs({str(target)!r}, exist_ok=True)\n"))
    assert result.status is Status.sandbox_violation and result.reason.startswith("sandbox-write"), result.reason
    assert str(target) in result.reason and not result.accepted
    if LANDLOCK:
        assert not target.exists()


def test_a_socket_is_stopped_and_named(unchecked):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    port = server.getsockname()[1]
    accepted = []

    def serve():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    listener = threading.Thread(target=serve)
    listener.start()
    body = (f"    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'secret')\n"
            "    except OSError:\n        pass\n")
    result = unchecked.evaluate(candidate("import socket", body))
    listener.join()
    server.close()
    assert result.status is Status.sandbox_violation and result.reason.startswith("sandbox-network"), result.reason
    assert accepted == []


def test_a_shell_is_stopped_and_named_and_the_evaluator_keeps_serving(unchecked, tmp_path):
    target = tmp_path / "from-shell"
    body = f"    subprocess.run(['/bin/sh', '-c', 'touch {target}'])\n"
    result = unchecked.evaluate(candidate("import subprocess", body))
    assert result.status is Status.sandbox_violation and result.reason.startswith("sandbox-exec"), result.reason
    assert not target.exists()
    ok = unchecked.evaluate(BASELINE)
    assert ok.status is Status.ok, ok.reason
    assert ok.sandbox is not None and ok.sandbox.violations == []
    assert ok.sandbox.active and (ok.sandbox.complete or LANDLOCK < 6)


def test_switching_the_sandbox_off_is_said_in_the_result(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_TUI_SANDBOX", "0")
    task = load_task(FIXTURES / "vector_add")
    ev = Evaluator(task, device="cpu", workdir=tmp_path / "off", timeout=120)
    try:
        result = ev.check(task.baseline_source)
    finally:
        ev.close()
    assert result.status is Status.ok, result.reason
    assert result.sandbox is not None and not result.sandbox.active
    assert "switched off" in result.sandbox.summary()


def _run_filter(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """A classic-BPF interpreter for the few instructions the filter uses; returns the action."""
    import struct

    ins = [struct.unpack("HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr, 4: arch, 16: arg0}  # seccomp_data: nr, arch, args[0] low word
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = ins[pc]
        if code == 0x20:
            acc = data[k]
        elif code == 0x06:
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("no_processes, unix_sockets", [(True, False), (False, True), (False, False), (True, True)])
def test_the_seccomp_filter_assembles_and_decides_as_designed(machine, no_processes, unix_sockets):
    from kernel_tui.core.evaluator.sandbox.confine import AUDIT_ARCH, CLONE_THREAD, SYSCALLS, seccomp_program

    allow, deny = 0x7FFF0000, 0x00050000 | errno.EACCES
    program = seccomp_program(machine, no_processes, unix_sockets)
    arch, nr = AUDIT_ARCH[machine], SYSCALLS[machine]
    assert _run_filter(program, arch, 63) in (allow,)  # an ordinary call (read/uname-like numbers) passes
    assert _run_filter(program, arch + 1, 63) == deny  # another ABI: refused
    assert _run_filter(program, arch, nr["socket"], 2) == deny  # AF_INET never
    assert _run_filter(program, arch, nr["socket"], 1) == (allow if unix_sockets else deny)
    assert _run_filter(program, arch, nr["io_uring_setup"]) == deny
    assert _run_filter(program, arch, nr["clone"], CLONE_THREAD) == allow
    assert _run_filter(program, arch, nr["clone"], 0) == (deny if no_processes else allow)
    # no namespace of its own for anything the worker starts: out of the judge's reach to stop and kill
    assert _run_filter(program, arch, nr["unshare"]) == deny and _run_filter(program, arch, nr["setns"]) == deny
    assert _run_filter(program, arch, nr["clone"], CLONE_THREAD | 0x10000000) == deny  # CLONE_NEWUSER
    assert _run_filter(program, arch, nr["clone"], 0x20000000) == deny  # CLONE_NEWPID
    assert _run_filter(program, arch, nr["clone3"]) == 0x00050000 | errno.ENOSYS  # glibc falls back to clone
    # under a profiler (in its private network): TCP/IP too, and still nothing else
    inet = seccomp_program(machine, no_processes, unix_sockets, inet=True)
    for family, verdict in ((1, allow), (2, allow), (10, allow), (16, deny), (17, deny)):  # 16 netlink, 17 packet
        assert _run_filter(inet, arch, nr["socket"], family) == verdict, family
    assert _run_filter(inet, arch, nr["clone"], 0) == (deny if no_processes else allow)


# --- under a profiler: a private network of loopback alone ------------------------------------

PROFILED = r"""
import json, socket, sys
from kernel_tui.core.evaluator.sandbox import SandboxPlan, SandboxRefused, apply
plan = SandboxPlan.model_validate_json(sys.argv[1])
allowed, other = int(sys.argv[2]), int(sys.argv[3])
try:
    report = apply(plan)
except SandboxRefused as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(0)
out = {"active": report.active}
def attempt(name, fn):
    try:
        fn()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__
attempt("connect_profiler_port", lambda: socket.create_connection(("127.0.0.1", allowed), timeout=5).sendall(b"hi"))
attempt("connect_other_port", lambda: socket.create_connection(("127.0.0.1", other), timeout=5))
attempt("bind_other_port", lambda: socket.socket().bind(("127.0.0.1", other + 1)))
attempt("reach_outside", lambda: socket.create_connection(("192.0.2.1", allowed), timeout=5))
print(json.dumps(out))
"""

# stands in for ncu: listens on the first port of the range (and on another), then runs the worker
LISTENER = r"""
import socket, subprocess, sys
servers = []
for port in (int(sys.argv[2]), int(sys.argv[3])):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    servers.append(s)
sys.exit(subprocess.call([sys.executable, "-c", sys.argv[1], *sys.argv[4:]]))
"""


def profiled_probe(tmp_path: Path, private: bool) -> dict:
    from kernel_tui.core.evaluator.sandbox import for_profiler, netns

    first, other = 49152, 49300
    plan = for_worker(build_plan("cpu", tmp_path / "cache", package_paths()), tmp_path)
    plan = for_profiler(plan, sys.executable, (first, 4))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(package_paths())}
    worker = [PROFILED, plan.model_dump_json(), str(first), str(other)]
    command = [sys.executable, "-c", LISTENER, worker[0], str(first), str(other), *worker[1:]]
    if private:
        command = [sys.executable, "-I", netns.__file__, "--", *command]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_profiled_worker_reaches_the_profiler_on_its_ports_and_nothing_else(tmp_path):
    result = profiled_probe(tmp_path, private=True)
    assert "refused" not in result, result
    assert "no network (the profiler's private loopback)" in result["active"], result
    assert result["connect_profiler_port"] == "allowed"
    assert result["reach_outside"] != "allowed"  # nothing but loopback exists there
    if LANDLOCK >= 4:
        assert any(a.startswith("Landlock TCP (ports 49152–49155 only)") for a in result["active"]), result
        assert result["connect_other_port"] == "PermissionError" and result["bind_other_port"] == "PermissionError"


def test_a_profiled_worker_outside_a_private_network_refuses_to_start(tmp_path):
    result = profiled_probe(tmp_path, private=False)
    if sorted(name for _, name in socket.if_nameindex()) == ["lo"]:  # a host of loopback alone is as private
        assert "refused" not in result and result["connect_profiler_port"] == "allowed"
    else:
        assert "private network" in result["refused"] and "loopback only" in result["refused"]


# --- under a profiler: the profiler's own libraries stay readable ------------------------------

def fake_profiler_tree(root: Path) -> tuple[Path, Path]:
    """An install tree as ncu's: the executable at the top, its target libraries two levels down."""
    target = root / "nsight-compute" / "2025.3.1" / "target" / "linux-x64"
    target.mkdir(parents=True)
    (target.parents[1] / "ncu").write_text("#!/bin/sh\n")
    (target / "libnvperf_target.so").write_text("counters")
    return target.parents[1], target


def test_a_profiled_plan_adds_the_profilers_trees_named_in_its_environment_or_mapped(tmp_path):
    from kernel_tui.core.evaluator.sandbox import for_profiled_process

    tree, target = fake_profiler_tree(tmp_path / "opt")
    other = tmp_path / "other"
    other.mkdir()
    (other / "libx.so").write_text("x")
    plan = SandboxPlan(read=[str(tmp_path / "readable")], profiler_ports=(49152, 64))
    (tmp_path / "readable").mkdir()
    named = for_profiled_process(plan, {"NV_COMPUTE_PROFILER_PERFWORKS_DIR": f"{target}/."}, maps="")
    assert named.read == [*plan.read, str(target), str(tree)]
    maps = (f"7f0000-7f1000 r-xp 00000000 00:1f 42 {target}/libnvperf_target.so\n"
            f"7f1000-7f2000 r-xp 00000000 00:1f 43 {tmp_path}/readable/lib.so\n"
            "7f2000-7f3000 rw-p 00000000 00:00 0 [heap]\n"
            f"7f3000-7f4000 r-xp 00000000 00:1f 44 {other}/libx.so (deleted)\n")
    (tmp_path / "readable" / "lib.so").write_text("")
    assert for_profiled_process(plan, {}, maps=maps).read == [*plan.read, str(target), str(tree)]
    # a folder already readable is not added again; nothing is added outside a profiler, or from nothing
    assert for_profiled_process(plan, {"LD_PRELOAD": f"{tmp_path}/readable/lib.so"}, maps="").read == plan.read
    unprofiled = SandboxPlan(read=plan.read)
    assert for_profiled_process(unprofiled, {"NV_COMPUTE_PROFILER_PERFWORKS_DIR": str(target)}, maps=maps) == unprofiled
    assert for_profiled_process(plan, {"CUDA_INJECTION64_PATH": "relative/lib.so:/no/such/lib.so"}, maps="") == plan


def test_a_profilers_tree_may_hold_spaces_and_never_widens_to_a_shared_folder(tmp_path):
    from kernel_tui.core.evaluator.sandbox import for_profiled_process

    (tmp_path / "NVIDIA").mkdir()  # beside the install folder: what a split at the space would open
    tree, target = fake_profiler_tree(tmp_path / "NVIDIA Nsight")
    plan = SandboxPlan(read=[], write=[str(tmp_path / "work")], profiler_ports=(49152, 64))
    expected = [*plan.read, str(target), str(tree)]
    assert for_profiled_process(plan, {"NV_COMPUTE_PROFILER_PERFWORKS_DIR": str(target)}, maps="").read == expected
    maps = f"7f0000-7f1000 r-xp 00000000 00:1f 42    {target}/libnvperf_target.so\n"
    assert for_profiled_process(plan, {}, maps=maps).read == expected
    # the root, a personal or shared folder, or a folder above what the worker writes: never opened whole
    (tmp_path / "lib.so").write_text("")
    for env in ({"NV_COMPUTE_PROFILER_PERFWORKS_DIR": "/"}, {"LD_PRELOAD": "/tmp /home"},
                {"CUDA_INJECTION64_PATH": str(tmp_path / "lib.so")}, {"LD_PRELOAD": str(Path.home())}):
        assert for_profiled_process(plan, env, maps="") == plan, env
    assert for_profiled_process(plan, {}, maps=f"7f0000-7f1000 r-xp 00000000 00:1f 42 {tmp_path}/lib.so\n") == plan


READS_PROFILER_TREE = r"""
import json, os, sys
from kernel_tui.core.evaluator.sandbox import SandboxPlan, apply, for_profiled_process
plan = for_profiled_process(SandboxPlan.model_validate_json(sys.argv[1]), dict(os.environ))
apply(plan)
out = {}
for name, path in (("profiler_tree", sys.argv[2]), ("elsewhere", sys.argv[3])):
    try:
        open(path).read()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__
print(json.dumps(out))
"""


@pytest.mark.skipif(LANDLOCK <= 0, reason="Landlock confines reads; without it every file is readable")
def test_a_profiled_worker_reads_the_profilers_libraries_and_still_nothing_else(tmp_path):
    # measured on an H200: ncu loads its counter library from beside its injection libraries only after
    # the worker is confined, and reports LibraryNotLoaded when it may not read them
    from kernel_tui.core.evaluator.sandbox import for_profiler, netns

    _, target = fake_profiler_tree(tmp_path / "opt")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("private")
    plan = for_worker(build_plan("cpu", tmp_path / "cache", package_paths()), tmp_path / "work")
    plan = for_profiler(plan, sys.executable, (49152, 4))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(package_paths()),
           "NV_COMPUTE_PROFILER_PERFWORKS_DIR": f"{target}/."}
    command = [sys.executable, "-I", netns.__file__, "--", sys.executable, "-c", READS_PROFILER_TREE,
               plan.model_dump_json(), str(target / "libnvperf_target.so"), str(elsewhere)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"profiler_tree": "allowed", "elsewhere": "PermissionError"}
