"""The analysis of one source: its kernels and launches, read once from the AST, and the public API
the search uses (the knob assignment, the actions, their sanity bounds, applying one).

The knob families (`families`, `launch_order`, `even_k`, `persistent`, `tensor_descriptors`, `split_k`,
`epilogue`, `warp_specialize`) and the sanity bounds (`constraints`) are mixins of Analysis: each finds its knobs or bounds from what discovery here recorded.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from kernel_tui.core.astutil import dotted_name
from kernel_tui.core.proposers.transforms.constraints import SanityBounds
from kernel_tui.core.proposers.transforms.epilogue import EpilogueFusion
from kernel_tui.core.proposers.transforms.epilogue import describe as describe_epilogue
from kernel_tui.core.proposers.transforms.even_k import EvenKLoop
from kernel_tui.core.proposers.transforms.families import KnobFamilies
from kernel_tui.core.proposers.transforms.knobs import (
    DEFAULT_GROUP,
    LAUNCH_OPTIONS,
    RANGE_FUNCS,
    SHAPE_FUNCS,
    STRUCTURAL_KINDS,
    Action,
    Kernel,
    Knob,
    Launch,
    triton_supports_unroll,
)
from kernel_tui.core.proposers.transforms.launch_order import GroupedLaunchOrder
from kernel_tui.core.proposers.transforms.names import import_aliases, int_value
from kernel_tui.core.proposers.transforms.persistent import ONE_PER_SM, PersistentGrid
from kernel_tui.core.proposers.transforms.sizes import SizeConstants
from kernel_tui.core.proposers.transforms.sizes import describe as describe_sizes
from kernel_tui.core.proposers.transforms.split_k import SplitK
from kernel_tui.core.proposers.transforms.split_k import describe as describe_split_k
from kernel_tui.core.proposers.transforms.tensor_descriptors import TensorDescriptorLoads
from kernel_tui.core.proposers.transforms.text import Edit, SourceText, apply_edits
from kernel_tui.core.proposers.transforms.warp_specialize import WarpSpecialization
from kernel_tui.core.proposers.transforms.warp_specialize import describe as describe_warp_specialize


class Analysis(KnobFamilies, GroupedLaunchOrder, EvenKLoop, PersistentGrid, TensorDescriptorLoads, SplitK,
               EpilogueFusion, WarpSpecialization, SizeConstants, SanityBounds):
    """The knobs of one source and the actions that change one of them (valid by construction)."""

    def __init__(self, source: str, *, allow_unroll: bool | None = None) -> None:
        self.source = source
        self.text = SourceText(source)
        self.knobs: dict[str, Knob] = {}
        self._editors: dict[str, Callable[[int | str], list[Edit]]] = {}
        self._constraints: list[tuple[str, Callable[[dict], float | None]]] = []
        self.allow_unroll = triton_supports_unroll() if allow_unroll is None else allow_unroll
        self._walks: dict[int, list[ast.AST]] = {}
        self._name_sets: dict[int, set[str]] = {}
        self._resolved: dict[int, str | None] = {}
        self.aliases: dict[str, str] = {}
        self.tl: str | None = None
        self.kernels: dict[str, Kernel] = {}
        self.launches: list[Launch] = []
        self.consts: dict[str, ast.Constant] = {}
        self.tree: ast.Module | None = None
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self.tree = tree
        self.aliases = import_aliases(tree)
        self.tl = self._tl_prefix()
        try:
            self._find_consts(tree)
            self._find_kernels(tree)
            self._find_launches(tree)
            self._block_knobs()
            self._launch_option_knobs()
            self._load_knobs()
            self._precision_knobs()
            self._unroll_knobs()
            self._launch_order_knobs()
            self._even_k_knobs()
            self._persistent_grid_knobs()
            self._tensor_descriptor_knobs()
            self._split_k_knobs()
            self._epilogue_knobs()
            self._warp_specialize_knobs()
            self._size_knobs()
            self._sanity_constraints()
        except (ValueError, KeyError, IndexError, AttributeError, TypeError, RecursionError):
            # a source this analysis misreads somewhere: better no knob than a wrong one
            self.knobs, self._editors, self._constraints = {}, {}, []

    # --- memoised tree walks (the tree never changes) ------------------------------------------------
    def _walk(self, node: ast.AST) -> list[ast.AST]:
        got = self._walks.get(id(node))
        if got is None:
            got = [node]
            for child in ast.iter_child_nodes(node):
                got.extend(self._walk(child))
            self._walks[id(node)] = got
        return got

    def _names(self, node: ast.AST) -> set[str]:
        got = self._name_sets.get(id(node))
        if got is None:
            got = {n.id for n in self._walk(node) if isinstance(n, ast.Name)}
            self._name_sets[id(node)] = got
        return got

    def _stores(self, node: ast.AST) -> Counter[str]:
        """How many times each name is bound (assigned, augmented, a loop's target) within `node`."""
        return Counter(n.id for n in self._walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))

    # --- public ---------------------------------------------------------------------------------
    @property
    def assignment(self) -> dict[str, int | str]:
        return {k: knob.value for k, knob in sorted(self.knobs.items())}

    def violations(self, assignment: dict) -> dict[str, float]:
        """The sanity bounds an assignment breaks, each with how far (log2 of the excess)."""
        out = {}
        for name, excess in self._constraints:
            e = excess(assignment)
            if e is not None and e > 1e-9:
                out[name] = e
        return out

    def allowed(self, assignment: dict, before: dict[str, float]) -> bool:
        """No bound broken that `before` kept, none broken further (a source that already breaks one
        may still move everything else, and back toward it)."""
        return all(e <= before.get(name, 0.0) + 1e-9 for name, e in self.violations(assignment).items())

    def actions(self) -> list[Action]:
        current = self.assignment
        before = self.violations(current)
        out: list[Action] = []
        for kid, knob in sorted(self.knobs.items()):
            for v in knob.domain:
                if v == knob.value:
                    continue
                new = {**current, kid: v}
                if not self.allowed(new, before):
                    continue
                out.append(Action(knob=kid, kind=knob.kind, old=knob.value, new=v, change=self.describe(knob, v)))
        return out

    def assignment_after(self, action: Action) -> dict[str, int | str]:
        """The knob assignment of `apply(action)` (a structural change is analysed afresh)."""
        if action.kind in STRUCTURAL_KINDS:
            return analyze(self.apply(action), allow_unroll=self.allow_unroll).assignment
        return {**self.assignment, action.knob: action.new}

    def apply(self, action: Action) -> str:
        knob = self.knobs[action.knob]
        if knob.value != action.old:
            raise ValueError(f"{action.knob} is {knob.value!r}, not {action.old!r}")
        return apply_edits(self.source, self._editors[action.knob](action.new))

    def describe(self, knob: Knob, new: int | str) -> str:

        if knob.kind == "launch_order":
            return f"grouped launch order GROUP_M={DEFAULT_GROUP}"
        if knob.kind == "k_mask":
            where = f" of {knob.label}" if self._kernel_count() > 1 else ""
            return f"unmasked K loop{where} when K is a multiple of its block (EVEN_K guard at launch)"
        if knob.kind == "split_k":
            return describe_split_k(knob, self._kernel_count())
        if knob.kind == "epilogue":
            return describe_epilogue(knob)
        if knob.kind == "warp_specialize":
            return describe_warp_specialize(knob, new, self._kernel_count())
        if knob.kind == "sizes":
            return describe_sizes(knob, new, self._kernel_count())
        if knob.kind == "grid":
            where = f" ({knob.label})" if self._kernel_count() > 1 else ""
            return f"persistent grid over the SMs{where}: programs loop over the tiles, {ONE_PER_SM}"
        if knob.kind == "loads":
            where = f" of {knob.label}" if self._kernel_count() > 1 else ""
            return f"tl.dot operands{where} loaded through tensor descriptors (TMA; USE_TMA guard at launch)"
        if knob.kind in ("eviction_policy", "cache_modifier"):
            where = f"on loads of {knob.label}" if self._kernel_count() > 1 else "on loads"
            if knob.value == "":
                return f"{knob.kind} {new} {where}"
            return f"{knob.kind} {knob.value} → {new or 'default'} {where}"
        if knob.kind == "input_precision":
            where = f" (tl.dot of {knob.label})" if self._kernel_count() > 1 else " (tl.dot)"
            return f"input_precision {knob.value} → {new}{where}"
        return f"{knob.label} {knob.value} → {new}{knob.where}"

    # --- discovery ------------------------------------------------------------------------------
    def _kernel_count(self) -> int:
        return len(self.kernels)

    def _tl_prefix(self) -> str | None:
        for alias, full in self.aliases.items():
            if full == "triton.language":
                return alias
        if self.aliases.get("triton") == "triton":
            return "triton.language"
        return None

    def _resolve(self, node: ast.AST) -> str | None:
        if id(node) not in self._resolved:
            self._resolved[id(node)] = self._resolve_uncached(node)
        return self._resolved[id(node)]

    def _resolve_uncached(self, node: ast.AST) -> str | None:
        name = dotted_name(node)
        if not name:
            return None
        head, _, rest = name.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return name if head == "range" else None
        return f"{base}.{rest}" if rest else base

    def _is_tl(self, node: ast.AST, *names: str) -> bool:
        full = self._resolve(node)
        return full is not None and full.startswith("triton.language.") and full.rsplit(".", 1)[1] in names

    def _find_consts(self, tree: ast.Module) -> None:
        assigned: dict[str, int] = {}
        for node in self._walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets = [node.target]
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for declared in node.names:
                    assigned[declared] = assigned.get(declared, 0) + 2
            for t in targets:
                for n in self._walk(t):
                    if isinstance(n, ast.Name):
                        assigned[n.id] = assigned.get(n.id, 0) + 1
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                name, value = node.target.id, node.value
            else:
                continue
            if isinstance(value, ast.Call) and self._is_tl(value.func, "constexpr") and len(value.args) == 1 and not value.keywords:
                value = value.args[0]
            # int_value is not None only for an ast.Constant: the isinstance only narrows the type
            if isinstance(value, ast.Constant) and int_value(value) is not None and assigned.get(name) == 1:
                self.consts[name] = value

    def _find_kernels(self, tree: ast.Module) -> None:
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decos = [self._resolve(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
            jit = any(d in ("triton.jit", "triton.runtime.jit.jit") for d in decos)
            if not jit:
                continue
            tuned = any(d in ("triton.autotune", "triton.heuristics") for d in decos)
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args]
            constexpr = {
                p.arg for p in a.posonlyargs + a.args + a.kwonlyargs
                if p.annotation is not None and self._is_tl(p.annotation, "constexpr")
            }
            k = Kernel(node=node, name=node.name, params=params, constexpr=constexpr, tuned=tuned)
            self._kernel_roles(k)
            self.kernels[k.name] = k

    def _kernel_roles(self, k: Kernel) -> None:
        body = k.node
        pid_taint: set[str] = set()
        loop_taint: set[str] = set()
        arange_taint: set[str] = set()
        split_starts = self._split_starts(body)  # a split K loop's start: no tile of the grid (split_k.py)
        assigns: list[tuple[list[str], ast.AST]] = []
        for n in self._walk(body):
            if isinstance(n, ast.Assign):
                assigns.append(([x.id for t in n.targets for x in self._walk(t) if isinstance(x, ast.Name)], n.value))
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                assigns.append(([x.id for x in self._walk(n.target) if isinstance(x, ast.Name)], n.value))
            elif isinstance(n, ast.For):  # a loop over tiles (a persistent kernel's) walks program ids
                over_tiles = any(isinstance(c, ast.Call) and self._is_tl(c.func, "program_id") for c in self._walk(n.iter))
                (pid_taint if over_tiles else loop_taint).update(x.id for x in self._walk(n.target) if isinstance(x, ast.Name))

        def has_call(expr: ast.AST, *names: str) -> bool:
            return any(isinstance(c, ast.Call) and self._is_tl(c.func, *names) for c in self._walk(expr))

        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                names = self._names(value)
                for taint, seed in ((pid_taint, "program_id"), (loop_taint, None), (arange_taint, "arange")):
                    if (seed and has_call(value, seed)) or names & taint:
                        new = set(targets) - taint
                        if new:
                            taint |= new
                            changed = True

        def tainted(expr: ast.AST, taint: set[str], seed: str | None) -> bool:
            return bool(self._names(expr) & taint) or bool(seed and has_call(expr, seed))

        candidates = set(k.constexpr) | {n for n in self.consts if n not in k.params}
        roles: dict[str, set[str]] = {c: set() for c in candidates}
        descriptors, pointers = self._tma_branches(k)  # tensor_descriptors.py's guarded loads

        def note(expr: ast.AST, role: str) -> None:
            for name in self._names(expr) & candidates:
                roles[name].add(role)

        for n in self._walk(body):
            if isinstance(n, ast.Call):
                if self._is_tl(n.func, *SHAPE_FUNCS):
                    for a in n.args:
                        note(a, "shape")
                if self._is_tl(n.func, "dot", "dot_scaled"):
                    k.has_dot = True
                    if self._is_tl(n.func, "dot"):
                        k.dots.append(n)
                # the guarded descriptors (tensor_descriptors.py) read out-of-bounds elements as zero, as the masked
                # loads they stand for did; another kernel's descriptors or block pointers: its blocks only shrink
                if self._is_tl(n.func, "make_block_ptr", "make_tensor_descriptor") and id(n) not in descriptors:
                    k.unmasked = True
                if isinstance(n.func, ast.Name) and n.func.id == "min":
                    for a in n.args:
                        note(a, "min")
                if self._is_tl(n.func, "load", "store"):
                    if self._is_tl(n.func, "load") and id(n) not in pointers:  # not the loads for where TMA can't
                        k.loads.append(n)
                    masked = len(n.args) >= (2 if self._is_tl(n.func, "load") else 3) or any(
                        kw.arg in ("mask", "boundary_check") for kw in n.keywords)
                    if n.args and not masked and tainted(n.args[0], arange_taint, "arange"):
                        k.unmasked = True
            elif isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and self._is_range(n.iter):
                for step in [*n.iter.args[2:3], *(kw.value for kw in n.iter.keywords if kw.arg == "step")]:
                    note(step, "step")
                if any(isinstance(c, ast.Call) and self._is_tl(c.func, "load") for s in n.body for c in self._walk(s)):
                    k.pipelined = True
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) and id(n) not in split_starts:
                for this, other in ((n.left, n.right), (n.right, n.left)):
                    if isinstance(this, ast.Name) and this.id in candidates:
                        if tainted(other, pid_taint, "program_id"):
                            roles[this.id].add("pid")
                        if tainted(other, loop_taint, None):
                            roles[this.id].add("loop")
        k.roles = roles

    def _is_range(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Name) and call.func.id == "range" and "range" not in self.aliases:
            return True
        return self._is_tl(call.func, *RANGE_FUNCS)

    def _find_launches(self, tree: ast.Module) -> None:
        counts: dict[str, int] = {}
        hosts = [n for n in self._walk(tree) if isinstance(n, ast.FunctionDef) and n.name not in self.kernels]
        for host in hosts:
            for call in self._walk(host):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
                        and isinstance(call.func.value, ast.Name) and call.func.value.id in self.kernels):
                    continue
                kernel = self.kernels[call.func.value.id]
                ordinal = counts.get(kernel.name, 0)
                counts[kernel.name] = ordinal + 1
                bindings: dict[str, ast.AST] = {}
                has_star = False
                for i, a in enumerate(call.args):
                    if isinstance(a, ast.Starred):
                        has_star = True
                        break
                    if i < len(kernel.params):
                        bindings[kernel.params[i]] = a
                options: dict[str, ast.keyword] = {}
                for kw in call.keywords:
                    if kw.arg is None:
                        has_star = True
                    elif kw.arg in LAUNCH_OPTIONS and kw.arg not in kernel.params:
                        options[kw.arg] = kw
                    else:
                        bindings[kw.arg] = kw.value
                self.launches.append(Launch(
                    call=call, kernel=kernel, ordinal=ordinal, host=host, bindings=bindings, options=options,
                    grid_refs=self._grid_refs(call.func.slice, host), has_star=has_star,
                ))

    def _grid_refs(self, grid: ast.AST, host: ast.FunctionDef) -> set[str]:
        assigned: dict[str, list[ast.AST]] = {}
        for n in self._walk(host):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    for x in self._walk(t):
                        if isinstance(x, ast.Name):
                            assigned.setdefault(x.id, []).append(n.value)
        refs: set[str] = set()
        todo = [grid]
        seen: set[int] = set()
        while todo:
            expr = todo.pop()
            if id(expr) in seen:
                continue
            seen.add(id(expr))
            for n in self._walk(expr):
                if isinstance(n, ast.Name):
                    if n.id not in refs:
                        refs.add(n.id)
                        todo.extend(assigned.get(n.id, []))
                elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
                    refs.add(f"meta:{n.slice.value}")
        return refs


def analyze(source: str, *, allow_unroll: bool | None = None) -> Analysis:
    return Analysis(source, allow_unroll=allow_unroll)
