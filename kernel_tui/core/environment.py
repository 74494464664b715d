"""Can this Python evaluate candidates? Checked once, up front, before any worker starts.

`find_spec` only locates a package: milliseconds, where importing torch to find out would cost seconds and
slow the screen's start. The workers run this interpreter with the caller's import path (runner.package_paths),
so what is found here is what they import.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from importlib.util import find_spec

from kernel_tui.core.errors import KernelTuiError

CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


class EnvironmentProblem(KernelTuiError):
    """A package or device the evaluation needs is not there; the message names the fix."""


def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # a broken parent package or a module with no spec
        return False


def _triton_requirement() -> str:
    """What to install: the triton that torch's own metadata pins (its GPU builds do), else any triton."""
    try:
        requires = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        return "triton"
    for req in requires:
        spec = req.split(";")[0].replace(" ", "")
        if re.match(r"(pytorch-)?triton(-rocm)?([=<>!~]|$)", spec):
            return spec
    return "triton"


def check(device: str = "auto") -> None:
    """torch and triton always; numpy where Triton's CPU interpreter may run (device cpu or auto)."""
    where = sys.executable
    if not _installed("torch"):
        raise EnvironmentProblem(
            f"torch is not installed for {where}: pip install torch (on Linux it brings its triton); "
            f"CPU only: {CPU_TORCH} && pip install triton (see the README)")
    if not _installed("triton"):
        # the CPU build of torch, and torch on macOS, come without triton
        req = _triton_requirement()
        raise EnvironmentProblem(f"triton is not installed for {where}: pip install " + (
            req if req == "triton" else f"'{req}'"))
    if device in ("cpu", "auto") and not _installed("numpy"):
        raise EnvironmentProblem(f"numpy is not installed for {where} (Triton's CPU interpreter needs it): "
                                 "pip install numpy")


def resolve(device: str) -> str:
    """The device to run on. `cuda` without a GPU torch can use is bad input, not a failed evaluation.

    Asks a child interpreter (evaluator.cuda_available), so this costs a torch import: call it only where an
    evaluator is about to be built anyway."""
    from kernel_tui.core.evaluator import evaluator

    if device == "cuda":
        if not evaluator.cuda_available():
            raise EnvironmentProblem("--device cuda: torch sees no CUDA GPU here; use --device cpu (Triton's "
                                     "interpreter) or --device auto")
        return "cuda"
    return evaluator.resolve_device(device)
