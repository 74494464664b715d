"""`kernel-tui run --headless`: the Session loop with auto-approval, rendered as lines on the terminal."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_tui.core.event_handler import EventHandler
from kernel_tui.core.format import duration
from kernel_tui.core.opening import open_or_create, run_headless
from kernel_tui.core.verdicts import label, verdict_category

if TYPE_CHECKING:  # the engine loads when a run starts: the CLI imports this module before the screen opens
    from kernel_tui.core import events as ev
    from kernel_tui.core.config import AgentSettings


class HeadlessPrinter(EventHandler):
    """Each event as lines on stdout; evaluation progress as one line rewritten on stderr, where it is a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def on_progress(self, e: ev.ProgressEvent) -> None:
        p = e.progress
        text = f"  round {e.round}: {p.phase} {p.k}/{p.n} (block {p.block + 1})"
        if self.tty:
            sys.stderr.write("\r" + text.ljust(70))
            sys.stderr.flush()

    def _clear_progress(self) -> None:
        if self.tty:
            sys.stderr.write("\r" + " " * 70 + "\r")

    def on_verdict(self, e: ev.VerdictEvent) -> None:
        self._clear_progress()
        ln = e.line
        lat = f", {duration(ln.latency)}" if ln.latency else ""
        print(f"  -> {label(verdict_category(ln))}{lat}: {ln.reason}", flush=True)

    def on_budget(self, e: ev.BudgetEvent) -> None:
        self._clear_progress()
        print(f"  {e.text}", flush=True)

    def on_round(self, e: ev.RoundStartEvent) -> None:
        self._clear_progress()
        if e.resuming:  # a new round says nothing until its proposal
            print(e.text, flush=True)

    def _line(self, e: ev.Event) -> None:
        self._clear_progress()
        print(e.text, flush=True)

    on_log = on_preflight = on_proposal = on_decision = on_best_changed = on_idle = on_profile = on_finished = _line


def run(args, settings: AgentSettings | None = None) -> int:
    """The run of `args` to its end or to Ctrl-C/SIGTERM; `settings`: the agent's, loaded by `run` where the
    proposer uses them."""
    target = Path(args.target)
    ws = open_or_create(target, Path(args.workspace) if args.workspace else None)
    ws.lock()
    cancel = threading.Event()
    stopped_by: list[int] = []

    def stop(signum, frame):  # finish the phase in flight, leave everything on disk
        stopped_by.append(signum)
        cancel.set()

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        summary, written = run_headless(
            ws, device=args.device, proposer=args.proposer, max_steps=args.max_steps, cancel=cancel,
            candidates=Path(args.candidates) if args.candidates else None, on_event=HeadlessPrinter().handle, on_start=print,
            gpus=args.gpus, settings=settings,
        )
        if summary is None:
            print(f"stopped; resume with: kernel-tui run {ws.root} --headless")
            # as a shell reports a process its signal ended: 130 after Ctrl-C, 143 after SIGTERM
            return 128 + stopped_by[0] if stopped_by else 1
        print(f"report: {', '.join(str(p.relative_to(ws.root)) for p in written)}")
        s = summary
        print(f"summary: {s.accepted} accepted of {s.rounds} rounds; best {s.best_commit[:8]} ({f'round {s.best_round}' if s.best_round is not None else 'the baseline'}); "
              f"final re-test {s.final_s()}, median paired improvement"
              f"{' at the main shape' if s.final_shape_speedups else ''} {s.final_median_paired_improvement:+.2%}"
              if s.final_speedup is not None else f"summary: {s.accepted} accepted of {s.rounds} rounds")
        return 0
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        ws.unlock()
