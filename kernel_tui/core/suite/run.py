"""A whole suite: where its tasks run (here one after another, in child processes one per leased device,
or on a Dask cluster), then suite.json and the report. The runner does one task; this chooses."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from kernel_tui.core.suite.distributed import run_on_cluster, run_parallel
from kernel_tui.core.suite.models import SuiteResult
from kernel_tui.core.suite.runner import OnEvent, OutLock, SuiteOptions, SuiteRunner, check_options, make_pool

if TYPE_CHECKING:
    from kernel_tui.core.config import AgentSettings


def run_suite(options: SuiteOptions, *, cancel: threading.Event | None = None, on_event: OnEvent | None = None,
              settings: AgentSettings | None = None) -> SuiteResult | None:
    """Every task, then suite.json and the report; None when stopped (everything done so far is kept).
    `settings`: the agent's, loaded by the front end where the proposer uses them (opening.uses_settings)."""
    tasks = check_options(options, settings)
    runner = SuiteRunner(options, cancel=cancel, on_event=on_event, settings=settings)
    lock = OutLock(options.out)
    try:
        if options.scheduler is not None:
            results = run_on_cluster(runner, tasks)
        elif options.gpus is not None:
            results = run_parallel(runner, tasks, make_pool(options))
        else:
            results = runner.run_sequential(tasks)
        return None if results is None else runner.finish(results)
    finally:
        lock.release()
