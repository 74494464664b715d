"""The roofline on two measured roofs: copy bandwidth and torch.matmul's peak in the task's dtype."""

from __future__ import annotations

import json
import shutil

import pytest

from kernel_tui.core import hardware, metrics
from kernel_tui.core.report import load_records, write_report
from kernel_tui.core.task import load_task
from tests.conftest import FIXTURES
from tests.core.report.test_report import assert_png, make_workspace

PEAKS = {"float16": 800e12, "bfloat16": 790e12, "float32": 50e12}


def test_without_a_peak_the_bytes_alone_make_the_floor():
    spec = load_task(FIXTURES / "vector_add").spec
    roof = metrics.roof(spec, {"copy_bandwidth_bytes_per_s": 4e12})
    place = roof.place(40e-6)
    assert place is not None and place.bound == "memory"
    assert place.fraction == pytest.approx(3 * 4096 * 2048 * 2 / 40e-6 / 4e12)
    assert metrics.roof(spec, {}).why == metrics.NO_BANDWIDTH and metrics.roof(spec, {}).place(1e-5) is None


def test_a_matmul_is_held_against_the_compute_roof_of_its_dtype():
    spec = load_task(FIXTURES / "matmul").spec
    assert metrics.compute_dtype(spec) == "float16"
    roof = metrics.roof(spec, {"copy_bandwidth_bytes_per_s": 4e12, "matmul_flops_per_s": PEAKS})
    flops, nbytes = spec.cost_at(spec.shape)
    assert roof.peak == 800e12 and roof.flops == flops and roof.intensity == pytest.approx(flops / nbytes)
    latency = 2 * flops / 800e12  # half the compute roof's speed
    place = roof.place(latency)
    assert place is not None and place.bound == "compute" and place.fraction == pytest.approx(0.5)
    assert place.flops_per_s == pytest.approx(400e12) and place.words == "compute-bound"
    # an elementwise task stays memory-bound with the compute roof known
    add = metrics.roof(load_task(FIXTURES / "vector_add").spec, {"copy_bandwidth_bytes_per_s": 4e12,
                                                                 "matmul_flops_per_s": PEAKS})
    assert add.place(40e-6).bound == "memory"  # type: ignore[union-attr]


def test_a_broken_peak_in_hardware_json_is_no_peak():
    assert metrics.matmul_peak({"matmul_flops_per_s": {"float16": "fast"}}, "float16") is None
    assert metrics.matmul_peak({"matmul_flops_per_s": [1, 2]}, "float16") is None
    assert metrics.matmul_peak(None, "float16") is None


def matmul_workspace(tmp_path, peaks):
    ws = make_workspace(tmp_path / "ws")
    shutil.copy(FIXTURES / "matmul" / "task.json", ws / "task.json")
    hw = {"copy_bandwidth_bytes_per_s": 4.0e12, **({"matmul_flops_per_s": peaks, "matmul_method": "torch.matmul"} if peaks else {})}
    (ws / "hardware.json").write_text(json.dumps(hw))
    return ws


def test_the_report_states_both_roofs_and_draws_every_version_under_them(tmp_path):
    ws = matmul_workspace(tmp_path, PEAKS)
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "measured matmul peak: float16 800.0 TFLOP/s" in md
    roofline_line = next(ln for ln in md.splitlines() if ln.startswith("- Roofline: "))
    assert "the longer of" in roofline_line and "compute-bound" in roofline_line
    assert "![roofline](roofline.png)" in md
    assert_png(ws / "roofline.png")
    roof = load_records(ws).roofline_inputs()
    assert roof.peak == 800e12 and roof.dtype == "float16"


def test_without_a_peak_the_report_says_bytes_alone(tmp_path):
    ws = matmul_workspace(tmp_path, None)
    write_report(ws)
    md = (ws / "report.md").read_text()
    assert "no matmul peak measured: bytes alone" in md
    assert_png(ws / "roofline.png")


def test_the_hardware_figures_keep_the_bandwidth_when_the_matmul_fails(monkeypatch):
    calls = []

    def child(code, device, timeout=120):
        calls.append(code)
        if "torch.matmul" in code or "a @ b" in code:
            raise ValueError("no JSON")
        return {"copy_bandwidth_bytes_per_s": 4.27e12}

    monkeypatch.setattr(hardware, "_child", child)
    data = hardware.measure(type("Ev", (), {"device": "cuda"})())  # type: ignore[arg-type]
    assert data["copy_bandwidth_bytes_per_s"] == 4.27e12 and "matmul peak not measured" in data["matmul_error"]
    assert len(calls) == 2


def test_the_screen_names_what_bounds_the_best_version():
    from types import SimpleNamespace

    from kernel_tui.tui import present

    spec = load_task(FIXTURES / "matmul").spec
    ws = SimpleNamespace(task=SimpleNamespace(spec=spec),
                         read_json=lambda name: {"copy_bandwidth_bytes_per_s": 4e12, "matmul_flops_per_s": PEAKS})
    flops = spec.cost_at(spec.shape)[0]
    assert present.roofline(ws, "cuda", 4 * flops / 800e12) == "25.0% of roofline, compute-bound"  # type: ignore[arg-type]
    assert present.roofline(ws, "cuda", None) == "roofline n/a (no latency yet)"  # type: ignore[arg-type]
    assert present.roofline(ws, "cpu", 1e-3) == "roofline n/a on the CPU interpreter"  # type: ignore[arg-type]


def test_the_agent_is_told_both_roofs_and_what_holds_the_incumbent_back(tmp_path):
    from types import SimpleNamespace

    from kernel_tui.core.proposers import prompt
    from kernel_tui.core.proposers.llm_tools import environment_facts
    from kernel_tui.core.workspace import Workspace

    ws = Workspace.create(FIXTURES / "matmul", path=tmp_path / "ws")
    (ws.root / "hardware.json").write_text(json.dumps({"copy_bandwidth_bytes_per_s": 4e12, "matmul_flops_per_s": PEAKS}))
    spec = ws.task.spec
    flops = spec.cost_at(spec.shape)[0]
    slow = 10 * flops / 800e12  # 10% of the compute roof: far below both roofs
    (ws.root / "baseline-evaluation.json").write_text(json.dumps({"status": "ok", "timing": {"candidate": [slow] * 3}}))
    facts = environment_facts(ws, SimpleNamespace(device="cuda"))  # type: ignore[arg-type]
    assert facts["matmul_peak_flops_per_s"] == 800e12 and facts["compute_roof_dtype"] == "float16"
    assert facts["roofline_floor_seconds"] == pytest.approx(flops / 800e12)
    assert facts["best_roofline_fraction"] == pytest.approx(0.1) and facts["best_bottleneck"] == "latency"
    text = prompt._roofline(facts)
    assert "float16 matmul peak 800 TFLOP/s" in text and "reaches 10.0% of that roofline: latency-bound" in text
    on_cpu = environment_facts(ws, SimpleNamespace(device="cpu"))  # type: ignore[arg-type]
    assert on_cpu["best_bottleneck"] is None and on_cpu["roofline_floor_seconds"] is None


def test_the_session_tells_the_proposer_what_bounds_the_incumbent(tmp_path):
    import threading

    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.proposers.base import Proposer
    from kernel_tui.core.records import ProposerInfo
    from kernel_tui.core.session import Session
    from kernel_tui.core.workspace import Workspace

    class Listens(Proposer):
        info = ProposerInfo(kind="replay", name="listens")

        def __init__(self):
            self.contexts = []

        def propose(self, context):
            self.contexts.append(context)
            return None

        def feedback(self, feedback):
            pass

        def state(self):
            return {}

        def restore(self, state):
            pass

    ws = Workspace.create(FIXTURES / "matmul", path=tmp_path / "ws")
    (ws.root / "hardware.json").write_text(json.dumps({"copy_bandwidth_bytes_per_s": 4e12, "matmul_flops_per_s": PEAKS}))
    flops = ws.task.spec.cost_at(ws.task.spec.shape)[0]
    near = 1.25 * flops / 800e12  # 80% of the compute roof
    (ws.root / "baseline-evaluation.json").write_text(json.dumps({"status": "ok", "timing": {"candidate": [near] * 3}}))
    ev = Evaluator(ws.task, device="cpu", workdir=ws.root / ".work")
    proposer = Listens()
    session = Session(ws, ev, proposer, max_steps=1, cancel=threading.Event())
    session.step()
    assert proposer.contexts[-1].bottleneck is None  # no roofline off a GPU
    ev.device = "cuda"
    session = Session(ws, ev, proposer, max_steps=1, cancel=threading.Event())
    session.step()
    assert proposer.contexts[-1].bottleneck == "compute"
    slow = 10 * flops / 800e12  # 10%: far below both roofs
    (ws.root / "baseline-evaluation.json").write_text(json.dumps({"status": "ok", "timing": {"candidate": [slow] * 3}}))
    assert session._bottleneck() == "latency"
