"""Inductor's generated module as a task's Triton start: its kernels and one `launch(...)` in the task's order.

    rewrite(generated, launch_arguments=[...], placeholders=[...], outputs=[...], configs=None, single_shape=False)

`placeholders` names, for each of the graph's arguments in order, the task argument it is or a size expression
(`x.shape[0]`); derive_placeholders() makes it from the task tensors the graph takes. Buffers are allocated with
`torch.empty_strided`; a returned buffer that is a plain row-major allocation is replaced by the task's output
tensor, so the kernel that fills it writes the output directly (the policy allows no copy into it). A launch's
block sizes are module-level constants (`XBLOCK_0 = 1024`, one set per launch), its warps and stages literal
keywords of the launch: the forms in which the search's knob analysis (transforms.analyze) finds them. `configs`
(per kernel name, what bench/record_inductor.py keeps in STEM.configs.json) supplies them, else
launch.DEFAULT_CONFIGS.

A `reinterpret_tensor` view at offset 0 is its buffer (a kernel takes the data pointer; the view's strides are in
its index arithmetic); a returned one is the output where it only reshapes a row-major allocation. A view further
into its buffer (a `narrow` the graph writes through, as an exclusive cumsum's shifted rows) is passed to a kernel
as its buffer and the offset, a parameter (`<pointer>_offset`) the kernel adds to that pointer: the policy allows no
`as_strided` on the host. GEMM templates
are template.py's.

Refused, with a one-line Refusal naming what stays eager: extern and aten calls (library GEMMs and the like),
views into the middle of a buffer, templates other than a GEMM's, helpers without a `tl` form, statically shaped
kernels for a task with several shapes, and returned buffers that are not plain row-major allocations.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernel_tui.core.inductor.generated import (
    Alias,
    Alloc,
    AssertSizeStride,
    Bind,
    Delete,
    ExternCall,
    Generated,
    Kernel,
    Launch,
    Refusal,
    Reinterpret,
    Return,
    Unpack,
    View,
    kernel_function,
    parse_generated,
)
from kernel_tui.core.inductor.helpers import SOURCES as HELPER_SOURCES
from kernel_tui.core.inductor.kernels import offset_name, rewrite_kernel
from kernel_tui.core.inductor.launch import (
    MAX_GRID_YZ,
    block_value,
    body_blocks,
    config_for,
    derive_placeholders,
    grid_axes,
    symbol_values,
)
from kernel_tui.core.inductor.symbolic import contiguous_at, is_contiguous, same_numel
from kernel_tui.core.inductor.template import body_constants, template_grid

if TYPE_CHECKING:
    from kernel_tui.core.task import TaskSpec

HEADER = '''"""Triton start from torch.compile (Inductor): its kernels as plain @triton.jit functions and its wrapper's
launches in one launch(); block sizes are the module-level constants, warps and stages the launch's keywords."""

import torch
import triton
import triton.language as tl
'''


class _Rename(ast.NodeTransformer):
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.env:
            return ast.parse(self.env[node.id], mode="eval").body
        return node


@dataclass
class _Host:
    """The launch body being written: names of the generated code as task expressions, and its lines."""

    generated: Generated
    env: dict[str, str]
    device: str
    lines: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    launched: int = 0
    offsets: dict[str, tuple[str, str]] = field(default_factory=dict)  # a view further in -> (its buffer, offset)
    pointer_offsets: dict[str, set[str]] = field(default_factory=dict)  # kernel -> pointers passed with an offset

    def expr(self, text: str, *, calls: bool = False) -> str:
        tree = ast.parse(text, mode="eval")
        size_math = ("max", "min")  # Inductor's size expressions clamp with the builtins: `max(1, s27 // 8)`
        if not calls and any(isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in size_math)
                             for n in ast.walk(tree)):
            raise Refusal(f"launch argument {text} is a call (a view or conversion) the rewrite does not make: "
                          "keep the eager start")
        shifted = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & set(self.offsets))
        if shifted:
            raise Refusal(f"{shifted[0]}, a view into the middle of a buffer, is used other than as a kernel's "
                          "argument, which needs as_strided, which the policy allows not: keep the eager start")
        return ast.unparse(_Rename(self.env).visit(tree))

    def view(self, op: Reinterpret, view: View) -> None:
        base, offset = self.env.get(view.source, view.source), view.offset
        if view.source in self.offsets:  # a view of a view: the offsets add up
            base, first = self.offsets[view.source]
            offset = f"({first}) + ({offset})"
        if offset == "0":
            self.env[op.name] = base
        else:
            self.offsets[op.name] = (base, offset)

    def arguments(self, kernel: Kernel, args: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """A launch's positional arguments, and keywords for the pointers passed as a buffer and an offset."""
        positional, keywords = [], []
        for param, arg in zip(kernel.runtime_params, args):
            if arg in self.offsets:
                base, offset = self.offsets[arg]
                positional.append(base)
                keywords.append(f"{offset_name(kernel, param)}={self.expr(offset)}")
                self.pointer_offsets.setdefault(kernel.name, set()).add(param)
            else:
                positional.append(self.expr(arg))
        return positional, keywords

    def launch(self, op: Launch, configs: dict | None) -> None:
        kernel = self.generated.kernels[op.kernel]
        if kernel.heuristic == "template":
            self.launch_template(kernel, op, configs)
            return
        params = kernel.runtime_params
        if len(op.args) != len(params):
            raise Refusal(f"kernel {kernel.name} launched with {len(op.args)} arguments for {len(params)} parameters")
        args, keywords = self.arguments(kernel, op.args)
        by_param = dict(zip(params, args))
        config = config_for(kernel, configs)
        i = self.launched
        self.launched += 1
        fixed = body_blocks(kernel)
        for name in kernel.constexprs:
            self.constants.append(f"{name}_{i} = {block_value(kernel, name, config)}")
            keywords.append(f"{name}={name}_{i}")
        grid = []
        for _axis, role in sorted(grid_axes(kernel).items()):
            prefix, _, overflow = role.partition(":")
            block = f"{prefix.upper()}BLOCK"
            size = by_param.get(f"{prefix}numel")
            if size is None:
                raise Refusal(f"kernel {kernel.name} takes no {prefix}numel: its grid is unknown")
            step = f"{block}_{i}" if block in kernel.constexprs else str(fixed.get(block, 1))
            programs = f"triton.cdiv({size}, {step})"
            if role == "y" and "y:overflow" in grid_axes(kernel).values():
                programs = f"min({programs}, {MAX_GRID_YZ})"
            grid.append(f"triton.cdiv({programs}, {MAX_GRID_YZ})" if overflow else programs)
        # warps and stages as literals at the launch: the form transforms.analyze() offers as knobs
        keywords += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
        self.lines.append(f"{kernel.name}[({', '.join(grid)},)]({', '.join(args + keywords)})")


    def launch_template(self, kernel: Kernel, op: Launch, configs: dict | None) -> None:
        """A GEMM template: its tile and group sizes as module constants, the grid's axis 0 from them."""
        n = len(kernel.params)
        if len(op.args) != n + kernel.grid_args or kernel.grid_args != 3:
            raise Refusal(f"template {kernel.name} launched with {len(op.args)} arguments for {n} parameters "
                          f"and a grid of {kernel.grid_args}: keep the eager start")
        m, n_size, axis1, axis2 = template_grid(kernel, op.args[:n], op.args[n:])
        args, keywords = self.arguments(kernel, op.args[:n])
        i = self.launched
        self.launched += 1
        for name, value in body_constants(kernel_function(kernel)).items():
            self.constants.append(f"{name}_{i} = {value}")
            keywords.append(f"{name}={name}_{i}")
        warps, stages = kernel.warps_stages or (config_for(kernel, configs).num_warps,
                                                config_for(kernel, configs).num_stages)
        keywords += [f"num_warps={warps}", f"num_stages={stages}"]
        grid = (f"triton.cdiv({self.expr(m)}, BLOCK_M_{i}) * triton.cdiv({self.expr(n_size)}, BLOCK_N_{i})",
                self.expr(axis1), self.expr(axis2))
        self.lines.append(f"{kernel.name}[({', '.join(grid)})]({', '.join(args + keywords)})")


def _views_to_alloc(expr: str, generated: Generated) -> tuple[str, list[View]]:
    """A returned expression followed back to the buffer under it: that name, and every view on the way."""
    aliases = {op.name: op.source for op in generated.of(Alias)}
    named = {op.name: op.view for op in generated.of(Reinterpret) if op.view is not None}
    views: list[View] = []
    inline = View.parse(expr)
    if inline is not None:
        views.append(inline)
        expr = inline.source
    while expr in aliases or expr in named:
        if expr in named:
            views.append(named[expr])
            expr = named[expr].source
        else:
            expr = aliases[expr]
    return expr, views


def _output_buffers(generated: Generated, outputs: list[str],
                    task_sizes: list[dict[str, int]] | None = None) -> dict[str, str]:
    """Each returned buffer's allocation -> the task output it becomes. A returned view of an allocation counts
    where every view on the way is row-major over the same elements (a reshape): the output then stands for the
    allocation. Row-major means at random sizes, or at each of the task's own (`task_sizes`: every size
    symbol's value at each task shape), where the check on the device then confirms it."""

    def row_major(sizes: tuple[str, ...], strides: tuple[str, ...]) -> bool:
        return is_contiguous(sizes, strides) or contiguous_at(sizes, strides, task_sizes or [])

    allocs = {op.name: op for op in generated.of(Alloc)}
    returns = generated.of(Return)
    returned = list(returns[-1].exprs) if returns else []
    if len(returned) != len(outputs):
        raise Refusal(f"the graph returns {len(returned)} tensors, the task has {len(outputs)} outputs: "
                      "keep the eager start")
    chosen = {}
    for expr, out in zip(returned, outputs):
        root, views = _views_to_alloc(expr, generated)
        alloc = allocs.get(root)
        reshapes = alloc is not None and all(
            v.offset == "0" and row_major(v.sizes, v.strides) and same_numel(v.sizes, alloc.sizes) for v in views)
        if alloc is None or not row_major(alloc.sizes, alloc.strides) or alloc.name in chosen or not reshapes:
            raise Refusal(f"returned {expr.split('(')[0]}{'(...)' if '(' in expr else ''} is not a plain row-major "
                          f"buffer to write {out} through, and the policy allows no copy into an output: "
                          "keep the eager start")
        chosen[alloc.name] = out
    return chosen


def _placeholder_env(generated: Generated, placeholders: list[str]) -> dict[str, str]:
    unpack = generated.of(Unpack)
    names = unpack[0].names if unpack else ()
    if len(names) != len(placeholders):
        raise Refusal(f"the graph takes {len(names)} arguments, {len(placeholders)} placeholders were given")
    return dict(zip(names, placeholders))


def _device(generated: Generated, env: dict[str, str]) -> str:
    tensors = [env[op.name] for op in generated.of(AssertSizeStride) if op.name in env]
    if not tensors:
        raise Refusal("the graph takes no tensor to place its buffers beside: keep the eager start")
    return f"{tensors[0]}.device"


def _refuse_unsupported(generated: Generated) -> None:
    for op in generated.ops:
        if isinstance(op, ExternCall):
            raise Refusal(f"extern call {op.target} stays a library call: keep the eager start")
        if isinstance(op, Reinterpret) and op.view is None:
            raise Refusal(f"{op.name} = {op.expr.split('(')[0]}(...) is a view the rewrite cannot read: "
                          "keep the eager start")


def _host_body(host: _Host, outputs: dict[str, str], configs: dict | None) -> None:
    for op in host.generated.ops:
        if isinstance(op, Bind):
            host.lines.append(f"{op.name} = {host.expr(op.expr)}")
        elif isinstance(op, Alias):
            host.env[op.name] = host.env.get(op.source, op.source)
        elif isinstance(op, Reinterpret) and op.view is not None:
            # a kernel takes a view's data pointer (its strides are in the kernel's index arithmetic): at offset 0
            # the view is its buffer, further in the buffer with an offset the kernel adds
            host.view(op, op.view)
        elif isinstance(op, Alloc):
            if op.name in outputs:
                host.env[op.name] = outputs[op.name]
                continue
            # "(a,)" for one size, "()" for a 0-d buffer (a norm's scalar): "(,)" is no Python
            sizes, strides = (host.expr(f"({''.join(f'{e}, ' for e in t)})") for t in (op.sizes, op.strides))
            host.lines.append(f"{op.name} = torch.empty_strided({sizes}, {strides}, dtype={op.dtype}, "
                              f"device={host.device})")
        elif isinstance(op, Launch):
            host.launch(op, configs)
        elif not isinstance(op, Unpack | AssertSizeStride | Delete | Return):
            raise Refusal(f"{type(op).__name__} in the generated call() is not one the rewrite knows")


def _refuse_mixed_offsets(host: _Host) -> None:
    """A kernel that takes a pointer with an offset takes it so at every launch (the keyword has no default)."""
    for kernel, params in host.pointer_offsets.items():
        for line in host.lines:
            shifted = [offset_name(host.generated.kernels[kernel], p) for p in params]
            if line.startswith(f"{kernel}[") and any(f"{name}=" not in line for name in shifted):
                raise Refusal(f"kernel {kernel} is launched both on a view into the middle of a buffer and on a "
                              "plain buffer: keep the eager start")


def rewrite(
    generated: Generated,
    *,
    launch_arguments: list[str],
    placeholders: list[str],
    outputs: list[str],
    configs: dict[str, dict] | None = None,
    single_shape: bool = False,
    notes: list[str] | None = None,
    task_sizes: list[dict[str, int]] | None = None,
) -> str:
    """The baseline source; raises Refusal (a ValueError) with one line where the start must stay eager.
    `notes` gets a line for what the check must settle (kernels with a size fixed at the captured shape).
    `task_sizes`: each size symbol's value at each of the task's shapes (launch.symbol_values), where known."""
    _refuse_unsupported(generated)
    for kernel in generated.kernels.values():  # a kernel's own refusal first: it says the most
        rewrite_kernel(kernel, single_shape=single_shape)
    env = _placeholder_env(generated, placeholders)
    host = _Host(generated, env, _device(generated, env))
    _host_body(host, _output_buffers(generated, outputs, task_sizes), configs)
    if not host.launched:
        raise Refusal("the generated call() launches no Triton kernel: keep the eager start")
    _refuse_mixed_offsets(host)
    kernels = []
    needs: set[str] = set()
    taken: dict[str, str] = {}  # the kernels' own jit functions (combine functions), one copy of each
    for kernel in generated.kernels.values():
        source, needed = rewrite_kernel(kernel, single_shape=single_shape, taken=taken,
                                        offsets=host.pointer_offsets.get(kernel.name, set()))
        kernels.append(source)
        needs |= needed
        if "static" in needed and notes is not None:
            notes.append(f"kernel {kernel.name} has sizes fixed at the captured shape: only the check at every "
                         "shape of the task says whether they hold")
    header = HEADER + ("from triton.language.extra import libdevice\n" if "libdevice" in needs else "")
    body = "\n".join(f"    {line}" for line in host.lines)
    helpers = [source for group, source in HELPER_SOURCES.items() if group in needs]
    parts = [header, "\n".join(host.constants) + "\n", *helpers, *kernels,
             f"def launch({', '.join(launch_arguments)}):\n{body}\n"]
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts)


def rewrite_for_task(source: str, spec: TaskSpec, tensors: list[str], configs: dict[str, dict] | None = None) -> str:
    """The start for a task from one generated module: `tensors` names the task tensors the graph takes, in
    order; its outputs, launch order and shape count come from the task."""
    generated = parse_generated(source)
    placeholders = derive_placeholders(generated, tensors)
    return rewrite(
        generated,
        launch_arguments=list(spec.launch_arguments),
        placeholders=placeholders,
        outputs=[t.name for t in spec.tensors if t.kind == "output"],
        configs=configs,
        single_shape=len({tuple(sorted(c.dims.items())) for c in spec.all_shapes()}) == 1,
        task_sizes=symbol_values(generated, placeholders, spec),
    )
