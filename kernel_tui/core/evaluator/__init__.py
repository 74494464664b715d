"""Isolated evaluation of candidates: correctness against the reference and kernel-only timing."""

from kernel_tui.core.evaluator.evaluator import Evaluator, Progress, resolve_device
from kernel_tui.core.evaluator.models import EvalResult, Status, TimingBlock

__all__ = ["EvalResult", "Evaluator", "Progress", "Status", "TimingBlock", "resolve_device"]
