from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURE_NAMES, FIXTURES, ROOT


def kt(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernel_tui", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_eval_of_every_fixture_baseline_is_ok_on_cpu(name):
    d = FIXTURES / name
    out = kt("eval", "--task", str(d), "--candidate", str(d / "baseline.py"), "--device", "cpu", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "ok"
    assert result["reason"]
    assert result["timing_label"].startswith("CPU interpreter")
    verdict = result["verdict"]
    assert verdict is not None and {"accepted", "reason", "improvement", "ci_low", "ci_high", "p_value", "pairs", "blocks"} <= set(verdict)
    assert verdict["blocks"] >= 2 and verdict["pairs"] >= 5
    assert all(c["passed"] for c in result["cases"]) and len(result["cases"]) >= 4


def test_eval_human_output_labels_interpreter_timing():
    d = FIXTURES / "vector_add"
    bad = ROOT / "tests" / "adversarial" / "vector_add__off_by_one_mask.py"
    out = kt("eval", "--task", str(d), "--candidate", str(bad), "--device", "cpu")
    assert out.returncode == 1
    assert out.stdout.startswith("status   incorrect:")
    assert "NaN" in out.stdout


def test_compare_reports_speedup_and_paired_improvement_apart():
    d = FIXTURES / "vector_add"
    out = kt("compare", "--task", str(d), "--incumbent", str(d / "baseline.py"), "--candidate", str(d / "baseline.py"),
             "--runs", "2", "--device", "cpu", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "ok" and len(result["runs"]) == 2
    assert result["speedup"] > 0 and result["median_paired_improvement"] is not None
    assert result["timing_label"].startswith("CPU interpreter")


def test_check_task_validates_spec_reference_and_baseline():
    out = kt("check-task", str(FIXTURES / "softmax"), "--device", "cpu")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reference ok on cpu" in out.stdout and "baseline  ok" in out.stdout


def test_check_task_reports_a_broken_reference(tmp_path):
    for f in ("task.json", "baseline.py"):
        (tmp_path / f).write_text((FIXTURES / "vector_add" / f).read_text())
    (tmp_path / "reference.py").write_text("def reference(x, y, output, n_elements):\n    return x[:1]\n")
    out = kt("check-task", str(tmp_path), "--device", "cpu")
    assert out.returncode == 1
    assert "reference FAILED" in out.stdout and "shape" in out.stdout


@pytest.mark.parametrize(
    "make_args, needle",
    [
        (lambda t: ["eval", "--task", str(t / "missing"), "--candidate", "x.py"], "no such directory"),
        (lambda t: ["eval", "--task", str(t), "--candidate", "x.py"], "invalid JSON"),
        (lambda t: ["check-task", str(t / "schema")], "field correctness.atol"),
        (lambda t: ["eval", "--task", str(FIXTURES / "vector_add"), "--candidate", str(t)], "is a directory"),
        (lambda t: ["eval", "--task", str(FIXTURES / "vector_add"), "--candidate", str(t / "binary.py")], "cannot read candidate"),
        (lambda t: ["compare", "--task", str(FIXTURES / "vector_add"), "--incumbent", "a", "--candidate", "b", "--runs", "0"], "--runs"),
        (lambda t: ["eval", "--task"], "expected one argument"),
        (lambda t: ["eval", "--task", str(FIXTURES / "vector_add"), "--candidate", "c", "--device", "tpu"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(tmp_path, make_args, needle):
    (tmp_path / "task.json").write_text("{broken")
    (tmp_path / "schema").mkdir()
    data = json.loads((FIXTURES / "vector_add" / "task.json").read_text())
    data["correctness"]["atol"] = "loose"
    (tmp_path / "schema" / "task.json").write_text(json.dumps(data))
    (tmp_path / "binary.py").write_bytes(b"\xff\xfe\x00bad")
    out = kt(*make_args(tmp_path))
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr and needle in lines[0]


def test_core_imports_neither_textual_nor_torch():
    code = (
        "import sys, kernel_tui.cli, kernel_tui.core.task, kernel_tui.core.policy, kernel_tui.core.gate,"
        " kernel_tui.core.evaluator, kernel_tui.core.compare;"
        "bad = [m for m in ('textual', 'torch', 'triton') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_compare_no_policy_times_a_torch_reference_the_same_way():
    d = FIXTURES / "vector_add"
    torch_add = ROOT / "bench" / "candidates" / "vector_add_torch_add.py"
    refused = kt("compare", "--task", str(d), "--incumbent", str(d / "baseline.py"), "--candidate", str(torch_add),
                 "--runs", "1", "--device", "cpu", "--json")
    assert refused.returncode == 1 and json.loads(refused.stdout)["status"] == "policy_violation"
    timed = kt("compare", "--task", str(d), "--incumbent", str(d / "baseline.py"), "--candidate", str(torch_add),
               "--runs", "1", "--device", "cpu", "--json", "--no-policy")
    result = json.loads(timed.stdout)
    assert timed.returncode == 0 and result["status"] == "ok" and result["speedup"] > 0
