"""Typed errors the front ends turn into one clear line (never a traceback)."""

from __future__ import annotations


class KernelTuiError(Exception):
    """Base class: the message is one line a person can act on."""


class TaskError(KernelTuiError):
    """A task directory or task.json that cannot be used."""


class CandidateError(KernelTuiError):
    """A candidate file that cannot be read."""
