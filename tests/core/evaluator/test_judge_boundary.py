"""The trust boundary: what a candidate's process can reach, and what the judge and the caller do with what
comes back from it. The catalogue (test_adversarial.py) shows each attack rejected by name; these tests check
what a status alone cannot show: nothing left outside the worker, nothing read from a worker's folder,
nothing from a worker believed."""

from __future__ import annotations

import os
import random
import socket
from functools import cache
from pathlib import Path

import pytest
import torch

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.evaluator.arena import Arena, side_set_bytes
from kernel_tui.core.evaluator.channel import Channel, ChannelError, pair
from kernel_tui.core.evaluator.draw import edge_values, plant_edges
from kernel_tui.core.evaluator.harness import ArgumentSet, CandidateFault
from kernel_tui.core.evaluator.judge import unconfined
from kernel_tui.core.evaluator.protocol import Reply
from kernel_tui.core.evaluator.runner import _JudgeReader
from kernel_tui.core.evaluator.sandbox import SandboxReport, confine
from kernel_tui.core.evaluator.shared_sets import UntouchedCheck
from kernel_tui.core.gate import GatePolicy
from kernel_tui.core.task import InputDistribution, load_task
from tests.conftest import FIXTURES

CASES = Path(__file__).parents[2] / "adversarial"
SHORT_GATE = GatePolicy(min_blocks=2, max_blocks=2, confirm_blocks=0)


@cache
def vector_add():
    return load_task(FIXTURES / "vector_add")


def evaluator(workdir: Path, *, policy: bool = False) -> Evaluator:
    return Evaluator(vector_add(), device="cpu", enforce_policy=policy, policy=SHORT_GATE, workdir=workdir,
                     timeout=120)


# --- nothing left outside the worker -------------------------------------------------------------------

def test_links_planted_in_a_workers_folder_are_never_followed_even_when_the_workspace_is_resumed(tmp_path):
    source = (CASES / "vector_add__judge_plant_symlink.py").read_text()
    target = Path("/tmp/kernel-tui-symlink-target")
    target.unlink(missing_ok=True)
    work = tmp_path / "eval"
    first = evaluator(work)
    assert first.evaluate(source).status in (Status.ok, Status.sandbox_violation)  # links, whatever the audit says
    first.close()
    planted = [f for root, _, files in os.walk(work) for f in files
               if f == "stdout.log" and os.path.islink(os.path.join(root, f))]
    assert planted, "the case did not plant its links: the test proves nothing"
    again = evaluator(work)  # a resumed workspace: a new evaluator in the same folder
    assert again.check(vector_add().baseline_source).status is Status.ok
    again.close()
    assert not target.exists()


def _sysv_keys() -> set[int]:
    try:
        lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {int(line.split()[0]) for line in lines if line.split()}


def test_a_system_v_segment_a_candidate_makes_does_not_outlive_its_worker(tmp_path):
    source = (CASES / "vector_add__judge_sysv_shm.py").read_text()
    key = 0x4B545348
    assert key not in _sysv_keys()
    result = evaluator(tmp_path / "eval").check(source)
    assert result.status is Status.sandbox_violation, result.reason
    assert key not in _sysv_keys()  # it lived in the worker's own IPC namespace


def test_a_new_folder_never_reuses_a_name_something_else_left(tmp_path):
    ev = evaluator(tmp_path / "eval")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "worker-0001").mkdir()
    os.symlink("/tmp", tmp_path / "eval" / "worker-0002")
    folder = ev._next_workdir()
    assert folder.name == "worker-0003" and not folder.exists()


# --- nothing from a worker believed --------------------------------------------------------------------

def test_the_channel_names_garbage_size_silence_and_a_closed_end():
    mine, theirs = pair()
    chan = Channel(mine)
    theirs.send(b"\x00\xff not json")
    with pytest.raises(ChannelError) as caught:
        chan.receive(Reply, 5)
    assert caught.value.kind == "garbage"
    theirs.send(b'{"ok": false}')  # a failure must say what failed
    with pytest.raises(ChannelError) as caught:
        chan.receive(Reply, 5)
    assert caught.value.kind == "garbage"
    theirs.send(b'{"ok": true, "verdict": "accepted"}')  # no field a worker could decide anything with
    with pytest.raises(ChannelError) as caught:
        chan.receive(Reply, 5)
    assert caught.value.kind == "garbage"
    with pytest.raises(ChannelError) as caught:
        chan.receive(Reply, 0.2)
    assert caught.value.kind == "timeout"
    r, w = os.pipe()
    socket.send_fds(theirs, [b'{"ok": true}'], [r])  # a descriptor nobody asked for is closed, not kept
    assert chan.receive(Reply, 5).ok
    os.close(w)
    theirs.close()
    with pytest.raises(ChannelError) as caught:
        chan.receive(Reply, 5)
    assert caught.value.kind == "closed"


def test_the_caller_survives_whatever_comes_down_the_judges_pipe():
    seen: list[tuple] = []
    reader = _JudgeReader(-1, lambda *a: seen.append(a))
    reader._lines(b'garbage\n{"progress": ["timing", 3, 25]}\n{"progress": "x"}\n[1, 2]\n')
    assert seen == [("timing", 3, 25)] and reader.result is None
    bad = b'{"result": {"status": "ok", "reason": "x", "timing": {"block": 0, "method": "flush", "shape": "s", ' \
          b'"incumbent": [1.0], "candidate": [-1.0], "order": ["AB"], "inner_repeats": 1}}}\n'
    reader._lines(bad)
    assert reader.result is None and reader.unreadable  # a negative time is no time: crashed, not a verdict
    reader._lines(b'{"result": {"status": "ok", "reason": "correct"}}\n')
    assert reader.result is not None and reader.result.status is Status.ok


def test_a_layer_missing_is_missing_and_essential_ones_stop_the_evaluation():
    class Libc:  # root without user namespaces: only the network and IPC namespaces can be had
        def unshare(self, flags):
            return -1 if flags & confine.CLONE_NEWUSER else 0

    got = confine._namespaces(Libc()) if os.geteuid() == 0 else []
    if got:  # as root the fallback keeps capabilities: reported missing, never active
        assert any(name == "user namespace" and why for name, why in got)
    report = SandboxReport(active=["no new privileges"], missing=[
        "user namespace: unshare(user, net, ipc) (EPERM): the worker keeps root's capabilities over the host",
        "Landlock: not available in this kernel, so reads, writes and execution are not confined",
        "Landlock ABI 3 < 5: device ioctls are not restricted"])
    assert len(unconfined(report)) == 2
    assert unconfined(SandboxReport(missing=["the sandbox was switched off: candidates are not confined"])) == []


# --- the judge's own checks ----------------------------------------------------------------------------

class _Shared:
    """What UntouchedCheck asks of SharedSets: the device, the sets' ids and their arenas."""

    def __init__(self) -> None:
        self.device, self.set_ids, self.arena_of = "cpu", {}, {}


def test_the_window_check_sees_an_output_written_before_its_window_opened():
    spec, dims = vector_add().spec, {"rows": 37, "cols": 129}
    shared, arenas = _Shared(), {}
    for role in ("candidate", "incumbent"):
        arenas[role] = Arena(len(arenas) + 1, "cpu", 2 * side_set_bytes(spec, dims))
    sets = [ArgumentSet.build(spec, dims, "cpu", seed, sides=dict(arenas)) for seed in (1, 2)]
    for k, s in enumerate(sets):
        shared.set_ids[id(s)] = k
        for role, arena in arenas.items():
            shared.arena_of[(role, k)] = arena
        s.compute_expected(lambda x, y, out, n: (x.float() + y.float()).to(out.dtype))
        s.prepare_call("candidate")
    check = UntouchedCheck(shared, "candidate", sets, random.Random(1))
    assert bool(check.flag())
    sets[1].args("incumbent")[2].copy_(sets[1].expected[0])  # the other side's buffer: not this side's business
    assert bool(check.flag())
    sets[1].args("candidate")[2].copy_(sets[1].expected[0])  # written ahead of the gate
    assert not bool(check.flag())


def test_a_sides_buffers_are_its_own_and_the_truth_is_the_judges():
    spec, dims = vector_add().spec, {"rows": 8, "cols": 16}
    arenas = {role: Arena(i, "cpu", side_set_bytes(spec, dims)) for i, role in enumerate(("candidate", "incumbent"))}
    s = ArgumentSet.build(spec, dims, "cpu", 3, sides=dict(arenas))
    s.compute_expected(lambda x, y, out, n: (x.float() + y.float()).to(out.dtype))
    s.prepare_call("candidate")
    cand = s.args("candidate")
    base = arenas["candidate"].base
    inside = [t for t in cand if isinstance(t, torch.Tensor)]
    lo, hi = base.data_ptr(), base.data_ptr() + base.numel()
    assert all(lo <= t.data_ptr() < hi for t in inside)  # every tensor the candidate gets is in its arena
    private = [*s.inputs.values(), *s.expected, *(o.before for o in s.outputs.values())]
    assert not any(lo <= t.data_ptr() < hi for t in private)  # the truth, the answer and the poison are not
    truth = s.inputs["x"].clone()
    cand[0].add_(1)  # the candidate mutates its input: its own copy, checked against the truth
    cand[2].copy_(s.expected[0])
    with pytest.raises(CandidateFault, match="input 'x' was modified"):
        s.check("call", "candidate")
    assert torch.equal(s.inputs["x"], truth)


def test_edge_values_stay_inside_the_distribution_and_include_zero_and_the_tails():
    dims = {"n": 4}
    normal = edge_values(InputDistribution(distribution="normal", mean=0, standardDeviation=1), dims, torch.float32)
    assert 0.0 in normal and any(v > 5 for v in normal) and any(v < -5 for v in normal)
    assert any(0 < abs(v) < torch.finfo(torch.float32).tiny for v in normal)  # a subnormal
    assert any(str(v) == "-0.0" for v in normal)
    positive = edge_values(InputDistribution(distribution="uniform", low=0.5, high=2.0), dims, torch.float16)
    assert positive and all(0.5 <= v <= 2.0 for v in positive)  # no zero where the draw has none
    t = torch.randn(10_000)
    plant_edges(t, normal, seed=1)
    assert int((t == 0).sum()) > 100 and int((t.abs() > 5).sum()) > 100


def test_a_profiled_worker_is_in_a_user_namespace_made_before_ncu_started_or_says_why_not(tmp_path, monkeypatch):
    """Under Nsight Compute a worker has threads before it can confine itself, and a process with threads cannot
    enter a user namespace (EINVAL): the one netns.py made before ncu started counts; as root, where ncu needs
    root's user, the layer is missing with that reason, not a thread count."""
    host, child = tmp_path / "host", tmp_path / "child"
    host.write_text("         0          0 4294967295\n")
    child.write_text("         0          0          1\n")
    assert not confine.in_child_user_namespace(str(host)) and confine.in_child_user_namespace(str(child))
    assert not confine.in_child_user_namespace(str(tmp_path / "none"))

    class Threads:  # unshare(user) in a process with threads
        def unshare(self, flags):
            import ctypes
            import errno
            ctypes.set_errno(errno.EINVAL)
            return -1

    monkeypatch.setattr(confine, "in_child_user_namespace", lambda: True)
    assert confine._namespaces(Threads(), network=False) == [("user namespace (made before the profiler started)", None)]
    monkeypatch.setattr(confine, "in_child_user_namespace", lambda: False)
    monkeypatch.setattr(confine.os, "geteuid", lambda: 0)
    [(name, why)] = confine._namespaces(Threads(), network=False)
    assert name == "user namespace" and "as root" in why and "counters" in why and "--unconfined" in why


def test_a_missing_layer_refuses_a_candidates_profile_but_not_the_tasks_own_pytorch_baseline():
    from kernel_tui.core.evaluator.models import WorkerRequest
    from kernel_tui.core.evaluator.worker import refusal

    task = load_task(FIXTURES / "vector_add")
    base = dict(task=task.spec.model_dump(mode="json", by_alias=True), reference_source=task.reference_source,
                candidate_source=task.baseline_source, device="cpu", profile=True)
    missing = SandboxReport(active=["no new privileges"], missing=[
        "user namespace: a profiled worker run as root keeps root's user"])
    why = refusal(WorkerRequest(**base), missing)
    assert why is not None and why.startswith("candidates would not be confined") and "--unconfined" in why
    assert refusal(WorkerRequest(**base, trusted=True), missing) is None
    assert refusal(WorkerRequest(**base, allow_unconfined=True), missing) is None
    assert refusal(WorkerRequest(**base), SandboxReport(active=["no new privileges"])) is None
