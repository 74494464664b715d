from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from kernel_tui.cli import entry as cli
from kernel_tui.core.evaluator import evaluator as evaluator_module
from tests.conftest import FIXTURE_NAMES, FIXTURES, ROOT


def kt(*args: str, timeout: float = 600, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    # stdin is no terminal: a screen that opened on bad input would wait for a key until the timeout
    return subprocess.run([sys.executable, "-m", "kernel_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env, stdin=subprocess.DEVNULL)


def one_line_exit_2(out: subprocess.CompletedProcess, needle: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr


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
    assert "(36, 128)" in out.stdout  # the last element, which the mask never writes


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


def test_check_task_prints_the_memory_plan_and_refuses_what_cannot_fit(monkeypatch):
    out = kt("check-task", str(FIXTURES / "vector_add"), "--device", "cpu")
    assert out.returncode == 0, out.stdout + out.stderr
    (plan,) = [ln for ln in out.stdout.splitlines() if ln.startswith("memory ")]
    assert "shape small: up to" in plan and "input set(s)" in plan and "usable" in plan and "timing method auto" in plan
    monkeypatch.setenv("KERNEL_TUI_MEMORY_BUDGET", "1GiB")  # less than the room kept for the kernels
    refused = kt("check-task", str(FIXTURES / "vector_add"), "--device", "cpu")
    assert refused.returncode == 1
    assert refused.stdout.splitlines() == [refused.stdout.splitlines()[0]]  # one line, nothing run
    assert refused.stdout.startswith("memory    REFUSED: shape") and "does not fit in device memory" in refused.stdout
    monkeypatch.setenv("KERNEL_TUI_MEMORY_BUDGET", "lots")
    bad = kt("check-task", str(FIXTURES / "vector_add"), "--device", "cpu")
    assert bad.returncode != 0 and "not an amount of memory: 'lots'" in bad.stderr


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


# --- bad input is refused up front, before any worker, workspace or screen ------------------------------------
@pytest.fixture
def no_worker(monkeypatch):
    """Bad input must be refused before anything asks torch (in a child) or starts the screen."""
    def fail(*a, **k):
        raise AssertionError("got past the up-front checks")

    monkeypatch.setattr(evaluator_module, "cuda_available", fail)
    monkeypatch.setattr("kernel_tui.tui.app.run_tui", fail)


def run_main(capsys, *argv: str) -> tuple[int, list[str]]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    return code, out.err.strip().splitlines()


@pytest.mark.parametrize("missing, device, fix", [
    ("torch", "auto", "pip install torch"),
    ("triton", "cuda", "pip install '?triton"),  # quoted where torch pins its triton
    ("numpy", "cpu", "pip install numpy"),
])
@pytest.mark.parametrize("command", ["eval", "compare", "check-task", "run"])
def test_a_missing_package_is_named_up_front(monkeypatch, capsys, tmp_path, no_worker, missing, device, fix, command):
    monkeypatch.setitem(sys.modules, missing, None)  # what find_spec then reports: not installed
    d = FIXTURES / "vector_add"
    argv = {
        "eval": ["eval", "--task", str(d), "--candidate", str(d / "baseline.py")],
        "compare": ["compare", "--task", str(d), "--incumbent", str(d / "baseline.py"), "--candidate", str(d / "baseline.py")],
        "check-task": ["check-task", str(d)],
        "run": ["run", str(d), "--headless", "--workspace", str(tmp_path / "ws")],
    }[command]
    t0 = time.perf_counter()
    code, lines = run_main(capsys, *argv, "--device", device)
    assert time.perf_counter() - t0 < 1.0
    assert code == 2 and len(lines) == 1
    assert f"{missing} is not installed" in lines[0] and re.search(fix, lines[0])
    assert not (tmp_path / "ws").exists()


def test_device_cuda_without_a_gpu_is_bad_input(monkeypatch, capsys, tmp_path):
    asked = []
    monkeypatch.setattr(evaluator_module, "cuda_available", lambda: asked.append(1) or False)
    monkeypatch.setattr("kernel_tui.tui.app.run_tui", lambda *a, **k: pytest.fail("the screen opened"))
    d = FIXTURES / "vector_add"
    for argv in (["eval", "--task", str(d), "--candidate", str(d / "baseline.py")], ["check-task", str(d)],
                 ["compare", "--task", str(d), "--incumbent", str(d / "baseline.py"), "--candidate", str(d / "baseline.py")],
                 ["run", str(d), "--headless", "--workspace", str(tmp_path / "ws")],
                 ["run", str(d), "--workspace", str(tmp_path / "ws")]):
        code, lines = run_main(capsys, *argv, "--device", "cuda")
        assert code == 2 and len(lines) == 1 and "--device cuda" in lines[0] and "no CUDA GPU" in lines[0], argv
    assert len(asked) == 5
    assert not (tmp_path / "ws").exists()


def _workspace(path):
    from kernel_tui.core.workspace import Workspace

    return Workspace.create(FIXTURES / "vector_add", path=path)


@pytest.mark.parametrize("argv, code", [
    (["history", "{ws}"], cli.EXIT_BROKEN_PIPE),
    (["history", "{ws}", "--all", "--json"], cli.EXIT_BROKEN_PIPE),
    (["check-task", str(FIXTURES / "vector_add"), "--help"], 0),  # argparse drops what it cannot write
])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, argv, code):
    ws = _workspace(tmp_path / "ws")
    r, w = os.pipe()
    os.close(r)  # `| head -1` that has already exited: every write to stdout fails with EPIPE
    try:
        out = subprocess.run([sys.executable, "-m", "kernel_tui", *(a.format(ws=ws.root) for a in argv)],
                             stdout=w, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    finally:
        os.close(w)
    assert out.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" at exit
    assert out.returncode == code


@pytest.mark.parametrize("target, needle", [
    ("{tmp}/missing", "missing: no such directory"),
    ("{tmp}", "neither a task directory"),
    ("{tmp}/schema", "field correctness.atol"),
])
def test_the_screen_refuses_a_bad_target_before_it_opens(tmp_path, target, needle):
    (tmp_path / "schema").mkdir()
    data = json.loads((FIXTURES / "vector_add" / "task.json").read_text())
    data["correctness"]["atol"] = "loose"
    (tmp_path / "schema" / "task.json").write_text(json.dumps(data))
    out = kt(target.format(tmp=tmp_path), timeout=60)
    one_line_exit_2(out, needle)


@pytest.mark.parametrize("headless", [False, True])
def test_a_workspace_in_use_is_refused_before_the_screen_opens(tmp_path, headless):
    ws = _workspace(tmp_path / "ws")
    ws.lock()  # this process holds it, as another kernel-tui would
    try:
        out = kt("run", str(ws.root), *(["--headless"] if headless else []), timeout=60)
    finally:
        ws.unlock()
    one_line_exit_2(out, "in use by another kernel-tui process")


def _no_agent_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_AGENT_") and k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(tmp_path / "home")  # no agent.env of the machine running the tests
    env["PYTHONPATH"] = str(ROOT)  # this tree's kernel_tui, though the command runs elsewhere
    return env


@pytest.mark.parametrize("headless", [False, True])
@pytest.mark.parametrize("proposer, needle", [
    (["--proposer", "llm"], "no model configured"),
    (["--proposer", "replay"], "--proposer replay needs --candidates DIR"),
    (["--proposer", "replay", "--candidates", "nowhere"], "--candidates must be a directory"),
])
def test_an_unusable_proposer_is_refused_before_a_workspace_exists(tmp_path, headless, proposer, needle):
    out = kt("run", str(FIXTURES / "vector_add"), *proposer, *(["--headless"] if headless else []),
             cwd=tmp_path, env=_no_agent_env(tmp_path), timeout=60)
    one_line_exit_2(out, needle)
    assert not (tmp_path / "workspaces").exists()  # where the workspace would have been created


def test_readme_opens_with_its_title_and_says_where_make_puts_the_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# kernel-tui\n")
    assert ".venv/bin/kernel-tui" in text and "source .venv/bin/activate" in text


def test_eval_and_check_task_leave_no_temporary_folder(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    d = FIXTURES / "vector_add"
    assert kt("check-task", str(d), "--device", "cpu", env=env).returncode == 0
    assert kt("eval", "--task", str(d), "--candidate", str(d / "baseline.py"), "--device", "cpu", env=env).returncode == 0
    assert [p.name for p in temp.iterdir() if p.name.startswith("kernel-tui-eval-")] == []


def test_an_evaluator_removes_only_the_folder_it_made(tmp_path):
    from kernel_tui.core.evaluator import Evaluator
    from kernel_tui.core.task import load_task

    task = load_task(FIXTURES / "vector_add")
    own = Evaluator(task, device="cpu")
    given = Evaluator(task, device="cpu", workdir=tmp_path / "given")
    (tmp_path / "given").mkdir()
    assert own.workdir.is_dir() and own.workdir.name.startswith("kernel-tui-eval-")
    own.close()
    given.close()
    assert not own.workdir.exists() and (tmp_path / "given").is_dir()


@pytest.mark.parametrize("signum, code", [(2, 130), (15, 143)])
def test_a_stopped_headless_run_exits_as_the_shell_reports_its_signal(tmp_path, monkeypatch, capsys, signum, code):
    import signal
    from types import SimpleNamespace

    from kernel_tui.cli import headless

    def stopped_run(ws, **kw):
        signal.raise_signal(signum)  # the handler finishes the phase in flight: the run ends unfinished
        assert kw["cancel"].is_set()
        return None, []

    monkeypatch.setattr(headless, "run_headless", stopped_run)
    args = SimpleNamespace(target=str(FIXTURES / "vector_add"), workspace=str(tmp_path / "ws"), device="cpu",
                           proposer="search", max_steps=1, candidates=None, gpus=None)
    assert headless.run(args) == code
    assert "resume with: kernel-tui run" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["eval"], ["compare"], ["run"], ["history"], ["restore"], ["report"],
                                     ["check-task"], ["import", "kernelbench"], ["suite"]])
def test_every_subcommands_help_shows_an_example(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([*command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"kernel-tui {' '.join(command)} " in out.split("examples:")[1], out


def test_report_help_says_what_it_writes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    out = capsys.readouterr().out
    assert "report.md" in out and "rounds_overview.png" in out and "roofline.png" in out


def test_the_readme_synopsis_names_every_option_of_every_command():
    """The synopsis is where a user looks first: an option missing there (the suite's --device was) is hidden."""
    import argparse

    text = (ROOT / "README.md").read_text()
    block = text[text.index("kernel-tui run TASK_DIR_OR_WORKSPACE --headless"):]
    block = block[: block.index("```")]
    synopsis: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        m = re.match(r"kernel-tui (\S+)( kernelbench)?", line)
        if m:
            current = m.group(1) + (m.group(2) or "")
            synopsis[current] = line
        elif current:
            synopsis[current] += line

    def sub(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices

    commands = sub(cli.build_parser())
    assert set(synopsis) >= set(cli.COMMANDS) - {"import"} | {"import kernelbench"}
    for name, line in synopsis.items():
        words = name.split()
        parser = commands[words[0]] if len(words) == 1 else sub(commands[words[0]])[words[1]]
        options = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        assert [o for o in options if o not in line] == [], name
