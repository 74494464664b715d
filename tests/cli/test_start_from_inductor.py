"""`kernel-tui start-from-inductor` end to end on the CPU: torch.compile (Inductor's Triton backend for the
CPU) compiles the task's reference in a child process, the rewrite makes a start, the interpreter checks it,
and only a correct start is installed; anything else leaves the task byte for byte as it was."""

from __future__ import annotations

import json
import shutil

from kernel_tui.cli import entry as cli
from kernel_tui.core import hardware
from kernel_tui.core.inductor import start as start_module
from kernel_tui.core.proposers.transforms import analyze
from kernel_tui.core.task import load_task
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "inductor"


def _task(tmp_path, name: str, old_start: str | None = None):
    task_dir = tmp_path / name
    shutil.copytree(DATA / name, task_dir)
    if old_start is not None:
        (task_dir / "baseline.py").write_text(old_start)
        raw = json.loads((task_dir / "task.json").read_text())
        raw["baseline"] = {"filename": "baseline.py", "language": "pytorch"}
        (task_dir / "task.json").write_text(json.dumps(raw))
    return task_dir


def _files(task_dir) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(task_dir.iterdir()) if p.is_file()}


def test_a_correct_start_is_installed_named_and_searchable_and_the_old_start_is_kept(tmp_path, capsys):
    task_dir = _task(tmp_path, "scale_leaky_relu", old_start="# the eager start\n")
    assert cli.main(["start-from-inductor", str(task_dir), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("started   scale_leaky_relu: torch.compile's kernels (Inductor, torch ")
    assert "correct on cpu" in out and "the rewrite's defaults" in out  # no autotuner on the CPU: said so
    task = load_task(task_dir)
    assert task.spec.baseline.language == "triton" and not task.baseline_is_pytorch
    assert task.spec.baseline.label.startswith("torch.compile's kernels (Inductor, torch ")
    assert (task_dir / start_module.KEPT_NAME).read_text() == "# the eager start\n"
    knobs = {k.kind for k in analyze(task.baseline_source).knobs.values()}
    assert {"block", "num_warps"} <= knobs  # the search starts at once: it has something to move


def test_an_op_left_to_a_library_keeps_the_task_as_it_was_in_one_line(tmp_path, capsys):
    task_dir = _task(tmp_path, "linear_relu", old_start="# the eager start\n")
    before = _files(task_dir)
    assert cli.main(["start-from-inductor", str(task_dir), "--device", "cpu"]) == 1
    out = capsys.readouterr().out.strip()
    assert out == "kept      linear_relu: extern call extern_kernels.addmm stays a library call: keep the eager start"
    assert _files(task_dir) == before


def test_a_start_the_check_finds_wrong_is_undone(tmp_path, capsys, monkeypatch):
    task_dir = _task(tmp_path, "scale_leaky_relu", old_start="# the eager start\n")
    before = _files(task_dir)
    real = start_module.rewrite

    def off_by_a_half(*args, **kwargs):
        source = real(*args, **kwargs)
        assert "tl.full([1], 2.0, tl.float32)" in source  # the reference's x * 2, as Inductor wrote it
        return source.replace("tl.full([1], 2.0, tl.float32)", "tl.full([1], 2.5, tl.float32)")

    monkeypatch.setattr(start_module, "rewrite", off_by_a_half)
    assert cli.main(["start-from-inductor", str(task_dir), "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("kept      scale_leaky_relu: the rewritten start is incorrect") and out.count("\n") == 1
    assert _files(task_dir) == before  # task.json, the old start, and no baseline.before-inductor.py


def test_a_task_too_big_for_the_device_memory_is_kept_before_any_compile(tmp_path, capsys, monkeypatch):
    """The memory plan refuses the task at once, as the check would, instead of after torch.compile's minute."""
    task_dir = _task(tmp_path, "scale_leaky_relu", old_start="# the eager start\n")
    before = _files(task_dir)
    monkeypatch.setattr(hardware, "host_free_bytes", lambda: 2**20)  # a device with 1 MiB free

    def no_compile(*args, **kwargs):
        raise AssertionError("torch.compile ran for a task that cannot fit")

    monkeypatch.setattr(start_module, "capture", no_compile)
    assert cli.main(["start-from-inductor", str(task_dir), "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("kept      scale_leaky_relu: shape small does not fit in device memory: one argument set "
                          "takes ") and out.rstrip().endswith("usable: keep the eager start")
    assert out.count("\n") == 1
    assert _files(task_dir) == before


def test_a_task_directory_without_a_task_is_bad_input(tmp_path, capsys):
    assert cli.main(["start-from-inductor", str(tmp_path), "--device", "cpu"]) == 2
    assert "no task.json" in capsys.readouterr().err


def test_an_imported_kernelbench_problem_starts_from_its_compiled_forward(tmp_path, capsys):
    """The import's reference builds its Model outside what is compiled (compile_target): a float attribute
    (the slope) is a constant and the parameter a launch argument; what Inductor wrote is kept on request."""
    out, kept = tmp_path / "leaky", tmp_path / "capture.json"
    problem = ROOT / "tests" / "data" / "kernelbench" / "leaky_slope.py"
    assert cli.main(["import", "kernelbench", str(problem), "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["start-from-inductor", str(out), "--device", "cpu", "--keep-capture", str(kept)]) == 0
    line = capsys.readouterr().out
    assert line.startswith("started   leaky: torch.compile's kernels (Inductor, torch "), line
    capture = json.loads(kept.read_text())
    assert set(capture["placeholders"]) >= {"x", "offset"} and "@triton.jit" in capture["code"]
    assert "def launch(x, offset, out, tokens, channels):" in (out / "baseline.py").read_text()
