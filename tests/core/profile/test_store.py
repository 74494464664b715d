"""Profiles of versions end to end on the CPU: the worker runs under a stand-in for ncu (a script that runs
its target, then writes one of the ncu logs of tests/data/ncu), the profile is parsed, stored beside the
evaluation and as a git note, read back, told to the agent, compared in the history and the report; and
where profiling cannot work, one line says why, once."""

from __future__ import annotations

import json
import stat
import sys
import threading
from pathlib import Path

import pytest

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.profile import parse_ncu_csv
from kernel_tui.core.profile.store import Profiler, ProfileRecord, profiler_for, save, stored
from kernel_tui.core.proposers import llm_tools
from kernel_tui.core.workspace import PROFILES_REF, Workspace
from tests.conftest import FIXTURES, ROOT

NCU_DATA = ROOT / "tests" / "data" / "ncu"

FAKE_NCU = """#!{python}
import os, shutil, socket, subprocess, sys, time
args = sys.argv[1:]
i = args.index("--log-file")
log, target = args[i + 1], args[i + 2:]
metrics = args[args.index("--metrics") + 1].split(",")
with open({calls!r}, "a") as f:
    f.write(" ".join(args[: i + 2]) + "\\n")
with open({calls!r} + ".net", "w") as f:  # the network it (and so its target) runs in
    f.write(",".join(name for _, name in socket.if_nameindex()))
if {mode!r} == "refuse":  # ncu refusing its command line: a console line, no log, no target
    sys.stdout.write(open({data!r}).read())
    sys.exit(1)
if {mode!r} == "hang":
    time.sleep(3600)
perfworks = os.path.join(os.path.dirname({calls!r}), "ncu-perfworks")  # where ncu says its counter library is
os.makedirs(perfworks, exist_ok=True)
code = subprocess.call(target, env=dict(os.environ, NV_COMPUTE_PROFILER_PERFWORKS_DIR=perfworks))
worker_result = os.path.join(os.path.dirname(log), "result.json")
if {lacks!r} and {lacks!r} in metrics:
    with open(log, "w") as f:
        f.write("==ERROR== Failed to find metric {lacks}\\n")
elif code == 0 and os.path.exists(worker_result):
    shutil.copy({data!r}, log)
sys.exit(code)
"""


def fake_ncu(tmp_path: Path, data: str, lacks: str = "", mode: str = "run") -> tuple[str, Path]:
    """An executable that behaves like ncu as far as the Profiler can tell; returns it and its call log.
    `mode`: "run" its target, "refuse" its command line (prints `data` and exits), or "hang"."""
    calls = tmp_path / "ncu-calls.txt"
    path = tmp_path / "ncu-bin" / "ncu"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_NCU.format(python=sys.executable, calls=str(calls), data=str(NCU_DATA / data), lacks=lacks,
                                    mode=mode))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), calls


def gpu_profiler(ws: Workspace, ev: Evaluator, ncu: str) -> Profiler:
    """The evaluator's profiler, made to run on the CPU interpreter with `ncu` (on a real machine a CPU
    device turns profiles off); the session and the agent use this same one."""
    profiler = profiler_for(ws, ev)
    assert profiler.off is not None and "GPU" in profiler.off
    profiler.ncu, profiler.off = ncu, None
    return profiler


def profiled_workspace(path):
    """The fixed four-round workspace, its baseline and its accepted round 1 profiled (round 1 moved more
    bytes at a higher share of DRAM peak)."""
    from tests.support.workspaces import fixed_workspace

    ws = fixed_workspace(path)
    base = parse_ncu_csv((NCU_DATA / "vector_add.log").read_text())
    kernel = base.kernels[0]
    better = base.model_copy(update={"kernels": [kernel.model_copy(update={
        "dram_pct": 61.0 if kernel.dram_pct is None else kernel.dram_pct * 0.6,
        "duration_s": (kernel.duration_s or 1e-4) * 1.5})]})
    r1 = next(ln for ln in ws.trajectory() if ln.round == 1)
    sample = {"shape": "main", "created": "2025-01-02T03:04:05+00:00", "device_name": "hand-written sample ncu log"}
    save(ws, ProfileRecord(commit=ws.baseline.hexsha, status="ok", profile=better, **sample))
    save(ws, ProfileRecord(commit=r1.commit, round=1, status="ok", profile=base, **sample))
    return ws, r1


@pytest.fixture
def vector_add(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = Evaluator(ws.task, device="cpu", workdir=tmp_path / "eval")
    yield ws, ev
    ev.close()


@pytest.mark.slow
def test_a_version_is_profiled_in_the_worker_under_ncu_and_stored_beside_it(vector_add, tmp_path):
    ws, ev = vector_add
    ncu, calls = fake_ncu(tmp_path, "vector_add.log")
    record = gpu_profiler(ws, ev, ncu).profile(ws.baseline.hexsha)
    assert record.status == "ok", record.reason
    assert record.profile == parse_ncu_csv((NCU_DATA / "vector_add.log").read_text())
    assert record.commit == ws.baseline.hexsha and record.round is None and record.shape
    args = calls.read_text()
    assert "--profile-from-start off" in args and "--clock-control none" in args  # the worker ran under it
    assert "--print-metric-name" not in args  # ncu refuses it with the raw page (recorded: refused_option.log)
    if ev._sandbox is not None:  # ncu and its worker ran in a private network: loopback alone
        assert Path(f"{calls}.net").read_text() == "lo"
        assert "the profiler's private loopback" in " ".join(record_sandbox(ev))
        # the worker may read the folder ncu named for its counter library, and says so
        assert f"reads the profiler's folders: {(tmp_path / 'ncu-perfworks').resolve()}" in record_sandbox(ev)
    # stored: a git note on the commit, and a file under profiles/ (no round made the baseline)
    assert json.loads(ws.repo.git.notes("--ref", PROFILES_REF, "show", ws.baseline.hexsha))["status"] == "ok"
    assert (ws.root / "profiles" / f"{ws.baseline.hexsha}.json").exists()
    assert stored(ws, ws.baseline.hexsha) == record
    assert record.profile.bottleneck() == "memory"  # type: ignore[union-attr]
    text = json.loads(llm_tools.profile_answer(record))
    assert text["status"] == "ok" and any("DRAM" in line for line in text["summary"])


@pytest.mark.slow
def test_a_metric_this_ncu_lacks_is_dropped_and_the_profile_taken_again(vector_add, tmp_path):
    ws, ev = vector_add
    lacking = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    ncu, calls = fake_ncu(tmp_path, "vector_add.log", lacks=lacking)
    profiler = gpu_profiler(ws, ev, ncu)
    assert lacking in profiler.metrics
    record = profiler.profile(ws.baseline.hexsha)
    assert record.status == "ok", record.reason
    assert len(calls.read_text().splitlines()) == 2 and lacking not in profiler.metrics


@pytest.mark.slow
def test_no_access_to_the_counters_turns_profiles_off_once_with_one_line(vector_add, tmp_path):
    ws, ev = vector_add
    ncu, calls = fake_ncu(tmp_path, "err_nvgpuctrperm.log")
    profiler = gpu_profiler(ws, ev, ncu)
    first = profiler.profile(ws.baseline.hexsha)
    assert first.status == "unavailable" and "\n" not in first.reason
    assert profiler.off is not None and "NVreg_RestrictProfilingToAdminUsers" in profiler.off
    assert stored(ws, ws.baseline.hexsha) is None  # nothing is kept of a machine that cannot profile
    again = profiler.profile(ws.baseline.hexsha)
    assert again.status == "unavailable" and len(calls.read_text().splitlines()) == 1  # not tried again


def test_a_machine_that_cannot_confine_a_profiled_worker_turns_profiles_off_once(vector_add, tmp_path, monkeypatch):
    # root under ncu has no user namespace: the worker refuses to run the version, and would refuse every later one
    from kernel_tui.core.evaluator.models import UNCONFINED_REFUSAL, WorkerResult

    ws, ev = vector_add
    ncu, _ = fake_ncu(tmp_path, "vector_add.log")
    profiler = gpu_profiler(ws, ev, ncu)
    calls: list[str] = []
    why = f"{UNCONFINED_REFUSAL} (user namespace: not under Nsight Compute as root): nothing was run"

    def refused(source, *args, **kwargs):
        calls.append(source)
        return WorkerResult(status=Status.evaluator_fault, reason=why), ""

    monkeypatch.setattr(ev, "profile", refused)
    first = profiler.profile(ws.baseline.hexsha)
    assert first.status == "unavailable" and profiler.off == f"profiles are off on this machine: {why}"
    assert stored(ws, ws.baseline.hexsha) is None
    assert profiler.profile(ws.baseline.hexsha).status == "unavailable" and len(calls) == 1  # not asked again
    # a later task's profiler in this process (a suite opens one a task) knows it without a worker's start,
    # unless its workers may run unconfined
    for unconfined, off in ((False, profiler.off), (True, None)):
        later_ev = Evaluator(ws.task, device="cpu", workdir=tmp_path / f"later-{unconfined}", unconfined=unconfined)
        monkeypatch.setattr(later_ev, "device", "cuda")
        assert Profiler(Workspace.open(ws.root), later_ev, ncu=ncu).off == off
        later_ev.close()
    # any other fault of the evaluator is this version's failed profile, and the next version is profiled
    other = gpu_profiler(Workspace.open(ws.root), Evaluator(ws.task, device="cpu", workdir=tmp_path / "e2"), ncu)
    monkeypatch.setattr(other.evaluator, "profile", lambda *a, **k: (WorkerResult(status=Status.evaluator_fault,
                                                                                  reason="out of memory"), ""))
    assert other.profile(ws.baseline.hexsha).status == "failed" and other.off is None
    other.evaluator.close()


def record_sandbox(ev: Evaluator) -> list[str]:
    """What the last profiled worker's sandbox said was in force."""
    result = json.loads(sorted(ev.workdir.glob("*/result.json"), key=lambda p: p.stat().st_mtime)[-1].read_text())
    return result["sandbox"]["active"]


@pytest.mark.slow
def test_an_ncu_that_refuses_its_command_line_turns_profiles_off_with_its_own_words(vector_add, tmp_path):
    ws, ev = vector_add
    ncu, calls = fake_ncu(tmp_path, "refused_option.log", mode="refuse")
    profiler = gpu_profiler(ws, ev, ncu)
    first = profiler.profile(ws.baseline.hexsha)
    # the recorded line reached the console only, not ncu's log: it is still the reason given
    assert first.status == "unavailable" and "\n" not in first.reason
    assert "refuses kernel-tui's command line" in first.reason and "--print-metric-name" in first.reason
    assert profiler.profile(ws.baseline.hexsha).status == "unavailable"
    assert len(calls.read_text().splitlines()) == 1  # not tried again


@pytest.mark.slow
def test_a_profiled_run_that_never_ends_turns_profiles_off_for_the_session(vector_add, tmp_path, monkeypatch):
    import kernel_tui.core.evaluator.evaluator as evaluator_module

    ws, ev = vector_add
    monkeypatch.setattr(evaluator_module, "PROFILE_TIMEOUT", 3.0)
    monkeypatch.setattr(ev, "timeout", 3.0)
    ncu, calls = fake_ncu(tmp_path, "vector_add.log", mode="hang")
    profiler = gpu_profiler(ws, ev, ncu)
    first = profiler.profile(ws.baseline.hexsha)
    assert first.status == "unavailable" and "did not finish under ncu" in first.reason and "\n" not in first.reason
    assert profiler.off == first.reason and stored(ws, ws.baseline.hexsha) is None
    assert profiler.profile(ws.baseline.hexsha).status == "unavailable"
    assert len(calls.read_text().splitlines()) == 1  # the next accepted version does not wait as long again


def test_without_a_gpu_or_without_ncu_the_reason_is_plain(vector_add, monkeypatch, tmp_path):
    ws, ev = vector_add
    assert "need a GPU" in Profiler(ws, ev).off  # type: ignore[operator]
    ev.device = "cuda"  # as a GPU machine without ncu would be
    monkeypatch.setenv("KERNEL_TUI_NCU", str(tmp_path / "nowhere"))
    assert "KERNEL_TUI_NCU=" in Profiler(ws, ev).off and "not an executable" in Profiler(ws, ev).off  # type: ignore[operator]
    monkeypatch.delenv("KERNEL_TUI_NCU")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    profiler = Profiler(ws, ev)
    if profiler.ncu is None:  # (a machine with ncu in /usr/local/cuda or /opt would still find it)
        assert "ncu was not found" in profiler.off  # type: ignore[operator]
    monkeypatch.setenv("KERNEL_TUI_NCU", "0")
    assert Profiler(ws, ev).off == "profiles are turned off (KERNEL_TUI_NCU=0)"
    ev.device = "cpu"


def test_a_source_that_breaks_the_policy_is_not_profiled(vector_add, tmp_path):
    ws, ev = vector_add
    ncu, calls = fake_ncu(tmp_path, "vector_add.log")
    record = gpu_profiler(ws, ev, ncu).profile_source("import os\nos.system('true')\n")
    assert record.status == "failed" and record.reason.startswith("not profiled:")
    assert not calls.exists()


@pytest.mark.slow
def test_the_session_profiles_the_baseline_and_each_accepted_version_and_the_agent_hears_it(tmp_path):
    from kernel_tui.core.events import ProfileEvent
    from kernel_tui.core.session import Session
    from tests.support.workspaces import CANDIDATES, RecordingReplay

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = Evaluator(ws.task, device="cpu", workdir=tmp_path / "eval")
    events: list = []
    proposer = RecordingReplay(CANDIDATES)
    session = Session(ws, ev, proposer, max_steps=3, cancel=threading.Event(), on_event=events.append)
    ncu, _ = fake_ncu(tmp_path, "vector_add.log")
    assert session.profiler is gpu_profiler(ws, ev, ncu)
    session.run()
    accepted = [ln for ln in ws.trajectory() if ln.accepted]
    profiled = [e for e in events if isinstance(e, ProfileEvent)]
    assert accepted, "the replayed candidates should include an accepted one"
    # the baseline at preflight (what later versions are compared with), then each accepted version
    assert [e.record.commit for e in profiled] == [ws.baseline.hexsha] + [ln.commit for ln in accepted]
    assert profiled[0].round == 0 and stored(ws, ws.baseline.hexsha) is not None
    for ln in accepted:
        assert (ws.root / ln.evaluation_dir / "profile.json").exists()  # type: ignore[operator]
        assert stored(ws, ln.commit).round == ln.round  # type: ignore[union-attr]
    heard = {fb.round: fb for fb in proposer.feedbacks}
    assert all(heard[ln.round].profile and "bottleneck" in heard[ln.round].profile[1] for ln in accepted)
    assert all(not fb.profile for fb in proposer.feedbacks if not fb.accepted)
    ev.close()


@pytest.mark.slow
def test_on_the_cpu_the_session_says_once_why_there_are_no_profiles(tmp_path):
    from kernel_tui.core.events import LogEvent
    from kernel_tui.core.session import Session
    from tests.support.workspaces import CANDIDATES, RecordingReplay

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = Evaluator(ws.task, device="cpu", workdir=tmp_path / "eval")
    events: list = []
    session = Session(ws, ev, RecordingReplay(CANDIDATES), max_steps=3, cancel=threading.Event(), on_event=events.append)
    for _ in range(3):
        session.step()
    said = [e.text for e in events if isinstance(e, LogEvent) and "profiles need a GPU" in e.text]
    assert len(said) == (1 if any(ln.accepted for ln in ws.trajectory()) else 0)
    ev.close()


def test_the_report_tables_each_profiled_version_and_what_changed(tmp_path):
    from kernel_tui.core.report import write_report

    ws, r1 = profiled_workspace(tmp_path / "ws")
    write_report(ws.root)
    report = (ws.root / "report.md").read_text()
    section = report[report.index("## Profiles"):]
    section = section[:section.index("\n## ", 5)]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| version | kernels | time | DRAM %")
    assert rows[1].startswith("| baseline |") and rows[2].startswith("| round 1 (accepted) |") and len(rows) == 3
    assert f"- `{r1.commit[:8]}` against `{ws.baseline.hexsha[:8]}`: " in section and "DRAM throughput" in section


@pytest.mark.slow
def test_compiling_a_candidate_before_timing_runs_it_and_checks_the_policy_first(vector_add):
    ws, ev = vector_add
    done = ev.compile_facts(ws.task.baseline_source)
    assert done.status.value == "ok" and done.reason.startswith("4 calls at shape")
    assert done.kernels == []  # the interpreter compiles nothing: facts exist on a GPU only
    refused = ev.compile_facts("import os\nos.system('true')\n")
    assert refused.status.value == "policy_violation"
    broken = ev.compile_facts(ws.task.baseline_source.replace("def ", "def (", 1))
    assert broken.status.value == "compile_error"


def test_a_note_longer_than_a_command_line_argument_is_stored(vector_add):
    ws, _ = vector_add
    base = parse_ncu_csv((NCU_DATA / "vector_add.log").read_text())
    many = base.model_copy(update={"kernels": base.kernels * 400})  # ~250 KB of JSON
    save(ws, ProfileRecord(commit=ws.baseline.hexsha, status="ok", profile=many, shape="main"))
    back = stored(ws, ws.baseline.hexsha)
    assert back is not None and len(back.profile.kernels) == 400  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_failed_retake_does_not_replace_a_good_profile(vector_add, tmp_path):
    ws, ev = vector_add
    good, _ = fake_ncu(tmp_path / "good", "vector_add.log")
    profiler = gpu_profiler(ws, ev, good)
    assert profiler.profile(ws.baseline.hexsha).status == "ok"
    bad, _ = fake_ncu(tmp_path / "bad", "no_kernels.log")
    profiler.ncu = bad
    retake = profiler.profile(ws.baseline.hexsha)
    assert retake.status == "failed"
    assert stored(ws, ws.baseline.hexsha).status == "ok"  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_failed_baseline_profile_is_taken_again_at_preflight(tmp_path):
    # a preflight cut short after its profile failed (ncu killed, say) left a failed record behind
    from kernel_tui.core.session import Session
    from tests.support.workspaces import CANDIDATES, RecordingReplay

    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = Evaluator(ws.task, device="cpu", workdir=tmp_path / "eval")
    save(ws, ProfileRecord(commit=ws.baseline.hexsha, status="failed", reason="ncu was killed", shape="main",
                           created="2025-01-02T03:04:05+00:00"))
    session = Session(ws, ev, RecordingReplay(CANDIDATES), max_steps=1, cancel=threading.Event())
    ncu, calls = fake_ncu(tmp_path, "vector_add.log")
    gpu_profiler(ws, ev, ncu)
    session.preflight()
    again = stored(ws, ws.baseline.hexsha)
    assert calls.exists() and again is not None and again.status == "ok", again
    ev.close()
