"""Static policy on candidate source, checked with `ast` before anything runs.

The policy is a first filter: it keeps honest candidates honest and names common mistakes, each rejection by
its rule and line, so a person (or the agent) knows what to change. It is not the defence. The defence is the
process boundary: the candidate runs in its own sandboxed process that holds nothing that decides, and the
checks and the timings run in a trusted judge process, so a chain the policy misses costs no verdict.

The rules: Triton kernels do the work; host code only allocates, computes launch grids and launches. Allowed
modules lead to os and sys through their attributes (typing.sys, triton.runtime...), so every dotted path
through one must be on an allow-list (allowlist.py), and a module or a class is named, never held as a
value. No attribute is set or deleted anywhere: a name may hold a class, a module or the evaluator's tensor, and
the candidate's own objects cannot be told from those. Host code calls a tensor method where it names it,
never holds it. Frame and code attributes, `.ctypes` and `from_file` are refused wherever they appear.

The package: `rules` (what may be imported and reached, built on `allowlist`, the names each module may lend),
`checker` (the walk over the syntax tree), `check` (check_source: the walk and the entrypoint's checks) and
`report` (Violation, PolicyReport). Callers import from here.
"""

from __future__ import annotations

from kernel_tui.core.policy.check import check_source
from kernel_tui.core.policy.report import PolicyReport, Violation
from kernel_tui.core.policy.rules import (
    ALLOWED_DUNDERS,
    ALLOWED_IMPORTS,
    ALLOWED_PATHS,
    CLASS_PATHS,
    FILE_ATTRS,
    FILE_PATHS,
    FORBIDDEN_BUILTINS,
    HELD_METHODS,
    INFO_ATTRS,
    INFO_FIELDS,
    INFO_MAKERS,
    INTROSPECTION_ATTRS,
    LIBDEVICE_MODULES,
    MODULE_PATHS,
    NATIVE_ATTRS,
    SIDE_STREAM_NAMES,
    TENSOR_COMPUTE_METHODS,
    TENSOR_METHODS_ALLOWED,
    TIMER_MODULES,
    TIMER_NAMES,
    TORCH_CUDA_ALLOWED,
    TORCH_HOST_ALLOWED,
)

__all__ = [
    "check_source",
    "PolicyReport",
    "Violation",
    "ALLOWED_DUNDERS",
    "ALLOWED_IMPORTS",
    "ALLOWED_PATHS",
    "CLASS_PATHS",
    "FILE_ATTRS",
    "FILE_PATHS",
    "FORBIDDEN_BUILTINS",
    "HELD_METHODS",
    "INFO_ATTRS",
    "INFO_FIELDS",
    "INFO_MAKERS",
    "INTROSPECTION_ATTRS",
    "LIBDEVICE_MODULES",
    "MODULE_PATHS",
    "NATIVE_ATTRS",
    "SIDE_STREAM_NAMES",
    "TENSOR_COMPUTE_METHODS",
    "TENSOR_METHODS_ALLOWED",
    "TIMER_MODULES",
    "TIMER_NAMES",
    "TORCH_CUDA_ALLOWED",
    "TORCH_HOST_ALLOWED",
]
