"""Whether a move compiled to the incumbent's own program, so that timing it could only measure noise.

Two conditions, both required:
- outside its @triton.jit functions the source is unchanged, so every launch (grid, arguments, warps, stages,
  constants) is the same;
- the compiler made the same machine code of every kernel it compiled at the timing shape. The digest covers
  what the GPU loads (evaluator/machine_code.py), so the source file's path and line numbers do not count.

The case that prompted it is warp specialization on Hopper. On an H100 with Triton 3.6, `warp_specialize=True` on
the live search's best matmul compiled to the same registers, shared memory and warps as the best, and timed
within 0.1% of it (+0.1%, −0.0%) in each of two gate decisions
(bench/results/2026-12-06-h100-warp-specialize-coverage). A move like that now costs a compile, not a round.

Machine code is compared at the timing shape alone. A multi-shape task may compile other variants for its other
shapes. The search only proposes. A move skipped here that would have mattered at another shape is a lost
candidate, and never a wrong verdict.
"""

from __future__ import annotations

from collections.abc import Callable

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.proposers.transforms import Analysis


def launch_text(analysis: Analysis) -> str:
    """The source with every @triton.jit function (decorators included) cut out: what sets up and launches them."""
    lines = analysis.source.splitlines()
    for kernel in analysis.kernels.values():
        node = kernel.node
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        for i in range(first - 1, node.end_lineno or node.lineno):
            lines[i] = ""
    return "\n".join(lines)


def _program(facts: list[KernelFacts]) -> list[tuple] | None:
    """Each compiled kernel as (name, machine code, warps, stages, shared memory); None where any code is unknown."""
    if not facts or any(f.code is None for f in facts):
        return None
    return sorted((f.name, f.code, f.num_warps, f.num_stages, f.shared_bytes) for f in facts)


def same_program(incumbent: Analysis, incumbent_facts: Callable[[], list[KernelFacts]], candidate: Analysis,
                 candidate_facts: list[KernelFacts]) -> bool:
    """The candidate launches the incumbent's kernels the same way, and they compiled to the same machine code.
    `incumbent_facts` is asked only when the launches and the candidate's code are known to compare: a moved
    constant or launch option never needs the incumbent compiled."""
    program = _program(candidate_facts)
    return (program is not None and launch_text(candidate) == launch_text(incumbent)
            and program == _program(incumbent_facts()))
