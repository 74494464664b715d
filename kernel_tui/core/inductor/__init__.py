"""torch.compile's own kernels as a task's Triton start: read the module Inductor generates, rewrite it.

`generated` parses the module (kernels and the operations of its `call`), `kernels` rewrites each kernel to a
plain `@triton.jit` function, `launch` derives placeholders, grids and launch configs, `rewrite` writes the
baseline. Text and `ast` only: neither torch nor triton is imported. Where the start must stay eager, a
Refusal (a ValueError) says why in one line.
"""

from __future__ import annotations

from kernel_tui.core.inductor.generated import Generated, Kernel, Refusal, parse_generated
from kernel_tui.core.inductor.launch import DEFAULT_CONFIGS, LaunchConfig, derive_placeholders
from kernel_tui.core.inductor.rewrite import rewrite, rewrite_for_task

__all__ = ["DEFAULT_CONFIGS", "Generated", "Kernel", "LaunchConfig", "Refusal", "derive_placeholders",
           "parse_generated", "rewrite", "rewrite_for_task"]
