"""The memory plan: sets sized from free memory, a smaller plan under a small budget, refusal of what
cannot fit, and out-of-memory blamed where it belongs (never the candidate's runtime_error when the
evaluator's own buffers ran out)."""

from __future__ import annotations

import json
import math

import pytest

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.evaluator import memory as mem
from kernel_tui.core.evaluator.models import EvalResult, Status
from kernel_tui.core.hardware import memory_plans
from kernel_tui.core.proposers.replay import ReplayProposer
from kernel_tui.core.session import Session
from kernel_tui.core.task import load_task
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES, ROOT

CANDIDATES = ROOT / "tests" / "candidates"

ADD_SOURCE = (FIXTURES / "vector_add" / "baseline.py").read_text()
TIMED = {"rows": 300, "cols": 300}  # the CPU's timing shape: no CPU correctness case runs it, all are smaller


def vector_add_spec():
    return load_task(FIXTURES / "vector_add").spec


def test_set_bytes_counts_the_truth_each_sides_buffers_the_poison_the_snapshot_and_two_answers():
    spec = vector_add_spec()
    n = 1000 * 1003
    fp16 = 2
    # inputs: the judge's and each side's; outputs: each side's, the poison's copy and the window's snapshot
    expected = 3 * (2 * n * fp16) + 4 * (n + 2 * mem.GUARD) * fp16 + 2 * n * fp16
    assert mem.set_bytes(spec, {"rows": 1000, "cols": 1003}) == expected
    assert mem.set_bytes(spec, {"rows": 1000, "cols": 1003}, stale=False) == expected - n * fp16
    one_side = 2 * (2 * n * fp16) + 2 * (n + 2 * mem.GUARD) * fp16 + 2 * n * fp16  # a set in one process
    assert mem.set_bytes(spec, {"rows": 1000, "cols": 1003}, sides=1) == one_side


def test_the_plan_takes_as_many_sets_as_fit_and_refuses_what_cannot():
    spec, dims = vector_add_spec(), {"rows": 4096, "cols": 2048}
    plenty = mem.plan(spec, "main", dims, free_bytes=140 * mem.GiB, l2_bytes=60 * 2**20)
    assert plenty.max_sets == mem.MAX_SETS and plenty.fits and not plenty.cold_anyway
    one = mem.set_bytes(spec, dims)
    overhead = plenty.workspace_bytes + plenty.scratch_bytes + plenty.flush_bytes
    tight = mem.plan(spec, "main", dims, free_bytes=math.ceil((overhead + 3.5 * one) / (1 - mem.HEADROOM)),
                     l2_bytes=60 * 2**20)
    assert tight.max_sets == 3 and tight.peak_bytes() <= tight.budget_bytes
    halved = mem.plan(spec, "main", dims, free_bytes=140 * mem.GiB, l2_bytes=60 * 2**20, level=1)
    assert halved.max_sets == 2  # the first retry: two sets at most, still rotating
    tight1 = mem.plan(spec, "main", dims, free_bytes=math.ceil((overhead + 1.5 * one) / (1 - mem.HEADROOM)),
                      l2_bytes=60 * 2**20, level=1)
    assert tight1.max_sets == 1  # and no more than fit
    smallest = mem.plan(spec, "main", dims, free_bytes=140 * mem.GiB, l2_bytes=60 * 2**20, level=mem.SMALLEST)
    assert (smallest.max_sets, smallest.stale) == (1, False)
    assert smallest.workspace_bytes == 2 * plenty.workspace_bytes
    none = mem.plan(spec, "main", dims, free_bytes=2 * mem.GiB, l2_bytes=60 * 2**20)
    assert not none.fits
    assert "does not fit in device memory" in none.refusal() and "usable" in none.refusal()


def test_no_retry_plan_needs_more_memory_than_the_first_and_a_refusal_adds_up():
    # 4 GiB tensors: twice the room for the kernels used to make the smallest plan 20 GiB larger than the first
    spec, dims = vector_add_spec(), {"rows": 65536, "cols": 32768}
    first_need = mem.plan(spec, "big", dims, free_bytes=2**50, l2_bytes=60 * 2**20).peak_bytes(1)
    for free in (first_need / (1 - mem.HEADROOM) * f for f in (1.0, 1.05, 1.2, 1.5, 3.0)):
        first = mem.plan(spec, "big", dims, free_bytes=math.ceil(free), l2_bytes=60 * 2**20)
        assert first.fits
        for level in (1, mem.SMALLEST):
            smaller = mem.plan(spec, "big", dims, free_bytes=math.ceil(free), l2_bytes=60 * 2**20, level=level)
            assert smaller.fits and smaller.peak_bytes(1) <= smaller.budget_bytes, (free, level)
    refused = mem.plan(spec, "big", dims, free_bytes=40 * mem.GiB, l2_bytes=60 * 2**20)
    parts = (refused.set_bytes, refused.workspace_bytes, refused.flush_bytes + refused.scratch_bytes)
    assert sum(parts) == refused.peak_bytes(1)
    assert all(mem.gib(p) in refused.refusal() for p in (*parts, refused.peak_bytes(1)))


def test_a_problem_whose_first_plan_cannot_fit_is_planned_smallest_instead_of_refused():
    # KernelBench's RMSNorm at its size, fp32 (7 GiB in, 7 GiB out): on an H200 the first plan needed 106.25 GiB
    # of 98.26 usable and the problem could not be measured at all. The same squeeze here with vector_add's
    # three 7 GiB tensors: the first plan needs 148 GiB, the smallest with one call's room for the kernels 120
    spec = vector_add_spec()
    spec = spec.model_copy(update={"tensors": [t.model_copy(update={"dtype": "float32"}) for t in spec.tensors]})
    dims = {"rows": 65536, "cols": 28672}  # 7 GiB per tensor in float32
    free = math.ceil(130 * mem.GiB / (1 - mem.HEADROOM))
    first = mem.plan(spec, "main", dims, free_bytes=free, l2_bytes=60 * 2**20)
    assert not first.fits
    got = mem.fitting_plan(spec, "main", dims, free_bytes=free, l2_bytes=60 * 2**20)
    assert got.fits and got.level == mem.SMALLEST and got.max_sets == 1 and not got.stale
    assert got.workspace_bytes >= got.call_bytes and got.peak_bytes(1) <= got.budget_bytes
    assert mem.fitting_plan(spec, "main", dims, free_bytes=2**50, l2_bytes=60 * 2**20).level == 0  # when it fits
    hopeless = mem.fitting_plan(spec, "main", dims, free_bytes=40 * mem.GiB, l2_bytes=60 * 2**20)
    assert not hopeless.fits and "does not fit" in hopeless.refusal()


def test_the_last_resort_keeps_less_free_only_for_a_first_plan_that_would_be_refused():
    # KernelBench's 4096 x 393216 elementwise problems: the smallest plan needs 73.25 GiB, and an H100 has about
    # 78 GiB free, 70.7 usable with a tenth kept free. Here vector_add's three 4 GiB fp16 tensors the same way.
    spec, dims = vector_add_spec(), {"rows": 65536, "cols": 32768}
    need = mem.plan(spec, "big", dims, free_bytes=2**50, l2_bytes=60 * 2**20, level=mem.SMALLEST)
    least = need.set_bytes + need.scratch_bytes + need.flush_bytes + need.call_bytes  # one call's room
    free = math.ceil((least + mem.LAST_RESORT_HEADROOM) * 1.02)  # fits beside 2 GiB kept free, not beside a tenth
    usual = mem.plan(spec, "big", dims, free_bytes=free, l2_bytes=60 * 2**20, level=mem.SMALLEST)
    assert not usual.fits
    got = mem.fitting_plan(spec, "big", dims, free_bytes=free, l2_bytes=60 * 2**20)
    assert got.fits and got.last_resort and got.level == mem.SMALLEST and got.max_sets == 1 and not got.stale
    assert got.budget_bytes == free - mem.LAST_RESORT_HEADROOM and got.peak_bytes(1) <= got.budget_bytes
    assert got.workspace_bytes >= got.call_bytes and "2.00 GiB kept free" in got.summary()
    # a retry after running out of memory never plans more than the plan before it: no last resort there
    retry = mem.fitting_plan(spec, "big", dims, free_bytes=free, l2_bytes=60 * 2**20, level=1)
    assert not retry.fits and not retry.last_resort
    # where the usual plans fit, they are taken; where not even the last resort fits, the refusal is the usual one
    assert not mem.fitting_plan(spec, "big", dims, free_bytes=2**50, l2_bytes=60 * 2**20).last_resort
    hopeless = mem.fitting_plan(spec, "big", dims, free_bytes=least, l2_bytes=60 * 2**20)
    assert not hopeless.fits and not hopeless.last_resort and hopeless.budget_bytes == int(least * (1 - mem.HEADROOM))


def test_an_integer_inputs_fill_fits_in_the_room_the_plan_keeps():
    # integers are drawn as int64 and converted: an int8 input briefly needs nine times its size
    spec = vector_add_spec()
    spec = spec.model_copy(update={"tensors": [t.model_copy(update={"dtype": "int8"}) if t.kind in ("input", "output")
                                               else t for t in spec.tensors]})
    dims = {"rows": 65536, "cols": 32768}  # 2 GiB per tensor
    p = mem.plan(spec, "big", dims, free_bytes=2**50, l2_bytes=0)
    assert mem.fill_bytes(spec, dims) == 9 * 65536 * 32768
    assert p.workspace_bytes + p.scratch_bytes >= mem.fill_bytes(spec, dims)


def test_a_call_many_times_the_l2_is_cold_anyway():
    spec = vector_add_spec()
    huge = mem.plan(spec, "main", {"rows": 65536, "cols": 32768}, free_bytes=140 * mem.GiB, l2_bytes=60 * 2**20)
    assert huge.cold_anyway and huge.call_bytes == 3 * 65536 * 32768 * 2


@pytest.mark.parametrize(("text", "value"), [("40GiB", 40 * 2**30), ("512 MiB", 512 * 2**20), ("1e9", 10**9),
                                             ("2gb", 2 * 10**9)])
def test_memory_amounts_parse(text, value):
    assert mem.parse_bytes(text) == value


def test_a_bad_memory_amount_is_one_line():
    with pytest.raises(KernelTuiError, match="not an amount of memory: '40 parsecs'"):
        mem.parse_bytes("40 parsecs")


def test_out_of_memory_errors_are_recognised_with_what_they_asked_for():
    cuda = RuntimeError("CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 139 GiB")
    cpu = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 35184372088832 bytes. Error code 12")
    assert mem.is_out_of_memory(cuda) and mem.requested_bytes(cuda) == 6 * mem.GiB
    assert mem.is_out_of_memory(cpu) and mem.requested_bytes(cpu) == 2**45
    out_of_resources = type("OutOfResources", (Exception,), {})("out of memory: shared memory")
    assert not mem.is_out_of_memory(out_of_resources)  # shared memory: a compile error, not this
    assert not mem.is_out_of_memory(RuntimeError("index out of range"))


# --- end to end on the CPU interpreter -------------------------------------------------------------

def task_with_timed_shape(tmp_path, reference_extra: str = ""):
    """vector_add, timed on the CPU at a shape that the CPU's correctness cases never run."""
    root = tmp_path / "task"
    root.mkdir()
    (root / "baseline.py").write_text(ADD_SOURCE)
    ref = (FIXTURES / "vector_add" / "reference.py").read_text()
    (root / "reference.py").write_text(ref.replace("    total = x.float()", reference_extra + "    total = x.float()"))
    data = json.loads((FIXTURES / "vector_add" / "task.json").read_text())
    data["correctness"]["shapes"].append({"name": "timed", "dims": TIMED})
    data["benchmark"]["interpreterShape"] = "timed"
    (root / "task.json").write_text(json.dumps(data))
    return load_task(root)


def budget_for_sets(task, sets: float) -> int:
    """A fake free memory that the CPU's timing shape plans exactly int(sets) sets in."""
    p = mem.plan(task.spec, "timed", TIMED, free_bytes=2**50, l2_bytes=0)
    need = p.workspace_bytes + p.scratch_bytes + p.flush_bytes + sets * p.set_bytes
    return math.ceil(need / (1 - mem.HEADROOM))


def test_a_small_fake_budget_forces_one_set_and_the_gate_still_decides(tmp_path):
    task = task_with_timed_shape(tmp_path)
    roomy = Evaluator(task, device="cpu")
    wide = roomy.evaluate(ADD_SOURCE)
    assert wide.status is Status.ok and wide.blocks[0].rotating_sets == 2
    small = Evaluator(task, device="cpu", memory_budget=budget_for_sets(task, 1.5))
    res = small.evaluate(ADD_SOURCE)
    assert res.status is Status.ok, res.reason
    assert res.verdict is not None and res.verdict.decision in ("accept", "reject")
    assert all(b.rotating_sets == 1 and b.memory is not None and b.memory.max_sets == 1 for b in res.blocks)
    assert res.memory_retries == [] and res.peak_memory_bytes is None  # no GPU: no device peak
    roomy.close()
    small.close()


def test_check_task_refuses_exactly_what_the_judge_would(tmp_path):
    # a budget where the first plan cannot hold one set and the smallest can: the judge times there, so
    # check-task's plans (memory_plans) must not say REFUSED
    task = task_with_timed_shape(tmp_path)
    step = 2**14
    gap = next(b for b in range(budget_for_sets(task, 0.5), budget_for_sets(task, 1.0) + 2**20, step)
               if not mem.plan(task.spec, "timed", TIMED, free_bytes=b, l2_bytes=0).fits
               and mem.fitting_plan(task.spec, "timed", TIMED, free_bytes=b, l2_bytes=0).fits)
    ev = Evaluator(task, device="cpu", memory_budget=gap)
    (timed,) = [p for p in memory_plans(ev) if p.shape == "timed"]
    assert timed.fits and timed.level == mem.SMALLEST
    ev.close()


def test_a_budget_below_one_set_is_refused_as_the_evaluators_fault(tmp_path):
    task = task_with_timed_shape(tmp_path)
    ev = Evaluator(task, device="cpu", memory_budget=budget_for_sets(task, 0.5))
    res = ev.evaluate(ADD_SOURCE)
    assert res.status is Status.evaluator_fault, res.reason
    assert "does not fit in device memory" in res.reason
    assert res.memory_retries == [] and ev.memory_level == 0  # no smaller plan can cure it: not retried
    ev.close()


def test_the_evaluators_own_out_of_memory_is_retried_smaller_and_never_the_candidates(tmp_path):
    # the reference (the evaluator's side) runs out of memory at the timing shape only
    oom = "    if x.numel() == 90000:\n        torch.empty(2**45, dtype=torch.uint8)\n"
    task = task_with_timed_shape(tmp_path, oom)
    ev = Evaluator(task, device="cpu")
    res = ev.evaluate(ADD_SOURCE)
    assert res.status is Status.evaluator_fault, res.reason
    assert res.status is not Status.runtime_error
    assert "the evaluator ran out of memory" in res.reason
    assert len(res.memory_retries) == mem.MAX_LEVEL and ev.memory_level == mem.MAX_LEVEL
    assert "retried with a smaller memory plan (level 1)" in res.memory_retries[0]
    ev.close()


def test_the_evaluators_out_of_memory_at_a_shape_only_correctness_runs_is_never_the_candidates(tmp_path):
    # the reference runs out of memory at the "large" correctness shape, which is never timed: the incumbent
    # in the candidate's place must meet it too (it is asked with the correctness checks as well)
    oom = "    if x.numel() == 257 * 263:\n        torch.empty(2**45, dtype=torch.uint8)\n"
    ev = Evaluator(task_with_timed_shape(tmp_path, oom), device="cpu")
    res = ev.evaluate(ADD_SOURCE + "\n# the same kernel, one comment more\n")
    assert res.status is Status.evaluator_fault, res.reason
    assert "the evaluator ran out of memory" in res.reason
    ev.close()


class RefusedRetry(Evaluator):
    """Scripted workers: the evaluator runs out of memory, its smaller plan is refused (less was free by
    then), and the incumbent in the candidate's place fits."""

    def _worker_once(self, candidate, incumbent, **kw):
        from kernel_tui.core.evaluator.models import WorkerResult

        self.calls = getattr(self, "calls", 0) + 1
        if candidate == incumbent:
            return WorkerResult(status=Status.ok, reason="")
        if self.calls == 1:
            return WorkerResult(status=Status.evaluator_fault, reason="the evaluator ran out of memory at shape main")
        return WorkerResult(status=Status.evaluator_fault, reason="shape main does not fit in device memory",
                            retry_smaller=False)


def test_a_refused_smaller_plan_keeps_the_fault_and_still_asks_whose_it_is(tmp_path):
    ev = RefusedRetry(load_task(FIXTURES / "vector_add"), device="cpu", workdir=tmp_path / "eval")
    res = ev._worker("candidate", "incumbent", correctness=True, timing=None, block=0, deadline=1e18, phase="t")
    assert res.status is Status.runtime_error and "not with the incumbent in its place" in res.reason
    assert "the smaller plan did not fit: shape main does not fit" in res.reason and ev.calls == 3
    ev.close()


HOARDER = """    if not _HOARD:  # takes every byte of address space it can, and keeps it between calls
        size = 1 << 40
        while size >= 4096:
            try:
                _HOARD.append(torch.empty(size, dtype=torch.uint8))
            except RuntimeError:
                size //= 2
        freed = 0
        while freed < 4 * 2**20:
            freed += _HOARD.pop().numel()
"""


def test_a_candidate_that_holds_its_memory_is_named_and_the_next_evaluation_is_whole(tmp_path):
    """Its address space is its own process's: it runs out of room for the buffers the judge shares with it,
    and says so; the judge's own memory never was the candidate's to take."""
    task = task_with_timed_shape(tmp_path)
    hoarder = ADD_SOURCE.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 256\n_HOARD: list = []", 1).replace(
        "    grid = (", HOARDER + "    grid = (", 1)
    ev = Evaluator(task, device="cpu")
    res = ev.evaluate(hoarder)
    assert res.status is Status.runtime_error, res.reason
    assert "it holds the memory they need" in res.reason and res.memory_retries == []
    again = ev.evaluate(ADD_SOURCE)
    assert again.status is Status.ok and again.blocks[0].rotating_sets == 2 and again.memory_retries == []
    ev.close()


@pytest.mark.parametrize("where", ["correctness", "timing"])
def test_a_candidate_that_asks_for_too_much_is_named(tmp_path, where):
    task = task_with_timed_shape(tmp_path)
    when = "True" if where == "correctness" else "n_elements == 90000"
    greedy = ADD_SOURCE.replace(
        "    grid = (", f"    if {when}:\n        torch.empty(2**45, dtype=torch.uint8)  # 32 TiB\n    grid = (", 1)
    ev = Evaluator(task, device="cpu")
    res = ev.evaluate(greedy)
    assert res.status is Status.runtime_error, res.reason
    assert "the candidate ran out of memory asking for 32768.00 GiB" in res.reason
    assert res.memory_retries == []  # the candidate's fault: nothing to retry
    ev.close()


# --- the session: an evaluator fault judges nothing --------------------------------------------------

class FaultsOnce(Evaluator):
    """An evaluator whose first evaluation ran out of memory for its own buffers, even at its smallest plan."""

    faults = 1

    def evaluate(self, candidate, incumbent=None, **kw):
        if self.faults:
            self.faults -= 1
            return EvalResult(status=Status.evaluator_fault, device=self.device,
                              reason="during timing: the evaluator ran out of memory with its own buffers")
        return super().evaluate(candidate, incumbent, **kw)


def test_an_evaluator_fault_leaves_the_round_pending_and_the_run_complete(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = FaultsOnce(ws.task, device="cpu", workdir=ws.root / ".work")
    events = []
    summary = Session(ws, ev, ReplayProposer(CANDIDATES / "vector_add"), max_steps=1, on_event=events.append).run()
    assert ws.trajectory() == []  # no verdict: nothing was learnt of the candidate
    (pending,) = ws.pending()
    assert pending[0] == 1
    assert summary is not None and summary.stopped_because.startswith("round 1 not judged: during timing")
    status = json.loads((ws.root / "agent-status.json").read_text())
    assert status["status"] == "complete_with_warning"  # the re-test ran: not incomplete because of it
    assert any("round 1 not judged" in w and "not the candidate's" in w for w in status["warnings"])
    assert any(e.kind == "idle" and "round 1 not judged" in e.text for e in events)
    # the run goes on: the pending round is judged, as the candidate it is
    Session(ws, ev, ReplayProposer(CANDIDATES / "vector_add"), max_steps=1).run()
    (line,) = ws.trajectory()
    assert line.round == 1 and line.commit == pending[1].hexsha and line.status == "ok"
