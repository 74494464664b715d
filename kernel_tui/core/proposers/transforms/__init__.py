"""The built-in search's action space: atomic, semantics-preserving edits of a Triton candidate.

`analyze(source)` reads the candidate's AST and finds its knobs, the places where a value can change
without changing what the program computes:

* block sizes and other tiling factors held by module-level constants (`BLOCK_SIZE = 256`), by
  literal keyword arguments of a launch (`BLOCK_M=64`) or passed to a kernel's constexpr parameters;
* `num_warps` and `num_stages` of each launch (inserted when absent, at Triton's default);
* the launch order of a 2-D tiled kernel: the plain row-major pid mapping becomes the grouped
  (swizzled) one with a GROUP_M constexpr, which then is a knob of its own;
* a reduction loop's bounds mask, made a constant where K is a multiple of the loop's block (an EVEN_K
  guard at launch keeps the masked loop for other shapes);
* the grid of a kernel launched with one program per tile (a 1-D grid): made persistent, one program per
  SM looping over the tiles in the kernel's own order (the body runs per tile as it did per program);
* the masked pointer loads of a tl.dot kernel's A and B tiles: loads through tensor descriptors (TMA on
  Hopper), which read out-of-bounds elements as zero as the masks did (a USE_TMA guard at launch keeps the
  pointer loads for layouts TMA cannot address);
* the K loop of a tl.dot kernel launched with one program per tile: split K ways, SPLIT_K programs per tile
  each summing every SPLIT_K-th block of K into an fp32 partial, added in split order by a second kernel
  (deterministic); SPLIT_K then is a knob of its own;
* an elementwise kernel the host launches on a tl.dot kernel's scratch output (a leaky ReLU over its M·N
  elements): applied to the GEMM's accumulator tile before its one store, straight into the second kernel's
  output (the scratch tensor, the second launch and the second kernel go);
* `loop_unroll_factor` of a kernel's loops that load (the loop becomes `tl.range(...)`);
* which loop of a tl.dot kernel is warp-specialized (`tl.range(..., warp_specialize=True)`: the K loop, a
  persistent grid's tile loop, or none), in a kernel of at least 4 warps;
* the eviction policy and the cache modifier of a kernel's `tl.load`s;
* a kernel's size and stride parameters as `tl.constexpr` (compiled once per shape, as torch.compile does
  without dynamic shapes: index math divides by constants).

Every knob is found by an applicability check that errs on the side of offering less: a block that
must cover a row (`BLOCK = next_power_of_2(n_cols)`, or a literal block used only as a tensor shape) is
no knob; a block that multiplies the program id is one only when the launch grid follows the same
constant; an unmasked kernel's block may only shrink (a power of two that divides the shapes keeps
dividing them when halved); `tl.dot` tiles stay in 16..256; register and shared-memory sanity bounds
hold for every assignment offered. An edit replaces (or inserts at) exactly the spans of the literals
it changes, found from the AST's line/column offsets; every other byte of the source is kept.

No torch, no triton import: only `ast` (and `importlib.metadata` to read Triton's version).

The package: `text` (edits as byte spans), `names` (what an AST name stands for), `knobs` (values,
bounds, Knob and Action), `analysis` (discovery and the public API), `families`, `launch_order`, `even_k`,
`persistent`, `tensor_descriptors`, `split_k`, `epilogue`, `warp_specialize` and `sizes` (the knob families; `epilogue_tail` reads the
elementwise kernel an epilogue fusion moves), `constraints` (the sanity bounds).
"""

from __future__ import annotations

from kernel_tui.core.proposers.transforms.analysis import Analysis, analyze
from kernel_tui.core.proposers.transforms.knobs import (
    BLOCK_BOUNDS,
    CACHE_MODIFIERS,
    DEFAULT_GROUP,
    DEFAULT_NUM_STAGES,
    DEFAULT_NUM_WARPS,
    DOT_BLOCK_BOUNDS,
    EVICTION_POLICIES,
    FACTORS,
    GROUP_SIZES,
    LAUNCH_OPTIONS,
    MAX_ACCUMULATOR_PER_THREAD,
    MAX_ELEMENTS_PER_THREAD,
    MIN_ACCUMULATOR_PER_THREAD,
    MIN_ELEMENTS_PER_WARP,
    MIN_TRITON_FOR_UNROLL,
    NUM_STAGES,
    NUM_WARPS,
    OPERAND_BYTES,
    SHARED_MEMORY_BYTES,
    STRUCTURAL_KINDS,
    UNROLL_FACTORS,
    Action,
    Knob,
)
from kernel_tui.core.proposers.transforms.text import Edit, apply_edits, source_hash

__all__ = [
    "Action",
    "Analysis",
    "BLOCK_BOUNDS",
    "CACHE_MODIFIERS",
    "DEFAULT_GROUP",
    "DEFAULT_NUM_STAGES",
    "DEFAULT_NUM_WARPS",
    "DOT_BLOCK_BOUNDS",
    "EVICTION_POLICIES",
    "Edit",
    "FACTORS",
    "GROUP_SIZES",
    "Knob",
    "LAUNCH_OPTIONS",
    "MAX_ACCUMULATOR_PER_THREAD",
    "MAX_ELEMENTS_PER_THREAD",
    "MIN_ACCUMULATOR_PER_THREAD",
    "MIN_ELEMENTS_PER_WARP",
    "MIN_TRITON_FOR_UNROLL",
    "NUM_STAGES",
    "NUM_WARPS",
    "OPERAND_BYTES",
    "SHARED_MEMORY_BYTES",
    "STRUCTURAL_KINDS",
    "UNROLL_FACTORS",
    "analyze",
    "apply_edits",
    "source_hash",
]
