"""Pause, resume, one more round and cancel: how a front end steers `Session.run` from another thread.

The loop asks `wait_for_go()` before every round and holds `engine` while a round runs, so anything else
that moves the workspace (the final comparison, a restore) takes the same lock and never sees a round
half done. Headless mode uses the defaults (never paused; stop when idle); the screen starts paused if
asked, and stays when idle so the person can write a candidate or run the final comparison.
"""

from __future__ import annotations

import threading


class RunControl:
    def __init__(self, *, cancel: threading.Event | None = None, paused: bool = False, stay_when_idle: bool = False) -> None:
        self.cancel = cancel or threading.Event()
        self.engine = threading.Lock()
        self.stay_when_idle = stay_when_idle
        self._cond = threading.Condition()
        self._paused = paused
        self._one_shot = False
        self._idle: str | None = None

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def idle(self) -> str | None:
        """Why no round can start now (budget spent, proposer done), or None."""
        return self._idle

    def wait_for_go(self, poll: float = 0.25) -> bool:
        """Block until a round may start; False once cancelled."""
        with self._cond:
            while not self.cancel.is_set():
                if self._one_shot:
                    self._one_shot = False
                    return True
                if not self._paused and self._idle is None:
                    return True
                self._cond.wait(poll)
        return False

    def set_idle(self, why: str | None) -> None:
        with self._cond:
            self._idle = why
            self._cond.notify_all()

    def pause(self) -> None:
        with self._cond:
            self._paused = True

    def toggle_pause(self, may_resume_idle: bool = True) -> bool:
        """Pause or resume; resuming from idle asks the proposer again when `may_resume_idle`."""
        with self._cond:
            self._paused = not self._paused
            if not self._paused and self._idle and may_resume_idle:
                self._idle = None
            self._cond.notify_all()
            return self._paused

    def one_round(self) -> bool:
        """Run exactly one round while paused or idle; False when rounds are running anyway."""
        with self._cond:
            if not (self._paused or self._idle):
                return False
            self._idle = None
            self._one_shot = True
            self._cond.notify_all()
            return True

    def stop(self) -> None:
        self.cancel.set()
        with self._cond:
            self._cond.notify_all()


def budget_note(total: int, used: int, saved: int | None, given: int | None) -> str:
    """One line on the budget as a run starts: --max-steps is the workspace's total of rounds, not more rounds
    on resume (a budget of 4 cut to 1 by `--max-steps 1` on resume surprised a user)."""
    line = f"budget: {total} rounds in total for this workspace, {used} run, {max(0, total - used)} to go"
    if given is not None and saved is not None and given != saved:
        line += (f" (--max-steps {given} replaced the budget of {saved}; it is the total, rounds already run "
                 f"count: for K more rounds pass --max-steps {used}+K)")
    return line
