"""The agent proposer: a model, through litellm with tool calling, proposes candidates round by round.

`propose()` runs the conversation, answering the read, history, environment and compile tool calls
itself, until the model calls submit_candidate: that call becomes the round's Proposal. The Session then
has the person decide, evaluates and gates, and reports back through `feedback()`; the next `propose()`
answers the pending submit_candidate call with that outcome (the verdict, the person's reason, or their
edited source) and carries on. finish(summary), a spent step budget or a cancel end it (None).

Records, appended as they happen, in the workspace:
    model-messages.jsonl   every message that entered the model's context, replies included, one per line
    tool-calls.jsonl       every tool call: name, arguments, the full result
The conversation and the steps used are rebuilt from model-messages.jsonl on resume.

The API key is read from the settings only to make a request; it is never written anywhere, and any text
this module writes or raises has it redacted. litellm is imported on the first model call, never at import.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_tui.core.config import AgentSettings
from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.evaluator import Evaluator
from kernel_tui.core.history import current_best, version_label
from kernel_tui.core.profile.store import ProfileRecord, profiler_for
from kernel_tui.core.proposers import llm_tools as tools
from kernel_tui.core.proposers.base import Feedback, Proposal, Proposer, ProposerContext
from kernel_tui.core.proposers.prompt import NUDGE, first_message, system_prompt
from kernel_tui.core.records import ProposerInfo, now_iso
from kernel_tui.core.workspace import Workspace

MESSAGES_FILE = "model-messages.jsonl"
TOOL_CALLS_FILE = "tool-calls.jsonl"
REDACTED = "[redacted]"
RETRYABLE_STATUS = {408, 409, 425, 429}
# An afternoon's conversation resends every source and answer with each request. Past this many characters
# (about 50k tokens), older long tool answers and submitted sources go out shortened; the files keep them.
CONTEXT_CHARS = 200_000
RECENT_MESSAGES = 16  # the end of the conversation always goes out whole
LONG = 2_000  # an older tool answer or source argument longer than this is shortened


class AgentError(KernelTuiError):
    """The model's API could not be used (bad key, unknown model, retries spent)."""


def _litellm():
    """Import litellm on first use, with its price map read locally (no network at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _retryable(exc: Exception) -> bool:
    """Rate limits, server errors, timeouts and dropped connections; not auth or bad requests."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS or status >= 500
    try:
        import openai
    except ImportError:  # pragma: no cover - litellm depends on openai
        return False
    return isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, TimeoutError, ConnectionError))


class LLMProposer(Proposer):
    """Candidates from a model that uses the tools of llm_tools; see the module docstring."""

    def __init__(
        self,
        workspace: Workspace,
        evaluator: Evaluator,
        settings: AgentSettings,
        *,
        retry_base_delay: float = 1.0,
        max_tries: int = 4,
        on_activity: Callable[[str], None] | None = None,
    ) -> None:
        if not settings.is_configured:
            raise AgentError(
                "the agent has no model: set KERNEL_AGENT_MODEL (and KERNEL_AGENT_API_KEY) in the environment "
                "or in ~/.config/kernel-tui/agent.env"
            )
        self.ws, self.evaluator, self.settings = workspace, evaluator, settings
        self.retry_base_delay = retry_base_delay
        self.max_tries = max(1, max_tries)
        self.max_steps = settings.max_steps
        self.on_activity = on_activity or (lambda text: None)
        self.info = ProposerInfo(kind="llm", name="agent", model=settings.model)
        self.messages: list[dict[str, Any]] = []
        self.queue: list[dict[str, Any]] = []  # tool calls of the last reply not answered yet
        self.pending: dict[str, Any] | None = None  # {"call": tool call, "round": n}: a submission awaiting its outcome
        self.outcome: Feedback | None = None  # the Session's feedback on the pending submission
        self.steps = 0  # model calls made (replies in the conversation)
        self.finished = False
        self.summary: str | None = None
        self.stopped_because: str | None = None
        # what the agent has been told of: the last judged round, and the incumbent (None: not yet looked)
        self.told_through: int | None = None
        self.known_best: str | None = None
        self._lock = threading.Lock()
        self._rebuild()

    # --- files ----------------------------------------------------------------------------------
    @property
    def messages_path(self) -> Path:
        return self.ws.root / MESSAGES_FILE

    @property
    def tool_calls_path(self) -> Path:
        return self.ws.root / TOOL_CALLS_FILE

    def redact(self, text: str) -> str:
        secret = self.settings.secret
        return text.replace(secret, REDACTED) if secret else text

    def _append_line(self, path: Path, record: dict[str, Any]) -> None:
        line = self.redact(json.dumps(record, ensure_ascii=False, default=str))
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _add_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._append_line(self.messages_path, message)

    def _rebuild(self) -> None:
        """The conversation so far, from model-messages.jsonl (a torn last line is dropped)."""
        path = self.messages_path
        if not path.exists():
            return
        raw = path.read_text(encoding="utf-8")
        lines = raw.split("\n")
        complete, torn = lines[:-1], lines[-1]
        messages = []
        for line in complete:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(msg, dict) and msg.get("role"):
                messages.append(msg)
        if torn:  # killed mid-append: that message never reached the model
            path.write_text("".join(ln + "\n" for ln in complete), encoding="utf-8")
        self.messages = messages
        self.steps = sum(m["role"] == "assistant" for m in messages)
        self.queue = self._unanswered()

    def _unanswered(self) -> list[dict[str, Any]]:
        last = max((i for i, m in enumerate(self.messages) if m["role"] == "assistant"), default=None)
        if last is None:
            return []
        answered = {m.get("tool_call_id") for m in self.messages[last + 1:] if m["role"] == "tool"}
        return [c for c in self.messages[last].get("tool_calls") or [] if c.get("id") not in answered]

    # --- the Proposer interface -----------------------------------------------------------------
    def propose(self, context: ProposerContext) -> Proposal | None:
        with self._lock:
            return self._propose(context)

    def feedback(self, feedback: Feedback) -> None:
        if self.pending is not None and feedback.round == self.pending["round"]:
            self.outcome = feedback

    def state(self) -> dict:
        return {
            "kind": "llm", "model": self.settings.model, "steps": self.steps, "max_steps": self.max_steps,
            "finished": self.finished, "summary": self.summary, "stopped_because": self.stopped_because,
            "pending": self.pending, "outcome": self.outcome.model_dump() if self.outcome else None,
            "messages": len(self.messages), "told_through": self.told_through, "known_best": self.known_best,
        }

    def restore(self, state: dict) -> None:
        if state.get("kind") != "llm":
            return  # another proposer's state (the workspace changed proposers): nothing to take back
        self._rebuild()
        self.finished = bool(state.get("finished"))
        self.summary = state.get("summary")
        self.stopped_because = state.get("stopped_because")
        self.told_through, self.known_best = state.get("told_through"), state.get("known_best")
        pending = state.get("pending")
        answered = {m.get("tool_call_id") for m in self.messages if m["role"] == "tool"}
        if pending and pending.get("call", {}).get("id") not in answered:
            self.pending = pending
            self.outcome = Feedback.model_validate(state["outcome"]) if state.get("outcome") else None
            self.queue = [c for c in self.queue if c.get("id") != pending["call"].get("id")]

    # --- the conversation -----------------------------------------------------------------------
    def _propose(self, ctx: ProposerContext) -> Proposal | None:
        if self.finished:
            return None
        if not self.messages:
            self._add_message({"role": "system", "content": system_prompt(self.ws, self.evaluator, max_steps=self.max_steps)})
            self._add_message({"role": "user", "content": first_message(ctx)})
            self._seen(ctx)  # the first message points to everything judged so far
        own = None
        if self.pending is not None:
            if self.outcome is None:
                self.outcome = self._outcome_from_records(ctx)
            if self.outcome is None:
                # stopped after the proposal was handed over but before it became a round: hand it over again
                return self._proposal(self.pending["call"], ctx.round)
            own = self.pending["round"]
            self._answer_submission()
        while True:
            while self.queue:
                call = self.queue.pop(0)
                result = self._handle(call, ctx)
                if isinstance(result, Proposal):
                    return result
                if self.finished or self.evaluator.cancel.is_set():
                    return None
            if self.evaluator.cancel.is_set():
                return None
            if self.steps >= self.max_steps:  # not `finished`: a resume with a larger budget goes on
                self.stopped_because = f"step budget spent ({self.max_steps} model calls)"
                self.on_activity(f"agent: {self.stopped_because}")
                return None
            news = self._news(ctx, own)  # here, never between the answers to one reply's tool calls
            if news:
                self._add_message({"role": "user", "content": news})
            reply = self._call_model()
            if reply is None:  # cancelled while waiting to retry
                return None
            calls = reply.get("tool_calls") or []
            if calls:
                self.queue = list(calls)
            else:
                self._add_message({"role": "user", "content": NUDGE})

    def _seen(self, ctx: ProposerContext) -> None:
        self.told_through = max((ln.round for ln in ctx.history), default=0)
        self.known_best = self.ws.best.hexsha

    def _news(self, ctx: ProposerContext, own: int | None) -> str | None:
        """What changed that the agent did not do and has not heard: rounds it did not propose (the person's
        own candidates, say), and an incumbent it did not make (a restore, or such a round accepted)."""
        if self.told_through is None or self.known_best is None:  # a conversation from before these were kept
            self._seen(ctx)
            return None
        others = [ln for ln in ctx.history if ln.round > self.told_through and ln.round != own]
        mine = next((ln for ln in ctx.history if ln.round == own), None)
        best = self.ws.best.hexsha
        moved = best != self.known_best and not (mine is not None and mine.accepted and mine.commit == best)
        self._seen(ctx)
        if not others and not moved:
            return None
        lines = ["Meanwhile, without you:"]
        lines += [f"- round {ln.round}, by {ln.proposer.kind} {ln.proposer.name}: {ln.change} — "
                  f"{'accepted' if ln.accepted else ln.status}: {ln.reason}" for ln in others]
        if moved:
            v = current_best(self.ws)
            latency = f", median latency {v.latency:.6g} s" if v.latency else ""
            lines.append(f"- the incumbent is now {version_label(v)} (commit {v.commit[:12]}{latency}). "
                         "Candidates are timed against it: read it with read_best before the next one.")
        return "\n".join(lines)

    def _proposal(self, call: dict[str, Any], round_no: int) -> Proposal:
        args = tools.parse_arguments("submit_candidate", call["function"].get("arguments"))
        assert isinstance(args, tools.SubmitArgs)
        change = " ".join(args.change.split())
        self.pending = {"call": call, "round": round_no}
        self.outcome = None
        self.on_activity(f"agent: submits round {round_no}: {change}")
        return Proposal(source=args.source, change=change, proposer=self.info)

    def _outcome_from_records(self, ctx: ProposerContext) -> Feedback | None:
        """The pending submission's verdict from trajectory.jsonl, when a stop came before feedback()."""
        line = next((ln for ln in ctx.history if ln.round == self.pending["round"]), None) if self.pending else None
        if line is None:
            return None
        edited = self.ws.source_at(line.commit) if line.proposer.kind == "person" else None
        return Feedback(
            round=line.round, status=line.status, accepted=line.accepted, reason=line.reason,
            improvement=line.improvement, latency=line.latency, incumbent_latency=line.incumbent_latency,
            rejected_by_person=line.status == "rejected_by_person", edited_source=edited,
        )

    def _answer_submission(self) -> None:
        assert self.pending is not None and self.outcome is not None
        call = self.pending["call"]
        args = tools.parse_arguments("submit_candidate", call["function"].get("arguments"))
        assert isinstance(args, tools.SubmitArgs)
        self._answer(call, tools.verdict_result(self.outcome, args.source), arguments=args.model_dump())
        self.pending, self.outcome = None, None

    def _handle(self, call: dict[str, Any], ctx: ProposerContext) -> Proposal | None:
        fn = call.get("function") or {}
        name, raw = fn.get("name") or "", fn.get("arguments")
        try:
            args = tools.parse_arguments(name, raw)
        except tools.ToolArgumentError as exc:
            self.on_activity(f"agent: malformed {name or 'tool'} call: {exc}")
            self._answer(call, f"error: {exc}", arguments=raw, error=True)
            return None
        self.on_activity(f"agent: {name}")
        if name == "submit_candidate":
            return self._proposal(call, ctx.round)
        if name == "finish":
            assert isinstance(args, tools.FinishArgs)
            self.summary = args.summary
            self.finished, self.stopped_because = True, "the agent finished"
            self._answer(call, "finished: no more rounds will be proposed", arguments=args.model_dump())
            return None
        try:
            result = self._run_tool(name, args)
            error = False
        except Exception as exc:  # noqa: BLE001 - a tool failing is reported to the model, never a crash of the run
            result, error = f"error: {name} failed: {type(exc).__name__}: {exc}", True
        if self.evaluator.cancel.is_set():  # what it says may be the stop's doing: asked again when the run goes on
            self.queue.insert(0, call)
            return None
        self._answer(call, result, arguments=args.model_dump(), error=error)
        return None

    def _run_tool(self, name: str, args: tools._Args) -> str:
        if name == "read_best":
            return tools.read_best(self.ws)
        if name == "read_reference":
            return tools.read_reference(self.ws)
        if name == "get_environment":
            return tools.get_environment(self.ws, self.evaluator)
        if name == "get_history":
            assert isinstance(args, tools.HistoryArgs)
            return tools.get_history(self.ws, args.limit)
        if name == "compile_candidate":
            assert isinstance(args, tools.SourceArgs)
            return tools.compile_result(self.evaluator.check(args.source))
        if name == "profile_candidate":
            assert isinstance(args, tools.ProfileArgs)
            return tools.profile_answer(self._profile(args))
        raise AssertionError(name)  # parse_arguments knows no other tool

    def _profile(self, args: tools.ProfileArgs) -> ProfileRecord:
        profiler = profiler_for(self.ws, self.evaluator)
        if args.source is not None:
            return profiler.profile_source(args.source)
        if args.round is not None:
            line = next((ln for ln in self.ws.trajectory() if ln.round == args.round), None)
            if line is None:
                raise ValueError(f"no round {args.round} yet")
            return profiler.stored_or_profile(line.commit)
        return profiler.stored_or_profile(self.ws.best.hexsha)

    def _answer(self, call: dict[str, Any], content: str, *, arguments: Any, error: bool = False) -> None:
        fn = call.get("function") or {}
        self._add_message({"role": "tool", "tool_call_id": call.get("id") or "", "content": content})
        self._append_line(self.tool_calls_path, {
            "time": now_iso(), "step": self.steps, "id": call.get("id"), "name": fn.get("name"),
            "arguments": arguments, "error": error, "result": content,
        })

    # --- the model ------------------------------------------------------------------------------
    def _request(self) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model, "messages": self._sent_messages(), "tools": tools.TOOLS,
            "timeout": s.timeout, "max_retries": 0,  # retries are ours, bounded, and cancellable
        }
        if s.secret:
            request["api_key"] = s.secret
        if s.api_base:
            request["api_base"] = s.api_base
        if s.extra_body:
            request["extra_body"] = dict(s.extra_body)
        return request

    def _sent_messages(self) -> list[dict[str, Any]]:
        """The conversation as a request carries it: whole while it is short; past CONTEXT_CHARS, the older
        long tool answers keep their beginning (where the status and the verdict are) and the older
        submitted sources are left out, each saying so. The system prompt and the first message stay whole."""
        messages = copy.deepcopy(self.messages)
        if sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) <= CONTEXT_CHARS:
            return messages
        for m in messages[2 : max(2, len(messages) - RECENT_MESSAGES)]:
            content = m.get("content")
            if m["role"] == "tool" and isinstance(content, str) and len(content) > LONG:
                m["content"] = content[: LONG // 4] + "\n… (an earlier answer, shortened to keep the conversation " \
                                                      "short: call the tool again if you need it whole)"
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "")
                except (TypeError, ValueError):
                    continue
                if isinstance(args, dict) and isinstance(args.get("source"), str) and len(args["source"]) > LONG:
                    args["source"] = "(the source of this earlier call, left out to keep the conversation short)"
                    fn["arguments"] = json.dumps(args)
        return messages

    def _call_model(self) -> dict[str, Any] | None:
        litellm = _litellm()
        cancel = self.evaluator.cancel
        for attempt in range(1, self.max_tries + 1):
            self.on_activity(f"agent: model call {self.steps + 1}/{self.max_steps}" + (f" (try {attempt})" if attempt > 1 else ""))
            try:
                response = litellm.completion(**self._request())
                break
            except Exception as exc:  # noqa: BLE001 - litellm raises many kinds; _retryable sorts them
                what = self.redact(f"{type(exc).__name__}: {exc}".strip())
                if len(what) > 500:
                    what = what[:500] + "…"
                if not _retryable(exc):
                    raise AgentError(f"the model's API refused the request: {what}") from None
                if attempt == self.max_tries:
                    raise AgentError(f"the model's API failed {self.max_tries} times: {what}") from None
                delay = self.retry_base_delay * 2 ** (attempt - 1)
                self.on_activity(f"agent: {what.splitlines()[0][:200]}; retrying in {delay:.3g} s")
                if cancel.wait(delay):
                    return None
        self.steps += 1
        reply = self._reply(response)
        self._add_message(reply)
        return reply

    @staticmethod
    def _reply(response: Any) -> dict[str, Any]:
        """The model's reply as a plain chat message, tool-call arguments kept exactly as sent."""
        try:
            message = response.choices[0].message
        except (AttributeError, IndexError, TypeError):
            return {"role": "assistant", "content": ""}
        calls = []
        for call in getattr(message, "tool_calls", None) or []:
            fn = getattr(call, "function", None)
            arguments = getattr(fn, "arguments", None)
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments) if arguments is not None else ""
            calls.append({
                "id": getattr(call, "id", None) or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": getattr(fn, "name", None) or "", "arguments": arguments},
            })
        content = getattr(message, "content", None)
        reply: dict[str, Any] = {"role": "assistant"}
        if content or not calls:  # a null content beside tool calls is not sent back (litellm drops it too)
            reply["content"] = content if isinstance(content, str) else ""
        if calls:
            reply["tool_calls"] = calls
        return reply
