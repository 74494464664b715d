"""The device pool behind parallel suites: leases, job order, faulty devices leaving, and the pinned worker env.

Devices here are names; jobs record what ran where and when, so the pool's promises are checked directly
without a GPU.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kernel_tui.core import gpus
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.evaluator import evaluator as evaluator_module
from kernel_tui.core.evaluator.models import Status, WorkerResult
from kernel_tui.core.evaluator.runner import worker_env
from kernel_tui.core.gpus import DeviceFault, GpuError, GpuPool, PoolExhausted, gpu_of


class Tracker:
    """Counts jobs in flight, per device and in all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.total = self.most_total = 0
        self.calls: list[tuple[int, str]] = []

    def __call__(self, job: int, device: str, seconds: float = 0.03) -> tuple[int, str]:
        with self.lock:
            self.calls.append((job, device))
            self.now[device] = self.now.get(device, 0) + 1
            self.most[device] = max(self.most.get(device, 0), self.now[device])
            self.total += 1
            self.most_total = max(self.most_total, self.total)
        time.sleep(seconds)
        with self.lock:
            self.now[device] -= 1
            self.total -= 1
        return job * 10, device


def test_one_job_per_device_at_a_time_and_results_in_job_order():
    pool, track = GpuPool(["0", "1", "2"]), Tracker()
    outcomes = pool.run(list(range(12)), track)
    assert [o.value[0] for o in outcomes if o.value] == [j * 10 for j in range(12)]
    assert all(o.ok and o.device == o.value[1] for o in outcomes if o.value)
    assert set(track.most.values()) == {1}  # never two jobs on one device
    assert track.most_total == 3  # and every device busy at once
    assert pool.devices == ["0", "1", "2"] and pool.out == {}


def test_a_device_fault_requeues_the_job_and_the_device_leaves_with_its_reason():
    track = Tracker()

    def job(j: int, device: str):
        if device == "1":
            raise DeviceFault("Xid 79: GPU has fallen off the bus")
        return track(j, device)

    pool = GpuPool(["0", "1"])
    outcomes = pool.run(list(range(4)), job)
    assert [o.value for o in outcomes] == [(j * 10, "0") for j in range(4)]
    assert pool.out == {"1": "Xid 79: GPU has fallen off the bus"} and pool.devices == ["0"]


def test_a_failing_job_on_a_device_that_then_fails_its_health_check_runs_elsewhere():
    checked: list[str] = []

    def health(device: str) -> str | None:
        checked.append(device)
        return "a tiny CUDA op did not finish within 120 s" if device == "1" else None

    def job(j: int, device: str) -> str:
        if device == "1":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        time.sleep(0.02)
        return device

    pool = GpuPool(["0", "1"], health_check=health)
    outcomes = pool.run([0, 1, 2], job)
    assert [o.value for o in outcomes] == ["0", "0", "0"]
    assert pool.out == {"1": "a tiny CUDA op did not finish within 120 s"} and checked == ["1"]


def test_when_every_device_is_out_the_remaining_jobs_fail_with_one_clear_error():
    def job(j: int, device: str):
        raise DeviceFault(f"device {device} lost")

    pool = GpuPool(["0", "1"])
    outcomes = pool.run([0, 1, 2], job)
    assert all(isinstance(o.error, PoolExhausted) for o in outcomes)
    message = str(outcomes[2].error)
    assert message.startswith("every device has left the pool") and "GPU 0: device 0 lost" in message
    assert "GPU 1: device 1 lost" in message
    assert pool.devices == []
    with pytest.raises(PoolExhausted), pool.lease():
        pass


def test_an_ordinary_job_error_is_that_jobs_result_and_is_not_retried():
    calls: list[int] = []

    def job(j: int, device: str) -> int:
        calls.append(j)
        if j == 1:
            raise ValueError("the candidate's own bug")
        return j

    pool = GpuPool(["0", "1"], health_check=lambda device: None)
    outcomes = pool.run([0, 1, 2], job)
    assert [o.value for o in outcomes] == [0, None, 2]
    assert isinstance(outcomes[1].error, ValueError) and outcomes[1].device in ("0", "1")
    assert sorted(calls) == [0, 1, 2] and pool.out == {}


def test_a_lease_waits_for_a_free_device():
    pool = GpuPool(["0"])
    order: list[str] = []
    with pool.lease() as device:
        assert device == "0"

        def other() -> None:
            with pool.lease() as d:
                order.append(f"other got {d}")

        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.1)
        order.append("first released")
    t.join(5)
    assert order == ["first released", "other got 0"]


def test_detect_names_devices_and_falls_back_to_cpu_slots(monkeypatch):
    assert GpuPool.detect("0,2").devices == ["0", "2"]  # ids are taken as given: the health check judges them
    assert GpuPool.detect("3,").devices == ["3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # CUDA's own way to say: no GPU here
    assert gpus.visible_gpus() == []
    assert GpuPool.detect("all", cpu_slots=3).devices == ["cpu:0", "cpu:1", "cpu:2"]
    assert GpuPool.detect("2").devices == ["cpu:0", "cpu:1"]
    assert GpuPool.detect(None).devices == ["cpu:0"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6,7")
    assert GpuPool.detect("all").devices == ["4", "6", "7"]
    assert GpuPool.detect("2").devices == ["4", "6"]
    with pytest.raises(GpuError, match="only 3 GPU"):
        GpuPool.detect("5")
    with pytest.raises(GpuError, match="expected all, a count"):
        GpuPool.detect("some")
    with pytest.raises(GpuError, match="at least 1"):
        GpuPool.detect("0")
    assert [gpu_of(d) for d in ("cpu:1", "3")] == [None, "3"]  # a CPU slot pins nothing


def test_a_leased_gpu_reaches_the_workers_environment(vector_add, tmp_path, monkeypatch):
    assert worker_env(tmp_path, "cuda", tmp_path / "cache", gpu="1")["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert worker_env(tmp_path, "cuda", tmp_path / "cache")["CUDA_VISIBLE_DEVICES"] == "0,1,2"  # unpinned: as given
    seen: dict = {}

    def fake_run_judge(request, setups, folder: Path, **kw) -> WorkerResult:
        seen.update(kw)
        return WorkerResult(status=Status.runtime_error, reason="not run")

    monkeypatch.setattr(evaluator_module, "run_judge", fake_run_judge)
    ev = Evaluator(vector_add, device="cpu", gpu="1", fork_server=False)
    try:
        ev.check(vector_add.baseline_source, trusted=True)
    finally:
        ev.close()
    assert seen["gpu"] == "1"
    env = worker_env(tmp_path, "cpu", tmp_path / "cache", gpu=seen["gpu"])
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    assert gpus.visible_devices(env) == ["1"]  # one device: both sides of every paired block run on it
    assert gpus.visible_devices({}) is None and gpus.visible_devices({"CUDA_VISIBLE_DEVICES": "2,-1,3"}) == ["2"]


def test_the_health_check_reports_a_device_it_cannot_use(monkeypatch):
    monkeypatch.setattr(gpus, "_HEALTH_SOURCE", "raise SystemExit('no CUDA GPUs are available')")
    reason = gpus.cuda_health("5", timeout=60)
    assert reason is not None and reason.startswith("GPU 5 failed a tiny CUDA op") and "no CUDA GPUs" in reason
    monkeypatch.setattr(gpus, "_HEALTH_SOURCE", "import time; time.sleep(30)")
    assert gpus.cuda_health("5", timeout=0.5) == "GPU 5: a tiny CUDA op did not finish within 0.5 s"


def test_workers_on_one_gpu_are_named_in_one_line():
    from kernel_tui.core.gpus import shared_gpus

    assert shared_gpus({"tcp://a:1": "GPU-1", "tcp://b:2": "GPU-2", "tcp://c:3": None}) is None
    line = shared_gpus({"tcp://a:1": "GPU-1", "tcp://b:2": "GPU-1", "tcp://c:3": "GPU-2"})
    assert line is not None and "\n" not in line
    assert "tcp://a:1, tcp://b:2" in line and "GPU-1" in line and "CUDA_VISIBLE_DEVICES" in line


def test_a_worker_whose_gpu_failed_stops_offering_it():
    from distributed import Client, LocalCluster

    from kernel_tui.core.suite.distributed import leave_gpu_pool

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, resources={"GPU": 1},
                      dashboard_address=None) as cluster, Client(cluster) as client:
        def fail_here() -> None:
            from distributed import get_worker

            leave_gpu_pool(get_worker())

        client.submit(fail_here, resources={"GPU": 1}, pure=False).result(timeout=60)
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        assert [w["resources"].get("GPU") for w in workers] == [0]
