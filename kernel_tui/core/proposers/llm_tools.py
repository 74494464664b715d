"""The agent's tools: their schemas, the checking of a model's arguments, and the read-only answers.

Seven tools, as the published method names them: read_best(), read_reference(), get_environment(),
get_history(limit), compile_candidate(source), submit_candidate(source, change), finish(summary); and an
eighth, profile_candidate(source | round), for what Nsight Compute says of a kernel.
The first five and the profile's answer are made here; submit_candidate goes through the Session (a person's decision, then
evaluation and the gate) and finish ends the conversation, both handled by the proposer.

A model's arguments are checked with pydantic; whatever is wrong (invalid JSON, a missing or
wrong-typed field, an unknown tool) becomes a ToolArgumentError whose message is sent back to the model
as the tool's result, so it can correct itself.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kernel_tui.core.evaluator import EvalResult, Evaluator
from kernel_tui.core.history import current_best, version_label
from kernel_tui.core.profile.compare import summary_lines
from kernel_tui.core.profile.store import ProfileRecord
from kernel_tui.core.proposers.base import Feedback
from kernel_tui.core.proposers.facts import environment_facts
from kernel_tui.core.proposers.prompt import contract
from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze
from kernel_tui.core.workspace import Workspace

# --- arguments ------------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class NoArgs(_Args):
    pass


class HistoryArgs(_Args):
    limit: int = Field(10, ge=1, le=200, description="How many of the latest rounds to return (1-200).")


class SourceArgs(_Args):
    source: str = Field(min_length=1, description="The complete Python module: kernels and the entrypoint.")


class SubmitArgs(SourceArgs):
    change: str = Field(min_length=1, description="One line: what this candidate changes and why it should be faster.")


class ProfileArgs(_Args):
    source: str | None = Field(None, min_length=1, description="A complete candidate module to profile (the static "
                               "policy checks it first). Leave out to profile a version instead.")
    round: int | None = Field(None, ge=1, description="The round whose version to profile; leave out (and source "
                              "out) for the incumbent.")

    @model_validator(mode="after")
    def _one_target(self) -> ProfileArgs:
        if self.source is not None and self.round is not None:
            raise ValueError("give a source or a round, not both")
        return self


class FinishArgs(_Args):
    summary: str = Field(description="What was tried, what was kept, and why you stop.")


DESCRIPTIONS = {
    "read_best": "The current best kernel source (the incumbent every candidate is timed against), with its commit and latency.",
    "read_reference": "The PyTorch reference the candidate must match, and the entrypoint's contract.",
    "get_environment": "Device, software versions, measured memory bandwidth, the task's bytes and flops per call and the roofline floor latency.",
    "get_history": "The latest rounds: each proposal's change, status, the gate's verdict and latencies.",
    "compile_candidate": "Check a candidate without timing it: the static policy, compilation and correctness "
    "against the reference on every test shape and seed. Costs no round; use it before submitting.",
    "submit_candidate": "Submit a candidate for this round. A person approves, edits or rejects it; then it is "
    "checked and timed against the best by the gate. Returns the verdict, or the person's reason, or their edit. "
    "Costs one round of the budget.",
    "profile_candidate": "Profile a kernel with Nsight Compute on the GPU (one call at the benchmark shape): kernel "
    "time, DRAM traffic and % of peak, SM and tensor-pipe use, achieved occupancy, L1/L2 hit rates and the top "
    "warp-stall reasons. Give a source, a round, or nothing (the incumbent). Costs no round; about 10 s.",
    "finish": "End the optimization with a summary. Call it when further candidates are unlikely to pass the gate.",
}

ARGUMENTS: dict[str, type[_Args]] = {
    "read_best": NoArgs,
    "read_reference": NoArgs,
    "get_environment": NoArgs,
    "get_history": HistoryArgs,
    "compile_candidate": SourceArgs,
    "submit_candidate": SubmitArgs,
    "profile_candidate": ProfileArgs,
    "finish": FinishArgs,
}


def _schema(model: type[_Args]) -> dict[str, Any]:
    """The arguments model's own JSON schema: every bound and description that `parse_arguments` enforces
    (limit at most 200, a non-empty source) is what the model is told. Titles only repeat the names."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema["properties"].values():
        prop.pop("title", None)
    return {**schema, "required": schema.get("required", []), "additionalProperties": False}


TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": _schema(model)}}
    for name, model in ARGUMENTS.items()
]
TOOL_NAMES = tuple(ARGUMENTS)


class ToolArgumentError(Exception):
    """A tool call the model must correct; str() is the message sent back to it."""


def parse_arguments(name: str, raw: Any) -> _Args:
    """The checked arguments of a tool call, or a ToolArgumentError saying what to fix."""
    model = ARGUMENTS.get(name)
    if model is None:
        raise ToolArgumentError(f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}")
    if isinstance(raw, dict):
        data: Any = raw
    else:
        text = raw if isinstance(raw, str) else ""
        if not text.strip():
            data = {}
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ToolArgumentError(
                    f"{name}: the arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                    f"send one JSON object like {_example(name)}"
                ) from None
    if not isinstance(data, dict):
        raise ToolArgumentError(f"{name}: the arguments must be one JSON object like {_example(name)}, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(arguments)"
            problems.append(f"field {field!r}: {err['msg'].lower()}")
        raise ToolArgumentError(f"{name}: {'; '.join(problems)}; call it again like {_example(name)}") from None


EXAMPLES = {"profile_candidate": {"round": 3}}  # its fields are alternatives: one of them, not both


def _example(name: str) -> str:
    fields = ARGUMENTS[name].model_fields
    return json.dumps(EXAMPLES.get(name) or {n: (10 if f.annotation in (int, int | None) else "...")
                                             for n, f in fields.items()})


# --- answers --------------------------------------------------------------------------------------


def _json(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, default=str)


def read_best(ws: Workspace) -> str:
    best = current_best(ws)  # after a restore: the version it copies, and that version's latency
    change, _ = ws.proposal_info(ws.best)
    latency = best.latency
    header = [
        f"commit {best.commit[:12]} ({version_label(best)}): {change}",
        f"median latency: {latency:.6g} s" if latency else "median latency: not measured yet",
        "This is the incumbent: every candidate is timed against it and must be correct where it is.",
    ]
    moves = structural_moves(ws.best_source)
    offer = ("\nStructural rewrites the built-in search can make of this source, each computing what it computes "
             "(write one yourself, or combine them):\n" + "".join(f"- {m}\n" for m in moves)) if moves else ""
    return ("\n".join(header) + "\n\n```python\n" + ws.best_source + ("" if ws.best_source.endswith("\n") else "\n")
            + "```\n" + offer)


def structural_moves(source: str) -> list[str]:
    """The search's structural moves that apply to `source` (its persistent grid, split-K, TMA loads, ...), in
    the words the screen shows for them: the agent's vocabulary is the search's."""
    try:
        analysis = analyze(source)
    except (SyntaxError, ValueError):
        return []
    return sorted({a.change for a in analysis.actions() if a.kind in STRUCTURAL_KINDS})


def read_reference(ws: Workspace) -> str:
    return contract(ws.task) + "\n\nReference source:\n```python\n" + ws.task.reference_source.rstrip("\n") + "\n```\n"


def get_environment(ws: Workspace, evaluator: Evaluator) -> str:
    return _json(environment_facts(ws, evaluator))


def get_history(ws: Workspace, limit: int) -> str:
    lines = ws.trajectory()[-limit:]
    rows = [
        {
            "round": ln.round, "change": ln.change, "proposer": f"{ln.proposer.kind}:{ln.proposer.name}",
            "commit": ln.commit[:12], "status": ln.status, "accepted": ln.accepted, "reason": ln.reason,
            "latency_seconds": ln.latency, "incumbent_latency_seconds": ln.incumbent_latency,
            "improvement": ln.improvement, "ci": [ln.ci_low, ln.ci_high] if ln.ci_low is not None else None,
        }
        for ln in lines
    ]
    return _json({"rounds_shown": len(rows), "rounds_total": len(ws.trajectory()), "best_commit": ws.best.hexsha[:12], "history": rows})


def compile_result(result: EvalResult) -> str:
    failed = [c for c in result.cases if not c.passed]
    data: dict[str, Any] = {
        "status": result.status.value,
        "ok": result.status.value == "ok",
        "reason": result.reason,
        "cases_passed": sum(c.passed for c in result.cases),
        "cases_total": len(result.cases),
        "cases": [c.model_dump(exclude_none=True) for c in result.cases],
        "note": "policy, compilation and correctness only; nothing was timed and no round was used",
    }
    if result.policy_rule:
        data["policy_rule"] = result.policy_rule
    if failed:
        data["first_failure"] = failed[0].model_dump(exclude_none=True)
    return _json(data)


def verdict_result(fb: Feedback, submitted_source: str) -> str:
    """The answer to a submit_candidate call: what the person and the gate made of it."""
    if fb.rejected_by_person:
        return _json({
            "round": fb.round, "outcome": "rejected_by_person", "reason": fb.reason,
            "note": "The person rejected this candidate before evaluation; it was not timed and the best is "
            "unchanged. Take their reason into account.",
        })
    data: dict[str, Any] = {
        "round": fb.round, "status": fb.status, "accepted": fb.accepted, "reason": fb.reason,
        "improvement": fb.improvement, "candidate_latency_seconds": fb.latency,
        "incumbent_latency_seconds": fb.incumbent_latency,
    }
    if fb.kernels:  # what the compiler made of it: registers, spills, shared memory, occupancy
        data["compiled_kernels"] = fb.kernels
    if fb.profile:  # an accepted version's Nsight Compute profile: why the new incumbent is as fast as it is
        data["profile"] = fb.profile
    if fb.accepted:
        data["note"] = "Accepted: this candidate is now the best, the incumbent of the next round."
    elif fb.status == "ok":
        data["note"] = "Correct, but the gate did not accept it; the best is unchanged."
    else:
        data["note"] = f"Not accepted ({fb.status}); the best is unchanged."
    if fb.edited_source is not None and fb.edited_source != submitted_source:
        data["edited_by_person"] = True
        data["evaluated_source"] = fb.edited_source
        data["note"] = "The person edited your candidate before evaluation; the verdict is for their version " \
            "(evaluated_source). " + data["note"]
    return _json(data)


def profile_answer(record: ProfileRecord) -> str:
    """The answer to profile_candidate: the profile's summary and its kernels, or why there is none."""
    if record.profile is None:
        return _json({"status": record.status, "reason": record.reason})
    return _json({
        "status": "ok", "shape": record.shape, "device": record.device_name, "headline": record.headline(),
        "summary": summary_lines(record.profile),
        "kernels": [_kernel_profile(k.model_dump(exclude_none=True)) for k in record.profile.kernels],
    })


# the agent also hears compiled facts whose occupancy is the theoretical one, and summaries in % of stall
# cycles: the per-kernel figures say what they are
_PROFILE_KEYS = {"occupancy_pct": "achieved_occupancy_pct", "stalls": "stall_cycles_per_issued_instruction"}


def _kernel_profile(fields: dict[str, Any]) -> dict[str, Any]:
    return {_PROFILE_KEYS.get(k, k): v for k, v in fields.items()}
