"""The host side of the rewrite: placeholders as task arguments, size symbols, buffers, grids and launch configs.

Inductor's `call(args)` takes the graph's placeholders in order: the compiled function's tensors, with a size
symbol inserted where dynamic shapes made one an argument (`s77 = arg0_1`). A symbol bound to a placeholder
that is the size i of tensor T in an `assert_size_stride` is `T.shape[i]`; tensors are named by the caller.

A kernel's grid comes from its body: each `<p>offset = tl.program_id(n) * <P>BLOCK` (p in x, y, z) makes axis n
`triton.cdiv(<p>numel, <P>BLOCK)`, with `<p>numel` the launch's argument at that parameter. Inductor's y offset
`(tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK` (Grid2DWithYZOverflow) takes at most
65535 programs on axis 1 and the rounds of them on axis 2; the programs past ynumel are masked by the kernel. A block set inside
the body (`XBLOCK: tl.constexpr = 1`, Inductor's no-x-dim persistent reductions) is a literal in the grid; a
block that is a constexpr parameter is a module-level constant (`XBLOCK_0 = 1024`) the search can change.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel_tui.core.inductor.generated import AssertSizeStride, Bind, Generated, Kernel, Refusal, Unpack, kernel_function

if TYPE_CHECKING:
    from kernel_tui.core.task import TaskSpec
    from kernel_tui.core.task.parts import TensorSpec

PREFIXES = ("x", "y", "z")
OVERFLOW = -1
MAX_GRID_YZ = 65535  # CUDA's limit on grid dimensions y and z


@dataclass(frozen=True)
class LaunchConfig:
    """Block sizes (constexpr keyword arguments), warps and stages of one kernel's launch."""

    kwargs: dict[str, int]
    num_warps: int
    num_stages: int

    @classmethod
    def from_record(cls, entry: dict) -> LaunchConfig:
        """From `{"kwargs": ..., "num_warps": ..., "num_stages": ...}`, or a configs.json entry (its first kept)."""
        if "kept" in entry:
            if not entry["kept"]:
                raise ValueError("a configs.json entry with no kept config")
            entry = entry["kept"][0]
        return cls(dict(entry.get("kwargs", {})), int(entry.get("num_warps", 4)), int(entry.get("num_stages", 1)))


# Without a recorded config: Inductor's own shapes of config, not tuned. A pointwise kernel takes 1024 elements
# a program (32 x 32 tiles when 2-D); a looped reduction one row a program in chunks of 1024; a persistent
# reduction one row a program, its R0_BLOCK being fixed in its body. Inductor uses one stage off the GEMMs.
DEFAULT_CONFIGS = {
    "pointwise": LaunchConfig({"XBLOCK": 1024, "YBLOCK": 32, "ZBLOCK": 16}, num_warps=4, num_stages=1),
    "pointwise_2d": LaunchConfig({"XBLOCK": 32, "YBLOCK": 32, "ZBLOCK": 16}, num_warps=4, num_stages=1),
    "reduction": LaunchConfig({"XBLOCK": 1, "R0_BLOCK": 1024, "R1_BLOCK": 16}, num_warps=8, num_stages=1),
    "persistent_reduction": LaunchConfig({"XBLOCK": 1}, num_warps=4, num_stages=1),
    "template": LaunchConfig({}, num_warps=4, num_stages=3),  # its decorator says; this is its usual choice
}


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def default_config(kernel: Kernel) -> LaunchConfig:
    two_d = kernel.heuristic == "pointwise" and "YBLOCK" in kernel.constexprs
    config = DEFAULT_CONFIGS["pointwise_2d" if two_d else kernel.heuristic]
    rows = kernel.size_hints.get("r0_", 0)
    if kernel.heuristic == "reduction" and 0 < rows < config.kwargs["R0_BLOCK"]:
        # rows shorter than a chunk at the captured shape (a cumprod over 4 values, say): a chunk as long as a
        # row, and as many rows a program as fill 1024 elements (at most 64, as Inductor's own outer configs);
        # one row a program of 1024 lanes would leave most of them masked, and the interpreter crawls through it
        width = max(4, _pow2_at_least(rows))
        xblock = max(1, min(1024 // width, 64, _pow2_at_least(kernel.size_hints.get("x", 1))))
        config = LaunchConfig({**config.kwargs, "XBLOCK": xblock, "R0_BLOCK": width}, config.num_warps,
                              config.num_stages)
    return config


def config_for(kernel: Kernel, configs: dict | None) -> LaunchConfig:
    recorded = (configs or {}).get(kernel.name)
    config = LaunchConfig.from_record(recorded) if recorded else default_config(kernel)
    fallback = default_config(kernel)
    missing = [c for c in kernel.constexprs if c not in config.kwargs and c not in fallback.kwargs]
    if missing:
        raise Refusal(f"kernel {kernel.name}: no value for its constexpr {missing[0]}: keep the eager start")
    return config


def block_value(kernel: Kernel, name: str, config: LaunchConfig) -> int:
    return config.kwargs.get(name, default_config(kernel).kwargs.get(name, 1))


def derive_placeholders(generated: Generated, tensors: list[str]) -> list[str]:
    """Each graph placeholder as the task sees it: `tensors` names the tensor placeholders in order; a size
    symbol's placeholder becomes `T.shape[i]` where an assert_size_stride has it as size i of tensor T."""
    unpack = generated.of(Unpack)
    if not unpack:
        return []
    asserted = {op.name: op for op in generated.of(AssertSizeStride)}
    tensor_placeholders = [n for n in unpack[0].names if n in asserted]
    if len(tensor_placeholders) != len(tensors):
        raise Refusal(f"the graph takes {len(tensor_placeholders)} tensors, {len(tensors)} task tensors were named")
    named = dict(zip(tensor_placeholders, tensors))
    symbol_of = {op.expr: op.name for op in generated.of(Bind)}
    result = []
    for placeholder in unpack[0].names:
        if placeholder in named:
            result.append(named[placeholder])
            continue
        symbol = symbol_of.get(placeholder, placeholder)
        where = next(((named[a.name], i) for a in asserted.values() for i, s in enumerate(a.sizes) if s == symbol), None)
        if where is None:
            raise Refusal(f"graph argument {placeholder} is neither a tensor nor a size of one: name it in placeholders")
        result.append(f"{where[0]}.shape[{where[1]}]")
    return result


def asserted_tensors(generated: Generated, placeholders: list[str], spec: TaskSpec) -> list[tuple[AssertSizeStride, TensorSpec]]:
    """Each assert_size_stride of the generated call with the task tensor its graph argument is."""
    unpacked = next((op.names for op in generated.of(Unpack)), ())
    by_arg: dict[str, str] = dict(zip(unpacked, placeholders))
    tensors = {t.name: t for t in spec.tensors}
    return [(op, tensors[by_arg[op.name]]) for op in generated.of(AssertSizeStride) if by_arg.get(op.name) in tensors]


def symbol_values(generated: Generated, placeholders: list[str], spec: TaskSpec) -> list[dict[str, int]]:
    """Each size symbol of the generated call at each of the task's shapes. A symbol is the size of a task tensor
    that an assert_size_stride names (`s35` in `(s35, s27)` of the weight), or a placeholder that is one, bound
    to a symbol or not (`s87 = arg0_1`, where arg0_1 is `x.shape[1]`)."""
    unpacked = next((op.names for op in generated.of(Unpack)), ())
    by_arg: dict[str, str] = dict(zip(unpacked, placeholders))
    symbol_of: dict[str, str] = {op.expr: op.name for op in generated.of(Bind)}
    tensors = {t.name: t for t in spec.tensors}
    asserted = asserted_tensors(generated, placeholders, spec)
    found = []
    for case in spec.all_shapes():
        env: dict[str, int] = {}
        for arg, placeholder in by_arg.items():
            size = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", placeholder)
            if size and size.group(1) in tensors:
                env[symbol_of.get(arg, arg)] = spec.tensor_shape(tensors[size.group(1)], case.dims)[int(size.group(2))]
        for op, tensor in asserted:
            env.update({s: n for s, n in zip(op.sizes, spec.tensor_shape(tensor, case.dims)) if s.isidentifier()})
        found.append(env)
    return found


def _program_axis(value: ast.expr, block: str) -> int | None:
    """n where `value` is `tl.program_id(n) * block`, or `tl.program_id(n).to(tl.int64) * block` (Inductor's
    64-bit indexing, where an index can pass 2**31); OVERFLOW for Inductor's y axis spilling into z."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) and ast.unparse(value.right) == block):
        return None
    left = value.left
    if (isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "to"
            and [ast.unparse(a) for a in left.args] == ["tl.int64"] and not left.keywords):
        left = left.func.value  # the cast widens the program's index; the axis it tiles is the same
    if ast.unparse(left) == "tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)":
        return OVERFLOW
    if not (isinstance(left, ast.Call) and ast.unparse(left.func) == "tl.program_id"):
        return None
    args = left.args
    if len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, int):
        return args[0].value
    return None


def grid_axes(kernel: Kernel) -> dict[int, str]:
    """Program axis -> the prefix it tiles ('x', 'y'); refused where the body computes its offsets otherwise."""
    fn = kernel_function(kernel)
    axes: dict[int, str] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        target = node.targets[0].id
        if target not in {f"{p}offset" for p in PREFIXES}:
            continue
        prefix = target[0]
        axis = _program_axis(node.value, f"{prefix.upper()}BLOCK")
        if axis is None:
            raise Refusal(f"kernel {kernel.name}: its {target} is not tl.program_id(n) * {prefix.upper()}BLOCK, "
                          "the grid the rewrite knows: keep the eager start")
        if axis == OVERFLOW:  # axis 1 holds at most MAX_GRID_YZ programs, axis 2 counts the rounds of it
            axes[1], axes[2] = prefix, f"{prefix}:overflow"
        else:
            axes[axis] = prefix
    if sorted(axes) != list(range(len(axes))) or "x" not in axes.values():
        raise Refusal(f"kernel {kernel.name}: program axes {sorted(axes)} do not make a grid the rewrite knows")
    return axes


def body_blocks(kernel: Kernel) -> dict[str, int]:
    """Blocks the kernel fixes in its body: `R0_BLOCK: tl.constexpr = 512`."""
    found = {}
    for stmt in kernel_function(kernel).body:
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id.endswith("BLOCK")
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, int)):
            found[stmt.target.id] = stmt.value.value
    return found
