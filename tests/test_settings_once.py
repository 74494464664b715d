"""The agent's settings are read once, by the front end, and passed in (core/config.py): the engine never
loads them itself. Every load is recorded with the module that asked for it; each run here stops where its
rounds would begin, after the engine has opened the workspace and built the proposer and the Session."""

from __future__ import annotations

import shutil
import sys

import pytest

from kernel_tui.cli import entry as cli
from kernel_tui.core.config import AgentSettings
from kernel_tui.core.session import Session
from tests.conftest import FIXTURES

AGENT_VARIABLES = ("MODEL", "API_KEY", "API_BASE", "EXTRA_BODY", "MAX_STEPS", "TIMEOUT")


@pytest.fixture(autouse=True)
def no_agent_configuration(monkeypatch, tmp_path):
    """Neither the machine's KERNEL_AGENT_* variables nor its settings files."""
    for name in AGENT_VARIABLES:
        monkeypatch.delenv(f"KERNEL_AGENT_{name}", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The module of every caller of AgentSettings.load, in order."""
    callers: list[str] = []
    real = AgentSettings.load.__func__

    def load(cls, env_files=None):
        callers.append(sys._getframe(1).f_globals["__name__"])
        return real(cls, env_files)

    monkeypatch.setattr(AgentSettings, "load", classmethod(load))
    return callers


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The kind of proposer of every Session run; the run itself stops before the preflight."""
    kinds: list[str] = []

    def stop_before_the_rounds(self, control=None):
        kinds.append(self.proposer.info.kind)
        return None

    monkeypatch.setattr(Session, "run", stop_before_the_rounds)
    return kinds


@pytest.mark.parametrize("model, kind", [(None, "search"), ("openai/fake-model", "llm")])
def test_a_headless_run_loads_the_settings_once_in_the_front_end(tmp_path, monkeypatch, capsys, loads, built, model, kind):
    if model:
        monkeypatch.setenv("KERNEL_AGENT_MODEL", model)
    code = cli.main(["run", str(FIXTURES / "vector_add"), "--headless", "--device", "cpu", "--max-steps", "1",
                     "--workspace", str(tmp_path / "ws")])
    assert code == 1 and "stopped; resume with" in capsys.readouterr().out
    assert built == [kind]  # the default proposer, decided from the settings the command line passed in
    assert loads == ["kernel_tui.cli.run"]


def test_a_run_whose_proposer_needs_no_settings_loads_none(tmp_path, capsys, loads, built):
    """A broken settings file stops no run of the built-in search, as before the settings were passed in."""
    code = cli.main(["run", str(FIXTURES / "vector_add"), "--headless", "--device", "cpu", "--max-steps", "1",
                     "--workspace", str(tmp_path / "ws"), "--proposer", "search"])
    assert code == 1, capsys.readouterr()
    assert built == ["search"] and loads == []


def test_a_suite_loads_the_settings_once_for_all_its_tasks(tmp_path, monkeypatch, capsys, loads, built):
    monkeypatch.setenv("KERNEL_AGENT_MODEL", "openai/fake-model")
    for name in ("one", "two"):
        shutil.copytree(FIXTURES / "vector_add", tmp_path / "tasks" / name)
    code = cli.main(["suite", str(tmp_path / "tasks"), "--proposer", "llm", "--max-steps", "1", "--device", "cpu",
                     "--out", str(tmp_path / "out")])
    assert code == 1, capsys.readouterr()  # no task got as far as a kernel to score
    assert built == ["llm", "llm"]
    assert loads == ["kernel_tui.cli.suite"]


def test_the_screen_opens_with_the_settings_it_was_given(tmp_path, loads):
    from kernel_tui.tui.controller import Controller
    from kernel_tui.tui.options import RunOptions

    given = AgentSettings(model="openai/fake-model", _env_file=None)
    controller = Controller(RunOptions(target=FIXTURES / "vector_add", device="cpu", workspace=tmp_path / "ws",
                                       settings=given), lambda message: None)
    controller._open()
    try:
        assert controller.proposer is not None and controller.proposer.info.kind == "llm"
    finally:
        controller._close()
    assert loads == []


def test_the_screen_without_them_loads_them_once_itself(tmp_path, loads):
    """`create_app` with no settings (a picker's target, the tests): the screen, a front end, loads them once."""
    from kernel_tui.tui.options import RunOptions

    options = RunOptions(target=None)
    first, again = options.agent_settings(None), options.agent_settings(None)
    assert first is again is not None and not first.is_configured
    assert loads == ["kernel_tui.tui.options"]
