"""The preflight: before a run's first round, the reference checks itself and the baseline must be correct.

A recorded ok preflight on the same device is reused; a stopped one records nothing, so a resumed run checks
again. On success the baseline is timed once and profiled: it is the version every later one is compared with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kernel_tui.core.evaluator import Evaluator, Status
from kernel_tui.core.events import Event, LogEvent, PreflightEvent
from kernel_tui.core.profile.store import stored as stored_profile
from kernel_tui.core.records import Preflight
from kernel_tui.core.workspace import Workspace


def run_preflight(ws: Workspace, evaluator: Evaluator, cancel: threading.Event, on_event: Callable[[Event], None],
                  profile_version: Callable[[str], object]) -> Preflight:
    """`profile_version(sha)` profiles and stores a version (the session's own, so its events and refusals
    are the session's)."""

    def log(text: str) -> None:
        on_event(LogEvent(round=0, text=text))

    saved = ws.read_json("preflight.json")
    if saved and saved.get("status") == "ok" and saved.get("device") == evaluator.device:
        pre = Preflight.model_validate(saved)
        on_event(PreflightEvent(preflight=pre, recorded_earlier=True,
                                text=f"preflight ok (recorded earlier): {pre.baseline}"))
        if pre.sandbox:
            log(pre.sandbox)
        return pre
    log("preflight: reference self-check and baseline correctness")
    baseline = ws.task.baseline_source
    pytorch = ws.task.baseline_is_pytorch  # the PyTorch starting point: exempt from the policy
    check = evaluator.check(baseline, trusted=pytorch)
    if check.status is Status.cancelled or cancel.is_set():  # no verdict: nothing recorded
        log("preflight: stopped before it finished; it runs again when the run resumes")
        return Preflight(status="failed", reference="not checked", baseline="stopped", device=evaluator.device)
    ok = check.status is Status.ok
    reference = "ok" if check.status is not Status.invalid_task else check.reason
    pre = Preflight(
        status="ok" if ok else "failed", reference=reference,
        baseline=check.reason if not ok else f"correct on {len(check.cases)} shape×seed cases",
        device=evaluator.device, sandbox=check.sandbox.summary() if check.sandbox else "",
        not_confined=check.sandbox.not_confined() if check.sandbox else "",
    )
    env = check.environment.model_dump() if check.environment else {"device": evaluator.device}
    ws.write_json("environment.json", env)
    from kernel_tui.core.hardware import measure

    ws.write_json("hardware.json", measure(evaluator))
    if ok:
        timing = evaluator.timing_run(baseline, baseline, block=0, correctness=False, phase="baseline",
                                      trusted=pytorch)
        ws.write_json("baseline-evaluation.json", timing.model_dump(mode="json"))
        # the baseline's profile is what every later one is compared with (the profile view's "against the
        # baseline"), and its bottleneck steers the first rounds
        found = stored_profile(ws, ws.baseline.hexsha)
        if found is None or found.status != "ok":  # a failed one (a preflight cut short, say) is retaken
            profile_version(ws.baseline.hexsha)
    ws.write_json("preflight.json", pre)
    on_event(PreflightEvent(preflight=pre,
                            text=f"preflight {pre.status}: reference {pre.reference}; baseline {pre.baseline}"))
    if check.sandbox is not None:
        log(check.sandbox.summary())
    return pre
