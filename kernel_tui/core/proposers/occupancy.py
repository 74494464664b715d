"""A persistent grid launched at its kernel's occupancy.

The persistent-grid rewrite launches PROGRAMS_PER_SM programs on each SM (transforms/persistent.py); one
per SM suits a large tile that fills its SM, and leaves a small tile's other slots empty: the fixture
matmul's 64×64 tiles run 7 blocks per SM, and one persistent program per SM ran them 6× slower on an H200.
Where the compiler's facts are at hand (a GPU), every candidate with a persistent kernel (the move that
makes it so, and any later move of its tiles or warps) gets PROGRAMS_PER_SM = the blocks per SM the compiler
reports for it. The count is derived, not searched: it is no knob, so it adds no states to the search.
"""

from __future__ import annotations

from dataclasses import replace

from kernel_tui.core.evaluator.kernel_facts import KernelFacts
from kernel_tui.core.proposers.search_steps import Candidate
from kernel_tui.core.proposers.transforms.persistent import ONE_PER_SM, programs_per_sm, with_programs_per_sm

MOST = 16  # programs per SM: more than any kernel's blocks per SM on NVIDIA GPUs to date (32 at most)


def at_occupancy(candidate: Candidate, facts: list[KernelFacts]) -> Candidate:
    """The candidate with PROGRAMS_PER_SM at its kernels' blocks per SM (the most of any, for a module whose
    persistent kernel is one of several), or as it is when the count is unknown or the source has none."""
    blocks = [f.blocks_per_sm for f in facts if f.blocks_per_sm]
    held = programs_per_sm(candidate.source)
    if not blocks or held is None:
        return candidate
    value = min(max(blocks), MOST)
    source = with_programs_per_sm(candidate.source, value)
    if value == held[0] or source is None:
        return candidate
    said = f"{value} per SM (the kernel's {max(blocks)} blocks per SM)"
    change = candidate.change.replace(ONE_PER_SM, said) if ONE_PER_SM in candidate.change else (
        f"{candidate.change}; persistent programs per SM {held[0]} → {value} (the kernel's blocks per SM)")
    return replace(candidate, source=source, change=change)
