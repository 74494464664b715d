"""The agent proposer against a scripted OpenAI-compatible server, through the real litellm client.

No network and no real key: the server is tests/support/fake_llm_server.py on 127.0.0.1, the key a random
`sk-test-…` token that must be found in the Authorization header and nowhere in the workspace.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

from kernel_tui.core.config import AgentSettings
from kernel_tui.core.decision import AutoApprove
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.proposers.base import Feedback, ProposerContext
from kernel_tui.core.proposers.llm import MESSAGES_FILE, TOOL_CALLS_FILE, AgentError, LLMProposer
from kernel_tui.core.proposers.llm_tools import (
    ARGUMENTS,
    TOOL_NAMES,
    TOOLS,
    ToolArgumentError,
    parse_arguments,
    verdict_result,
)
from kernel_tui.core.proposers.prompt import NUDGE
from kernel_tui.core.records import TrajectoryLine
from kernel_tui.core.session import Session
from kernel_tui.core.workspace import Workspace
from tests.conftest import FIXTURES, ROOT
from tests.support.fake_llm_server import FakeLLMServer, error, reply, tool_call

BASELINE = (FIXTURES / "vector_add" / "baseline.py").read_text()
GOOD = BASELINE.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 1024")
FORBIDDEN = BASELINE.replace(
    "    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)\n",
    "    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)\n"
    "    torch.add(x, y, out=output)\n",
)
ENV_NAMES = ("MODEL", "API_KEY", "API_BASE", "EXTRA_BODY", "MAX_STEPS", "TIMEOUT")


@pytest.fixture
def key() -> str:
    return "sk-test-" + secrets.token_hex(16)


@pytest.fixture(autouse=True)
def no_agent_variables(monkeypatch):
    """No KERNEL_AGENT_* variables of the machine running the tests."""
    for name in ENV_NAMES:
        monkeypatch.delenv(f"KERNEL_AGENT_{name}", raising=False)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No agent settings files either: an empty HOME and config directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return tmp_path / "home"


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def settings_for(srv: FakeLLMServer, key: str, **kw) -> AgentSettings:
    return AgentSettings(model="openai/fake-model", api_base=srv.url, api_key=key, _env_file=None, **kw)


def context(ws: Workspace) -> ProposerContext:
    return ProposerContext(round=ws.next_round(), best_source=ws.best_source,
                           baseline_source=ws.task.baseline_source, history=ws.trajectory())


def tool_messages(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_secret_absent(root: Path, secret: str) -> None:
    needle = secret.encode()
    checked = 0
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        assert needle not in data, f"the API key is in {path}"
        if ".git/objects/" in path.as_posix() and "/pack/" not in path.as_posix():
            try:
                data = zlib.decompress(data)
            except zlib.error:
                continue
            assert needle not in data, f"the API key is in git object {path}"
        checked += 1
    assert checked > 10
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root,
                             capture_output=True, check=True).stdout
    assert objects and needle not in objects


# --- the whole loop ---------------------------------------------------------------------------


def test_headless_run_reads_submits_survives_faults_and_finishes(tmp_path, server, key):
    good = tool_call("submit_candidate", {"source": GOOD, "change": "Block size 256 -> 1024: a quarter of the programs"})
    malformed = tool_call("submit_candidate", '{"source": 42}')
    check = tool_call("compile_candidate", {"source": FORBIDDEN})
    forbidden = tool_call("submit_candidate", {"source": FORBIDDEN, "change": "Let torch add it"})
    finish = tool_call("finish", {"summary": "1024 per block; torch.add is not allowed"})
    read = tool_call("read_best", {})
    server.add(
        reply(read), error(429, "slow down"), reply(good), reply(malformed), error(500, "upstream hiccup"),
        reply(check), reply(forbidden), reply(finish),
    )
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    ev = Evaluator(ws.task, device="cpu", workdir=ws.root / ".work")
    activity: list[str] = []
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.01, on_activity=activity.append)
    events = []
    summary = Session(ws, ev, proposer, AutoApprove(), max_steps=4, cancel=threading.Event(),
                      on_event=events.append).run()
    assert summary is not None and summary.stopped_because == "proposer finished"

    # the verdicts, through the Session
    lines = [json.loads(x) for x in (ws.root / "trajectory.jsonl").read_text().splitlines()]
    assert [ln["status"] for ln in lines] == ["ok", "policy_violation"]
    assert isinstance(lines[0]["accepted"], bool) and not lines[1]["accepted"]
    assert "torch-compute" in lines[1]["reason"] and "torch.add" in lines[1]["reason"]
    assert lines[0]["change"] == "Block size 256 -> 1024: a quarter of the programs"
    assert lines[0]["proposer"] == {"kind": "llm", "name": "agent", "model": "openai/fake-model", "email": None}
    assert ws.repo.commit(lines[0]["commit"]).author.name == "openai/fake-model"
    assert ws.source_at(ws.repo.commit(lines[0]["commit"])) == GOOD

    # what the server saw: every scripted entry used, one retry each for the 429 and the 500
    assert server.script == []
    assert len(server.requests) == 8
    assert all(h["authorization"] == f"Bearer {key}" for h in server.headers)
    assert all(r["model"] == "fake-model" and r["parallel_tool_calls"] is False for r in server.requests)
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} == set(TOOL_NAMES)
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system" and "vector-add" in system["content"]
    assert "total = x.float() + y.float()" in system["content"]  # the reference source
    assert "1.0%" in system["content"] and "torch-compute" in system["content"]
    assert server.requests[2] == server.requests[1]  # the 429 was retried with the same request
    answered = tool_messages(server.requests[3])  # after the good submission's verdict
    verdict = json.loads(answered[good["id"]])
    assert verdict["status"] == "ok" and verdict["accepted"] == lines[0]["accepted"]
    assert verdict["reason"] == lines[0]["reason"] and verdict["round"] == 1
    answered = tool_messages(server.requests[4])  # the malformed call's error, before the 500
    assert answered[malformed["id"]].startswith("error: submit_candidate:")
    assert "'source'" in answered[malformed["id"]] and "'change'" in answered[malformed["id"]]
    assert server.requests[5] == server.requests[4]
    checked = json.loads(tool_messages(server.requests[6])[check["id"]])
    assert checked["status"] == "policy_violation" and checked["policy_rule"] == "torch-compute"
    answered = tool_messages(server.requests[7])
    assert json.loads(answered[forbidden["id"]])["status"] == "policy_violation"
    assert lines[1]["reason"] in answered[forbidden["id"]]

    # the records: the conversation exactly as the model saw it, the tool calls with full results
    messages = read_jsonl(ws.root / MESSAGES_FILE)
    last = server.requests[-1]["messages"]
    assert messages[: len(last)] == last
    assert messages[len(last):] == [
        {"role": "assistant", "tool_calls": [finish]},
        {"role": "tool", "tool_call_id": finish["id"], "content": "finished: no more rounds will be proposed"},
    ]
    calls = read_jsonl(ws.root / TOOL_CALLS_FILE)
    assert [c["name"] for c in calls] == ["read_best", "submit_candidate", "submit_candidate",
                                          "compile_candidate", "submit_candidate", "finish"]
    assert BASELINE in calls[0]["result"]  # untruncated
    assert calls[1]["arguments"]["source"] == GOOD and json.loads(calls[1]["result"])["reason"] == lines[0]["reason"]
    assert calls[2]["error"] and calls[2]["arguments"] == '{"source": 42}'
    assert calls[4]["arguments"]["source"] == FORBIDDEN
    saved = json.loads((ws.root / "session.json").read_text())["proposer"]
    assert saved["kind"] == "llm" and saved["finished"] and saved["steps"] == 6 and saved["pending"] is None
    assert any("retrying" in a for a in activity)

    # the key: used in the requests, written nowhere, shown in no event
    assert key not in repr(proposer.settings) and key not in str(proposer.state())
    assert not any(key in (e.text or "") for e in events) and not any(key in a for a in activity)
    assert_secret_absent(ws.root, key)


# --- the conversation, one call at a time -----------------------------------------------------


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace.create(FIXTURES / "vector_add", path=tmp_path / "ws")
    return ws, Evaluator(ws.task, device="cpu", workdir=ws.root / ".work")


def test_a_reply_without_a_tool_call_is_nudged_and_counted(workspace, server, key):
    ws, ev = workspace
    server.add(reply(content="I would raise the block size."), reply(tool_call("finish", {"summary": "done"})))
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    assert proposer.propose(context(ws)) is None
    assert len(server.requests) == 2 and proposer.steps == 2 and proposer.summary == "done"
    sent = server.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "I would raise the block size."}
    assert sent[-1] == {"role": "user", "content": NUDGE}


def test_the_step_budget_ends_the_conversation(workspace, server, key):
    ws, ev = workspace
    server.add(reply(tool_call("read_best", {})), reply(tool_call("get_history", {"limit": 3})),
               reply(tool_call("get_environment", {})))
    proposer = LLMProposer(ws, ev, settings_for(server, key, max_steps=2), retry_base_delay=0.0)
    assert proposer.propose(context(ws)) is None
    assert len(server.requests) == 2 and proposer.steps == 2 and not proposer.finished
    assert "step budget spent" in proposer.state()["stopped_because"]
    assert proposer.propose(context(ws)) is None and len(server.requests) == 2  # and stays spent
    history = json.loads(read_jsonl(ws.root / TOOL_CALLS_FILE)[1]["result"])
    assert history["rounds_total"] == 0 and history["history"] == []


def test_a_submission_resumes_from_the_records_after_a_restart(workspace, server, key):
    ws, ev = workspace
    submit = tool_call("submit_candidate", {"source": GOOD, "change": "bigger blocks"})
    server.add(reply(submit))
    first = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    proposal = first.propose(context(ws))
    assert proposal is not None and proposal.source == GOOD and proposal.change == "bigger blocks"
    assert proposal.proposer.kind == "llm" and proposal.proposer.model == "openai/fake-model"
    state = json.loads(json.dumps(first.state()))  # as session.json keeps it

    # a new process: the same proposal again if the round was never made, else its outcome
    again = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    again.restore(state)
    assert again.steps == 1 and again.propose(context(ws)) == proposal and len(server.requests) == 1
    again.feedback(Feedback(round=1, status="rejected_by_person", accepted=False, reason="try 512 first",
                            rejected_by_person=True))
    server.add(reply(tool_call("finish", {"summary": "stopped"})))
    resumed = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    resumed.restore(json.loads(json.dumps(again.state())))
    assert resumed.propose(context(ws)) is None
    answer = json.loads(tool_messages(server.requests[1])[submit["id"]])
    assert answer["outcome"] == "rejected_by_person" and answer["reason"] == "try 512 first"
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]  # one conversation, rebuilt, not restarted


def submitted(ws: Workspace, ev: Evaluator, server: FakeLLMServer, key: str) -> tuple[LLMProposer, dict]:
    """A proposer that has submitted GOOD for round 1 ("bigger blocks"); the model then finishes."""
    submit = tool_call("submit_candidate", {"source": GOOD, "change": "bigger blocks"})
    server.add(reply(submit), reply(tool_call("finish", {"summary": "done"})))
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    assert proposer.propose(context(ws)) is not None
    return proposer, submit


def test_a_verdict_recorded_but_never_fed_back_is_read_from_the_trajectory(workspace, server, key):
    ws, ev = workspace
    proposer, submit = submitted(ws, ev, server, key)
    line = TrajectoryLine(round=1, change="bigger blocks", proposer=proposer.info, commit=ws.best.hexsha,
                          status="incorrect", reason="max abs error 0.5 at small/17", accepted=False)
    ctx = ProposerContext(round=2, best_source=ws.best_source, baseline_source=BASELINE, history=[line])
    restored = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    restored.restore(json.loads(json.dumps(proposer.state())))  # killed before feedback() was saved
    assert restored.propose(ctx) is None
    answer = json.loads(tool_messages(server.requests[1])[submit["id"]])
    assert answer["status"] == "incorrect" and answer["reason"] == line.reason


def test_api_failures_are_retried_a_bounded_number_of_times(workspace, server, key):
    ws, ev = workspace
    server.add(*[error(503, f"overloaded, key {key}") for _ in range(4)])
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0, max_tries=4)
    with pytest.raises(AgentError) as failed:
        proposer.propose(context(ws))
    assert len(server.requests) == 4 and "4 times" in str(failed.value) and key not in str(failed.value)
    server.add(error(401, "invalid api key"))
    with pytest.raises(AgentError, match="refused"):
        proposer.propose(context(ws))
    assert len(server.requests) == 5  # an auth error is not retried
    assert proposer.steps == 0


def test_malformed_tool_calls_become_messages_the_model_can_act_on():
    with pytest.raises(ToolArgumentError, match="unknown tool 'run_shell'"):
        parse_arguments("run_shell", "{}")
    with pytest.raises(ToolArgumentError, match="not valid JSON"):
        parse_arguments("compile_candidate", '{"source": ')
    with pytest.raises(ToolArgumentError, match="'change'"):
        parse_arguments("submit_candidate", {"source": "x"})
    with pytest.raises(ToolArgumentError, match="'limit'"):
        parse_arguments("get_history", '{"limit": "many"}')
    with pytest.raises(ToolArgumentError, match="one JSON object"):
        parse_arguments("finish", "[1, 2]")
    assert parse_arguments("get_history", "").limit == 10  # type: ignore[attr-defined]
    assert parse_arguments("read_best", "").model_dump() == {}


def test_tool_schemas_carry_every_constraint_and_description_of_the_argument_models():
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    assert set(schemas) == set(TOOL_NAMES)
    for name, model in ARGUMENTS.items():
        schema, own = schemas[name], model.model_json_schema()
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema["required"] == own.get("required", [])
        assert set(schema["properties"]) == set(model.model_fields)
        for field, prop in own["properties"].items():
            prop = {k: v for k, v in prop.items() if k != "title"}
            assert schema["properties"][field] == prop, (name, field)
            assert prop["description"]
    limit = schemas["get_history"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 200, 10)  # the model learns limit <= 200
    assert schemas["submit_candidate"]["properties"]["change"]["minLength"] == 1
    json.dumps(TOOLS)


def test_the_verdict_text_carries_the_persons_edit():
    fb = Feedback(round=3, status="ok", accepted=True, reason="accepted: +5%", improvement=0.05,
                  edited_source="EDITED")
    data = json.loads(verdict_result(fb, "ORIGINAL"))
    assert data["edited_by_person"] and data["evaluated_source"] == "EDITED" and data["accepted"]
    assert "edited_by_person" not in json.loads(verdict_result(fb.model_copy(update={"edited_source": "ORIGINAL"}), "ORIGINAL"))


# --- settings ---------------------------------------------------------------------------------


def test_settings_precedence_environment_then_project_file_then_compat_file(clean_env, monkeypatch, key):
    compat = clean_env / ".config" / "hello-gpu" / "kernel-agent.env"
    compat.parent.mkdir(parents=True)
    compat.write_text(f"KERNEL_AGENT_MODEL=openai/compat\nKERNEL_AGENT_API_BASE=http://compat/v1\n"
                      f"KERNEL_AGENT_API_KEY={key}\nKERNEL_AGENT_MAX_STEPS=7\n")
    assert AgentSettings().model == "openai/compat"
    xdg = clean_env / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    project = xdg / "kernel-tui" / "agent.env"
    project.parent.mkdir(parents=True)
    project.write_text("KERNEL_AGENT_MODEL=openai/project\nKERNEL_AGENT_MAX_STEPS=9\nKERNEL_AGENT_EXTRA_BODY={}\n")
    s = AgentSettings.load()
    assert (s.model, s.api_base, s.max_steps, s.extra_body) == ("openai/project", "http://compat/v1", 9, {})
    assert s.api_key is not None and s.api_key.get_secret_value() == key and s.is_configured
    monkeypatch.setenv("KERNEL_AGENT_MAX_STEPS", "11")
    monkeypatch.setenv("KERNEL_AGENT_EXTRA_BODY", '{"parallel_tool_calls": true, "temperature": 0.2}')
    s = AgentSettings()
    assert s.max_steps == 11 and s.extra_body == {"parallel_tool_calls": True, "temperature": 0.2}
    for shown in (repr(s), str(s), s.model_dump_json(), str(s.model_dump())):
        assert key not in shown


def test_settings_defaults_and_bad_values(clean_env, monkeypatch):
    s = AgentSettings()
    assert not s.is_configured and s.model is None and s.api_key is None
    assert s.extra_body == {"parallel_tool_calls": False} and s.max_steps == 25
    monkeypatch.setenv("KERNEL_AGENT_EXTRA_BODY", "[1, 2]")
    with pytest.raises(KernelTuiError, match="EXTRA_BODY"):
        AgentSettings.load()
    monkeypatch.delenv("KERNEL_AGENT_EXTRA_BODY")
    with pytest.raises(AgentError, match="KERNEL_AGENT_MODEL"):
        LLMProposer(None, None, AgentSettings())  # type: ignore[arg-type]


def test_an_empty_extra_body_sends_nothing_extra(workspace, server, key):
    ws, ev = workspace
    server.add(reply(tool_call("finish", {"summary": "ok"})))
    proposer = LLMProposer(ws, ev, settings_for(server, key, extra_body={}), retry_base_delay=0.0)
    assert proposer.propose(context(ws)) is None
    assert set(server.requests[0]) == {"model", "messages", "tools"}


def test_importing_the_proposer_does_not_import_litellm():
    code = ("import sys, kernel_tui.core.proposers.llm, kernel_tui.core.config; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'textual', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_agent_is_told_the_rules_the_policy_and_the_sandbox_enforce():
    import re

    from kernel_tui.core import policy
    from kernel_tui.core.proposers.prompt import _policy

    told = _policy()
    rules = set(re.findall(r'self\.add\(\s*"([a-z-]+)"', (ROOT / "kernel_tui/core/policy/checker.py").read_text()))
    assert {"attribute-not-allowed", "module-alias", "introspection"} <= rules
    assert {"attribute-not-allowed", "module-alias", "introspection", "torch-compute"} <= {r for r in rules if r in told}
    assert "sandbox_violation" in told and all(name in told for name in policy.ALLOWED_IMPORTS - {"__future__"})


# --- what the agent hears of others, and the profile tool ------------------------------------------


def test_the_agent_hears_of_a_round_it_did_not_make_and_of_the_incumbent_it_moved(workspace, server, key):
    from kernel_tui.core.records import ProposerInfo

    ws, ev = workspace
    proposer, _ = submitted(ws, ev, server, key)
    proposer.feedback(Feedback(round=1, status="ok", accepted=False, reason="not faster: +0.1%"))
    # the person's own candidate, round 2, is accepted while the agent waits
    ada = ProposerInfo(kind="person", name="Ada")
    mine = ws.commit_proposal(2, GOOD.replace("1024", "2048"), "Ada: block 2048", ada)
    ws.record_verdict(TrajectoryLine(round=2, change="Ada: block 2048", proposer=ada, commit=mine.hexsha,
                                     status="ok", reason="accepted: +9.0%", accepted=True, latency=9e-6))
    ws.accept(mine)
    ws.record_verdict(TrajectoryLine(round=1, change="bigger blocks", proposer=proposer.info, commit=ws.baseline.hexsha,
                                     status="ok", reason="not faster: +0.1%", accepted=False))
    assert proposer.propose(context(ws)) is None
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    news = sent[-1]["content"]
    assert "round 2, by person Ada: Ada: block 2048 — accepted: accepted: +9.0%" in news
    assert f"the incumbent is now round 2 (commit {mine.hexsha[:12]}, median latency 9e-06 s)" in news
    assert "round 1" not in news  # its own round came back as the submission's answer
    again = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    again.restore(json.loads(json.dumps(proposer.state())))
    assert (again.told_through, again.known_best) == (2, mine.hexsha)  # heard once, not again after a restart


def test_a_tool_call_a_stop_cut_short_is_asked_again_not_answered(workspace, server, key):
    ws, ev = workspace
    check = tool_call("compile_candidate", {"source": GOOD})
    server.add(reply(check))
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    real = proposer._run_tool

    def stopped_meanwhile(name, args):
        ev.cancel.set()  # the person quits while the check runs
        return real(name, args)

    proposer._run_tool = stopped_meanwhile  # type: ignore[method-assign]
    assert proposer.propose(context(ws)) is None
    assert proposer.messages[-1]["role"] == "assistant" and proposer.queue == [check]
    resumed = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    assert resumed.queue == [check]  # rebuilt from the conversation on disk: still to be answered


def test_profile_candidate_profiles_a_round_or_the_incumbent_and_says_what_is_wrong(workspace, server, key):
    ws, ev = workspace
    incumbent = tool_call("profile_candidate", {})
    missing = tool_call("profile_candidate", {"round": 9})
    both = tool_call("profile_candidate", {"source": GOOD, "round": 1})
    server.add(reply(incumbent), reply(missing), reply(both), reply(tool_call("finish", {"summary": "done"})))
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    assert proposer.propose(context(ws)) is None
    answers = tool_messages(server.requests[-1])
    # on the CPU: why there is no profile, as an answer (not an error)
    assert json.loads(answers[incumbent["id"]]) == {"status": "unavailable", "reason": json.loads(
        answers[incumbent["id"]])["reason"]} and "GPU" in answers[incumbent["id"]]
    assert answers[missing["id"]] == "error: profile_candidate failed: ValueError: no round 9 yet"
    assert "give a source or a round, not both" in answers[both["id"]]
    assert 'call it again like {"round": 3}' in answers[both["id"]]


def test_every_tool_is_named_where_the_agent_is_told_how_to_work(workspace):
    from kernel_tui.core.proposers.prompt import system_prompt

    ws, ev = workspace
    prompt = system_prompt(ws, ev, max_steps=5)
    how = prompt[prompt.index("# How to work"):]
    assert [name for name in TOOL_NAMES if name not in how] == []
    assert [name for name in TOOL_NAMES if name not in NUDGE] == []


def test_the_agent_reads_a_restored_incumbents_latency(workspace):
    from kernel_tui.core.proposers import facts, llm_tools
    from kernel_tui.core.records import ProposerInfo

    ws, ev = workspace
    search = ProposerInfo(kind="search", name="built-in search")
    c1 = ws.commit_proposal(1, GOOD, "bigger blocks", search)
    ws.record_verdict(TrajectoryLine(round=1, change="bigger blocks", proposer=search, commit=c1.hexsha, status="ok",
                                     reason="accepted", accepted=True, latency=8e-6))
    ws.accept(c1)
    ws.restore(ws.baseline.hexsha, ProposerInfo(kind="person", name="Ada"))
    ws.restore(c1.hexsha, ProposerInfo(kind="person", name="Ada"))  # round 1 again, as a new commit
    assert facts.best_latency(ws) == 8e-6
    text = llm_tools.read_best(ws)
    assert "(round 1, restored from" in text and "median latency: 8e-06 s" in text


def test_an_accepted_verdict_carries_its_profile_to_the_agent():
    lines = ["profile at shape main: DRAM-bound", "DRAM throughput 88% of peak"]
    fb = Feedback(round=2, status="ok", accepted=True, reason="accepted: +9.0%", profile=lines)
    assert json.loads(verdict_result(fb, GOOD))["profile"] == lines
    assert "profile" not in json.loads(verdict_result(fb.model_copy(update={"profile": []}), GOOD))


def test_a_long_conversation_goes_out_shortened_at_its_old_end_and_whole_at_its_new_end(workspace, server, key):
    from kernel_tui.core.proposers.llm import CONTEXT_CHARS, RECENT_MESSAGES

    ws, ev = workspace
    proposer = LLMProposer(ws, ev, settings_for(server, key), retry_base_delay=0.0)
    big = GOOD + "# " + "x" * 10_000 + "\n"
    proposer.messages = [{"role": "system", "content": "the task " * 2000}, {"role": "user", "content": "round 1"}]
    assert proposer._sent_messages() == proposer.messages  # short: sent as it is
    for i in range(30):
        call = tool_call("submit_candidate", {"source": big, "change": f"try {i}"}, call_id=f"c{i}")
        proposer.messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                              {"role": "tool", "tool_call_id": f"c{i}", "content": '{"status": "ok"}' + "y" * 10_000}]
    kept = json.loads(json.dumps(proposer.messages))
    sent = proposer._sent_messages()
    assert proposer.messages == kept  # what is kept (and on disk) is never shortened
    size = sum(len(json.dumps(m)) for m in kept)
    assert size > CONTEXT_CHARS and sum(len(json.dumps(m)) for m in sent) < size / 2
    assert sent[:2] == kept[:2] and sent[-RECENT_MESSAGES:] == kept[-RECENT_MESSAGES:]
    old_call, old_answer = sent[2], sent[3]
    assert json.loads(old_call["tool_calls"][0]["function"]["arguments"]) == {
        "source": "(the source of this earlier call, left out to keep the conversation short)", "change": "try 0"}
    assert old_answer["content"].startswith('{"status": "ok"}') and "shortened" in old_answer["content"]
    assert [m["role"] for m in sent] == [m["role"] for m in kept]  # every call still has its answer


def test_the_agent_reads_the_structural_moves_that_apply_to_the_best(tmp_path):
    """The agent's vocabulary is the search's: read_best lists the structural rewrites the search could make."""
    from kernel_tui.core.proposers import llm_tools
    from kernel_tui.core.workspace import Workspace
    from tests.conftest import FIXTURES

    ws = Workspace.create(FIXTURES / "matmul", path=tmp_path / "ws")
    text = llm_tools.read_best(ws)
    assert "Structural rewrites the built-in search can make of this source" in text
    for words in ("persistent grid over the SMs", "split-K into SPLIT_K=4", "unmasked K loop"):
        assert any(line.startswith("- ") and words in line for line in text.splitlines()), words
    assert llm_tools.structural_moves("def broken(:\n") == []

