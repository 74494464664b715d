"""The action space's vocabulary: the values each knob may take, the sanity bounds, the knob and the
action, and what discovery records about each kernel and launch."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field

NUM_WARPS = (1, 2, 4, 8, 16)
NUM_STAGES = (1, 2, 3, 4, 5)
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3  # Triton's default on NVIDIA GPUs
EVICTION_POLICIES = ("", "evict_first", "evict_last")
CACHE_MODIFIERS = ("", ".cg")
# tl.dot on fp32 operands: "ieee" multiplies in full fp32 on the FMA units; "tf32x3" splits each operand into
# a TF32 high and low part and adds three tensor-core products, for close to fp32 error (plain "tf32", one
# product with a 10-bit mantissa, is no precision-keeping move and is never offered)
DOT_PRECISIONS = ("ieee", "tf32x3")
TENSOR_CORE_PRECISION = "tf32x3"  # an fp32 tl.dot moved from the FMA units onto the tensor cores
UNROLL_FACTORS = (1, 2, 4)
GROUP_SIZES = (1, 2, 4, 8, 16)
DEFAULT_GROUP = 8
FACTORS = (1, 2, 4, 8)  # a tiling factor that is not a tensor dimension
BLOCK_BOUNDS = (32, 8192)  # a 1-D block of elements
DOT_BLOCK_BOUNDS = (16, 256)  # tl.dot needs every dimension >= 16
MAX_ELEMENTS_PER_THREAD = 64  # non-dot kernels: a block's elements per thread (registers)
MIN_ELEMENTS_PER_WARP = 16  # non-dot kernels: no warp left (almost) idle
MAX_ACCUMULATOR_PER_THREAD = 256  # tl.dot kernels: fp32 accumulator registers per thread
MIN_ACCUMULATOR_PER_THREAD = 4
SHARED_MEMORY_BYTES = 227 * 1024  # per block on an H100/H200
OPERAND_BYTES = 2  # fp16/bf16 tiles staged in shared memory
MIN_TRITON_FOR_UNROLL = (3, 2)  # tl.range(..., loop_unroll_factor=)
# tl.range(..., warp_specialize=): in Triton's language since 3.3; from 3.4, as its tutorials use it on Hopper
MIN_TRITON_FOR_WARP_SPECIALIZE = (3, 4)
MIN_WARPS_TO_SPECIALIZE = 4  # Triton refuses a warp-specialized loop in a kernel of fewer warps (3.5 on)

# Knobs whose change rewrites code rather than a literal: the source is analysed afresh after one
STRUCTURAL_KINDS = frozenset({"launch_order", "k_mask", "grid", "loads"})
STRUCTURAL_KINDS |= {"split_k"}  # split_k.py
STRUCTURAL_KINDS |= {"epilogue"}  # epilogue.py
# warp_specialize.py: a keyword, but a change of how the compiler splits the loop's work among warps, and a move
# the agent should hear of with the others
STRUCTURAL_KINDS |= {"warp_specialize"}
STRUCTURAL_KINDS |= {"sizes"}  # sizes.py: parameters become constexpr, so a kernel compiles per shape
# the constexpr the unmasked K loop adds (even_k.py), computed at launch from the block it guards
EVEN_K_GUARD = "EVEN_K"
# the constexpr the tensor-descriptor loads add (tensor_descriptors.py), computed at launch from the operands' layout
TMA_GUARD = "USE_TMA"

LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid", "warmup"}


@functools.cache
def triton_at_least(minimum: tuple[int, int]) -> bool:
    """Whether the installed Triton is at least `minimum` (major, minor), read from its metadata."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return False
    try:
        v = version("triton")
    except PackageNotFoundError:
        return False
    nums = tuple(int(x) for x in re.findall(r"\d+", v)[:2])
    return len(nums) == 2 and nums >= minimum


def triton_supports_unroll() -> bool:
    return triton_at_least(MIN_TRITON_FOR_UNROLL)


def triton_supports_warp_specialize() -> bool:
    return triton_at_least(MIN_TRITON_FOR_WARP_SPECIALIZE)


@dataclass(frozen=True)
class Knob:
    id: str  # stable across edits: const:BLOCK_SIZE, launch:add_kernel:0:num_warps, kernel:k:eviction_policy
    kind: str  # block, factor, group, num_warps, num_stages, unroll, eviction_policy, cache_modifier, launch_order,
    # k_mask, grid, loads
    # split_k, splits (split_k.py), epilogue (epilogue.py), warp_specialize (warp_specialize.py), sizes (sizes.py)
    label: str  # how the change text names it
    value: int | str
    domain: tuple  # the values it may take (the assignment's constraints come on top)
    numeric: bool = True
    where: str = ""  # " (loop 1 of k)" where the label alone is ambiguous
    dot: bool = False  # a tile of, or a launch option of, a kernel that calls tl.dot
    kernels: frozenset[str] = frozenset()  # the kernels a tile or launch option is of (coupled moves stay in one)


@dataclass(frozen=True)
class Action:
    knob: str
    kind: str
    old: int | str
    new: int | str
    change: str

    @property
    def key(self) -> str:
        return f"{self.knob}={self.new}"


@dataclass
class Kernel:
    """A @triton.jit function as discovery reads it: its parameters and what each one does."""

    node: ast.FunctionDef
    name: str
    params: list[str]
    constexpr: set[str]
    tuned: bool  # @triton.autotune / @triton.heuristics: configs own its launch parameters
    has_dot: bool = False
    unmasked: bool = False
    pipelined: bool = False  # a loop that loads: num_stages matters
    roles: dict[str, set[str]] = field(default_factory=dict)
    loads: list[ast.Call] = field(default_factory=list)
    dots: list[ast.Call] = field(default_factory=list)  # tl.dot calls


@dataclass
class Launch:
    """One `kernel[grid](...)` call in a host function: what it binds to each parameter."""

    call: ast.Call
    kernel: Kernel
    ordinal: int
    host: ast.FunctionDef
    bindings: dict[str, ast.AST]  # kernel parameter -> the expression passed
    options: dict[str, ast.keyword]
    grid_refs: set[str]
    has_star: bool


SHAPE_FUNCS = {"arange", "zeros", "full", "reshape", "view", "broadcast_to", "empty"}
RANGE_FUNCS = {"range", "static_range"}
