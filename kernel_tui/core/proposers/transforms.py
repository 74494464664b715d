"""The built-in search's action space: atomic, semantics-preserving edits of a Triton candidate.

`analyze(source)` reads the candidate's AST and finds its knobs, the places where a value can change
without changing what the program computes:

* block sizes and other tiling factors held by module-level constants (`BLOCK_SIZE = 256`), by
  literal keyword arguments of a launch (`BLOCK_M=64`) or passed to a kernel's constexpr parameters;
* `num_warps` and `num_stages` of each launch (inserted when absent, at Triton's default);
* the launch order of a 2-D tiled kernel: the plain row-major pid mapping becomes the grouped
  (swizzled) one with a GROUP_M constexpr, which then is a knob of its own;
* `loop_unroll_factor` of a kernel's loops that load (the loop becomes `tl.range(...)`);
* the eviction policy and the cache modifier of a kernel's `tl.load`s.

Every knob is found by an applicability check that errs on the side of offering less: a block that
must cover a row (`BLOCK = next_power_of_2(n_cols)`, or a literal block used only as a tensor shape) is
no knob; a block that multiplies the program id is one only when the launch grid follows the same
constant; an unmasked kernel's block may only shrink (a power of two that divides the shapes keeps
dividing them when halved); `tl.dot` tiles stay in 16..256; register and shared-memory sanity bounds
hold for every assignment offered. An edit replaces (or inserts at) exactly the spans of the literals
it changes, found from the AST's line/column offsets; every other byte of the source is kept.

No torch, no triton import: only `ast` (and `importlib.metadata` to read Triton's version).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kernel_tui.core.astutil import dotted_name

NUM_WARPS = (1, 2, 4, 8, 16)
NUM_STAGES = (1, 2, 3, 4, 5)
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3  # Triton's default on NVIDIA GPUs
EVICTION_POLICIES = ("", "evict_first", "evict_last")
CACHE_MODIFIERS = ("", ".cg")
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

LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid", "warmup"}


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@functools.cache
def _triton_supports_unroll() -> bool:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return False
    try:
        v = version("triton")
    except PackageNotFoundError:
        return False
    nums = tuple(int(x) for x in re.findall(r"\d+", v)[:2])
    return len(nums) == 2 and nums >= MIN_TRITON_FOR_UNROLL


# --- text: byte offsets from the AST's (line, UTF-8 column) positions --------------------------------
@dataclass(frozen=True)
class Edit:
    """Replace source bytes [start, end) by `text` (start == end: an insertion)."""

    start: int
    end: int
    text: str


class _Text:
    def __init__(self, source: str) -> None:
        self.source = source
        self.data = source.encode("utf-8")
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.newline = "\r\n" if b"\r\n" in self.data else "\n"  # what an inserted line ends with

    def offset(self, lineno: int, col: int) -> int:
        return self.line_starts[lineno - 1] + col

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:  # the last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def indent_at(self, offset: int) -> str:
        line_start = self.line_starts[self.line_of(offset)]
        line = self.data[line_start:offset].decode("utf-8")
        return line[: len(line) - len(line.lstrip())]

    def skip_to_close(self, offset: int) -> int | None:
        """From the end of a last argument: the offset of the closing parenthesis (commas, spaces and
        comments may come between), or None when something else does."""
        i, data = offset, self.data
        while i < len(data):
            c = data[i : i + 1]
            if c == b")":
                return i
            if c == b"#":
                nl = data.find(b"\n", i)
                i = len(data) if nl < 0 else nl
                continue
            if c not in (b" ", b"\t", b"\r", b"\n", b",", b"\\", b"\f"):
                return None
            i += 1
        return None


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    data = source.encode("utf-8")
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end:
            raise ValueError("overlapping edits")
    for e in reversed(ordered):
        data = data[: e.start] + e.text.encode("utf-8") + data[e.end :]
    return data.decode("utf-8")


def _insert_argument(text: _Text, last: tuple[int, int] | None, close: int, new: str) -> Edit:
    """An edit adding argument `new` after the last one (its [start, end) offsets; None: no arguments),
    in the call's (or signature's) own style: one line, or one argument a line with or without a
    trailing comma."""
    if last is None:
        return Edit(close, close, new)
    last_start, last_end = last
    between = text.data[last_end:close]
    stripped = between.lstrip(b" \t")
    multiline = text.line_of(last_end) != text.line_of(close)
    indent = text.indent_at(last_start)
    if stripped.startswith(b","):  # a trailing comma
        comma = last_end + (len(between) - len(stripped))
        if multiline:
            return Edit(comma + 1, comma + 1, f"{text.newline}{indent}{new},")
        return Edit(comma + 1, comma + 1, f" {new},")
    if multiline:
        return Edit(last_end, last_end, f",{text.newline}{indent}{new}")
    return Edit(last_end, last_end, f", {new}")


def _call_args_in_order(call: ast.Call) -> list[ast.AST]:
    items: list[ast.AST] = [*call.args, *call.keywords]
    return sorted(items, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def _insert_keyword(text: _Text, call: ast.Call, new: str) -> Edit:
    items = _call_args_in_order(call)
    close = text.end(call) - 1
    return _insert_argument(text, (text.start(items[-1]), text.end(items[-1])) if items else None, close, new)


def _remove_keyword(text: _Text, call: ast.Call, kw: ast.keyword) -> Edit:
    items = _call_args_in_order(call)
    i = items.index(kw)
    if i == 0:
        raise ValueError("cannot remove a first argument")
    return Edit(text.end(items[i - 1]), text.end(kw), "")


def _literal(value: object, quote: str = '"') -> str:
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    return str(value)


# --- names --------------------------------------------------------------------------------------------
def _aliases(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _int_value(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _pow2_range(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return tuple(out)


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# --- knobs and actions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Knob:
    id: str  # stable across edits: const:BLOCK_SIZE, launch:add_kernel:0:num_warps, kernel:k:eviction_policy
    kind: str  # block, factor, group, num_warps, num_stages, unroll, eviction_policy, cache_modifier, launch_order
    label: str  # how the change text names it
    value: int | str
    domain: tuple  # the values it may take (the assignment's constraints come on top)
    numeric: bool = True
    where: str = ""  # " (loop 1 of k)" where the label alone is ambiguous


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
class _Kernel:
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


@dataclass
class _Launch:
    call: ast.Call
    kernel: _Kernel
    ordinal: int
    host: ast.FunctionDef
    bindings: dict[str, ast.AST]  # kernel parameter -> the expression passed
    options: dict[str, ast.keyword]
    grid_refs: set[str]
    has_star: bool


_SHAPE_FUNCS = {"arange", "zeros", "full", "reshape", "view", "broadcast_to", "empty"}
_RANGE_FUNCS = {"range", "static_range"}


class Analysis:
    """The knobs of one source and the actions that change one of them (valid by construction)."""

    def __init__(self, source: str, *, allow_unroll: bool | None = None) -> None:
        self.source = source
        self.text = _Text(source)
        self.knobs: dict[str, Knob] = {}
        self._editors: dict[str, Callable[[int | str], list[Edit]]] = {}
        self._constraints: list[tuple[str, Callable[[dict], float | None]]] = []
        self.allow_unroll = _triton_supports_unroll() if allow_unroll is None else allow_unroll
        self._walks: dict[int, list[ast.AST]] = {}
        self._name_sets: dict[int, set[str]] = {}
        self._resolved: dict[int, str | None] = {}
        self.aliases: dict[str, str] = {}
        self.tl: str | None = None
        self.kernels: dict[str, _Kernel] = {}
        self.launches: list[_Launch] = []
        self.consts: dict[str, ast.Constant] = {}
        try:
            self.tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.tree = None
            return
        self.aliases = _aliases(self.tree)
        self.tl = self._tl_prefix()
        try:
            self._find_consts()
            self._find_kernels()
            self._find_launches()
            self._block_knobs()
            self._launch_option_knobs()
            self._load_knobs()
            self._unroll_knobs()
            self._launch_order_knobs()
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
        if action.kind == "launch_order":
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
        if knob.kind in ("eviction_policy", "cache_modifier"):
            where = f"on loads of {knob.label}" if self._kernel_count() > 1 else "on loads"
            if knob.value == "":
                return f"{knob.kind} {new} {where}"
            return f"{knob.kind} {knob.value} → {new or 'default'} {where}"
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

    def _find_consts(self) -> None:
        assigned: dict[str, int] = {}
        for node in self._walk(self.tree):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets = [node.target]
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    assigned[n] = assigned.get(n, 0) + 2
            for t in targets:
                for n in self._walk(t):
                    if isinstance(n, ast.Name):
                        assigned[n.id] = assigned.get(n.id, 0) + 1
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                name, value = node.target.id, node.value
            else:
                continue
            if isinstance(value, ast.Call) and self._is_tl(value.func, "constexpr") and len(value.args) == 1 and not value.keywords:
                value = value.args[0]
            if _int_value(value) is not None and assigned.get(name) == 1:
                self.consts[name] = value  # type: ignore[assignment]

    def _find_kernels(self) -> None:
        for node in self.tree.body:
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
            k = _Kernel(node=node, name=node.name, params=params, constexpr=constexpr, tuned=tuned)
            self._kernel_roles(k)
            self.kernels[k.name] = k

    def _kernel_roles(self, k: _Kernel) -> None:
        body = k.node
        pid_taint: set[str] = set()
        loop_taint: set[str] = set()
        arange_taint: set[str] = set()
        assigns: list[tuple[list[str], ast.AST]] = []
        for n in self._walk(body):
            if isinstance(n, ast.Assign):
                assigns.append(([x.id for t in n.targets for x in self._walk(t) if isinstance(x, ast.Name)], n.value))
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                assigns.append(([x.id for x in self._walk(n.target) if isinstance(x, ast.Name)], n.value))
            elif isinstance(n, ast.For):
                loop_taint |= {x.id for x in self._walk(n.target) if isinstance(x, ast.Name)}

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

        def note(expr: ast.AST, role: str) -> None:
            for name in self._names(expr) & candidates:
                roles[name].add(role)

        for n in self._walk(body):
            if isinstance(n, ast.Call):
                if self._is_tl(n.func, *_SHAPE_FUNCS):
                    for a in n.args:
                        note(a, "shape")
                if self._is_tl(n.func, "dot", "dot_scaled"):
                    k.has_dot = True
                if self._is_tl(n.func, "make_block_ptr", "make_tensor_descriptor"):
                    k.unmasked = True
                if isinstance(n.func, ast.Name) and n.func.id == "min":
                    for a in n.args:
                        note(a, "min")
                if self._is_tl(n.func, "load", "store"):
                    if self._is_tl(n.func, "load"):
                        k.loads.append(n)
                    masked = len(n.args) >= (2 if self._is_tl(n.func, "load") else 3) or any(
                        kw.arg in ("mask", "boundary_check") for kw in n.keywords)
                    if n.args and not masked and tainted(n.args[0], arange_taint, "arange"):
                        k.unmasked = True
            elif isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and self._is_range(n.iter):
                if len(n.iter.args) >= 3:
                    note(n.iter.args[2], "step")
                for kw in n.iter.keywords:
                    if kw.arg == "step":
                        note(kw.value, "step")
                if any(isinstance(c, ast.Call) and self._is_tl(c.func, "load") for s in n.body for c in self._walk(s)):
                    k.pipelined = True
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
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
        return self._is_tl(call.func, *_RANGE_FUNCS)

    def _find_launches(self) -> None:
        counts: dict[str, int] = {}
        hosts = [n for n in self._walk(self.tree) if isinstance(n, ast.FunctionDef) and n.name not in self.kernels]
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
                self.launches.append(_Launch(
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

    # --- block and tiling constants -----------------------------------------------------------------
    def _param_kind(self, k: _Kernel, param: str) -> str | None:
        """block (a tensor dimension), factor, group, or None: not a free knob."""
        roles = k.roles.get(param, set())
        if "min" in roles and param.upper().startswith("GROUP"):
            return "group"
        if not roles & {"step", "pid", "loop"}:
            return None  # a shape the block must cover (or not a tiling value at all)
        return "block" if "shape" in roles else "factor"

    def _block_knobs(self) -> None:
        uses: dict[str, list[tuple[_Kernel, str, _Launch | None]]] = {}
        for launch in self.launches:
            k = launch.kernel
            for param, expr in launch.bindings.items():
                if param not in k.constexpr:
                    continue
                if isinstance(expr, ast.Name) and expr.id in self.consts:
                    uses.setdefault(f"const:{expr.id}", []).append((k, param, launch))
                elif _int_value(expr) is not None:
                    uses.setdefault(f"launch:{k.name}:{launch.ordinal}:{param}", []).append((k, param, launch))
                else:
                    # a constexpr fed by an expression: any constant inside it is no knob
                    for name in self._names(expr) & set(self.consts):
                        uses.setdefault(f"const:{name}", []).append((k, "", None))
            for name in self._names(launch.call) & set(self.consts):
                bound = any(isinstance(e, ast.Name) and e.id == name for p, e in launch.bindings.items() if p in k.constexpr)
                grid = name in launch.grid_refs
                if not bound and not grid:
                    uses.setdefault(f"const:{name}", []).append((k, "", None))  # a runtime argument too
        for k in self.kernels.values():  # module constants a kernel reads as globals
            for name in self.consts:
                if name in k.params:
                    continue
                if any(isinstance(n, ast.Name) and n.id == name for n in self._walk(k.node)):
                    uses.setdefault(f"const:{name}", []).append((k, name, None))

        for kid, where in sorted(uses.items()):
            is_const = kid.startswith("const:")
            if is_const:
                name = kid.split(":", 1)[1]
                node: ast.AST = self.consts[name]
            else:
                _, kname, ordinal, param = kid.split(":")
                launch = next(ln for ln in self.launches if ln.kernel.name == kname and ln.ordinal == int(ordinal))
                node, name = launch.bindings[param], param
            value = _int_value(node)
            if value is None or not _is_pow2(value):
                continue
            kinds, ok, dot, unmasked = set(), True, False, False
            for k, param, launch in where:
                kind = self._param_kind(k, param) if param else None
                if kind is None or k.tuned or (launch is not None and launch.has_star and not is_const):
                    ok = False
                    break
                if kind in ("block", "factor") and "pid" in k.roles.get(param, set()):
                    # the program id walks over blocks: the grid must follow the same value
                    if launch is None:
                        launch_list = [ln for ln in self.launches if ln.kernel is k]
                    else:
                        launch_list = [launch]
                    if not launch_list or not all(
                        (is_const and name in ln.grid_refs) or f"meta:{param}" in ln.grid_refs for ln in launch_list
                    ):
                        ok = False
                        break
                kinds.add(kind)
                dot |= k.has_dot and kind == "block"
                unmasked |= k.unmasked
            if not ok or len(kinds) != 1:
                continue
            kind = kinds.pop()
            if kind == "group":
                domain = GROUP_SIZES
            elif kind == "factor":
                domain = FACTORS
            else:
                domain = _pow2_range(*(DOT_BLOCK_BOUNDS if dot else BLOCK_BOUNDS))
            if unmasked and kind != "group":  # divides the shapes now; a half of it still does
                domain = tuple(v for v in domain if v <= value)
            if value not in domain:
                domain = tuple(sorted({*domain, value}))
            self.knobs[kid] = Knob(id=kid, kind=kind, label=name.lower(), value=value, domain=domain)
            span = (self.text.start(node), self.text.end(node))
            self._editors[kid] = lambda new, s=span: [Edit(s[0], s[1], str(new))]

    # --- launch options -----------------------------------------------------------------------------
    def _launch_option_knobs(self) -> None:
        multi = len(self.launches) > 1
        for launch in self.launches:
            k = launch.kernel
            if k.tuned:
                continue
            where = f" ({k.name})" if multi else ""
            for opt, domain, default in (("num_warps", NUM_WARPS, DEFAULT_NUM_WARPS),
                                         ("num_stages", NUM_STAGES, DEFAULT_NUM_STAGES)):
                kid = f"launch:{k.name}:{launch.ordinal}:{opt}"
                kw = launch.options.get(opt)
                if kw is not None:
                    value = _int_value(kw.value)
                    if value is None or value not in domain:
                        continue
                    if opt == "num_stages" and not k.pipelined:
                        continue
                    span = (self.text.start(kw.value), self.text.end(kw.value))
                    self._editors[kid] = lambda new, s=span: [Edit(s[0], s[1], str(new))]
                else:
                    if launch.has_star or (opt == "num_stages" and not k.pipelined):
                        continue
                    value = default
                    self._editors[kid] = lambda new, c=launch.call, o=opt: [_insert_keyword(self.text, c, f"{o}={new}")]
                self.knobs[kid] = Knob(id=kid, kind=opt, label=opt, value=value, domain=domain, where=where)

    # --- loads: eviction policy and cache modifier --------------------------------------------------------
    def _load_knobs(self) -> None:
        for k in self.kernels.values():
            if not k.loads:
                continue
            for opt, domain in (("eviction_policy", EVICTION_POLICIES), ("cache_modifier", CACHE_MODIFIERS)):
                values = set()
                for call in k.loads:
                    kw = next((x for x in call.keywords if x.arg == opt), None)
                    if kw is None:
                        values.add("")
                    elif isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        values.add(kw.value.value)
                    else:
                        values.add(None)
                    if any(x.arg is None for x in call.keywords):
                        values.add(None)
                if len(values) != 1 or None in values:
                    continue
                value = values.pop()
                if value not in domain:
                    continue
                kid = f"kernel:{k.name}:{opt}"
                self.knobs[kid] = Knob(id=kid, kind=opt, label=k.name, value=value, domain=domain, numeric=False)
                self._editors[kid] = lambda new, k=k, opt=opt: self._load_edits(k, opt, new)

    def _load_edits(self, k: _Kernel, opt: str, new: str) -> list[Edit]:
        edits = []
        for call in k.loads:
            kw = next((x for x in call.keywords if x.arg == opt), None)
            if kw is None:
                edits.append(_insert_keyword(self.text, call, f'{opt}="{new}"'))
            elif new == "":
                edits.append(_remove_keyword(self.text, call, kw))
            else:
                s, e = self.text.start(kw.value), self.text.end(kw.value)
                quote = self.text.text(s, s + 1)
                edits.append(Edit(s, e, _literal(new, quote if quote in "'\"" else '"')))
        return edits

    # --- loop unrolling ---------------------------------------------------------------------------------
    def _unroll_knobs(self) -> None:
        if not self.allow_unroll or self.tl is None:
            return
        for k in self.kernels.values():
            loops = [n for n in self._walk(k.node) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)]
            loops.sort(key=lambda n: (n.lineno, n.col_offset))
            for i, loop in enumerate(loops):
                call = loop.iter
                assert isinstance(call, ast.Call)
                builtin = isinstance(call.func, ast.Name) and call.func.id == "range" and "range" not in self.aliases
                if not (builtin or self._is_tl(call.func, "range")):
                    continue
                if any(x.arg is None for x in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                    continue
                if not any(isinstance(c, ast.Call) and self._is_tl(c.func, "load") for s in loop.body for c in self._walk(s)):
                    continue
                kw = next((x for x in call.keywords if x.arg == "loop_unroll_factor"), None)
                value = 1 if kw is None else _int_value(kw.value)
                if value is None or value not in UNROLL_FACTORS:
                    continue
                kid = f"loop:{k.name}:{i}:unroll"
                where = f" (loop {i + 1} of {k.name})" if len(loops) > 1 or len(self.kernels) > 1 else ""
                self.knobs[kid] = Knob(id=kid, kind="unroll", label="loop_unroll_factor", value=value,
                                       domain=UNROLL_FACTORS, where=where)
                self._editors[kid] = lambda new, call=call, kw=kw, builtin=builtin: self._unroll_edits(call, kw, builtin, new)

    def _unroll_edits(self, call: ast.Call, kw: ast.keyword | None, builtin: bool, new: int) -> list[Edit]:
        if kw is not None:
            return [Edit(self.text.start(kw.value), self.text.end(kw.value), str(new))]
        edits = [_insert_keyword(self.text, call, f"loop_unroll_factor={new}")]
        if builtin:
            edits.append(Edit(self.text.start(call.func), self.text.end(call.func), f"{self.tl}.range"))
        return edits

    # --- grouped launch order -----------------------------------------------------------------------------
    def _launch_order_knobs(self) -> None:
        for k in self.kernels.values():
            grouped = any(self._param_kind(k, p) == "group" for p in k.constexpr)
            if grouped:
                kid = f"kernel:{k.name}:launch_order"
                self.knobs[kid] = Knob(id=kid, kind="launch_order", label="launch order", value="grouped",
                                       domain=("grouped",), numeric=False)
                continue
            plan = self._row_major_plan(k)
            if plan is None:
                continue
            kid = f"kernel:{k.name}:launch_order"
            self.knobs[kid] = Knob(id=kid, kind="launch_order", label="launch order", value="row-major",
                                   domain=("row-major", "grouped"), numeric=False)
            self._editors[kid] = lambda new, plan=plan: plan

    def _row_major_plan(self, k: _Kernel) -> list[Edit] | None:
        """The edits that give a kernel with the plain row-major pid mapping the grouped one, or None
        when the pattern is not recognised (the applicability check)."""
        if k.tuned:
            return None
        launches = [ln for ln in self.launches if ln.kernel is k]
        if len(launches) != 1 or launches[0].has_star or "GROUP_M" in launches[0].bindings:
            return None
        launch = launches[0]
        a = k.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or not a.args:
            return None
        used = {n.id for n in self._walk(k.node) if isinstance(n, ast.Name)} | set(k.params)
        body = k.node.body
        defs: dict[str, ast.AST] = {}
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                defs.setdefault(stmt.targets[0].id, stmt.value)
            if i + 1 >= len(body):
                continue
            pair = self._pid_pair(stmt, body[i + 1])
            if pair is None:
                continue
            first, second, pid, pid_m, pid_n, npn = pair
            pid_def = defs.get(pid)
            if pid_def is None or not any(isinstance(c, ast.Call) and self._is_tl(c.func, "program_id") for c in self._walk(pid_def)):
                return None
            npn_def = defs.get(npn)
            cdiv = self._cdiv_parts(npn_def) if npn_def is not None else None
            if cdiv is None:
                return None
            _, _, style = cdiv
            bm = self._tile_of(k, pid_m)
            if bm is None or bm not in k.constexpr:
                return None
            m = self._extent_of(k, pid_m, bm)
            if m is None:
                return None
            fresh = ("num_pid_in_group", "group_id", "first_pid_m", "group_size_m", "GROUP_M")
            if any(n in used for n in fresh):
                return None
            reuse = defs.get("num_pid_m")
            if reuse is not None:
                parts = self._cdiv_parts(reuse)
                if parts is None or parts[:2] != (m, bm):
                    return None
            num_pid_m = "num_pid_m"
            lines = []
            if reuse is None:
                if "num_pid_m" in used:
                    return None
                lines.append(f"num_pid_m = {style.format(m, bm)}")
            lines += [
                f"num_pid_in_group = GROUP_M * {npn}",
                f"group_id = {pid} // num_pid_in_group",
                "first_pid_m = group_id * GROUP_M",
                f"group_size_m = min({num_pid_m} - first_pid_m, GROUP_M)",
                f"{pid_m} = first_pid_m + (({pid} % num_pid_in_group) % group_size_m)",
                f"{pid_n} = ({pid} % num_pid_in_group) // group_size_m",
            ]
            start, end = self.text.start(first), self.text.end(second)
            indent = self.text.indent_at(start)
            edits = [Edit(start, end, (self.text.newline + indent).join(lines))]
            last = (a.posonlyargs + a.args)[-1]
            close = self.text.skip_to_close(self.text.end(last))
            if close is None or self.tl is None:
                return None
            edits.append(_insert_argument(self.text, (self.text.start(last), self.text.end(last)), close,
                                          f"GROUP_M: {self.tl}.constexpr"))
            edits.append(_insert_keyword(self.text, launch.call, f"GROUP_M={DEFAULT_GROUP}"))
            return edits
        return None

    @staticmethod
    def _pid_pair(s1: ast.stmt, s2: ast.stmt):
        def parse(s):
            if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                    and isinstance(s.value, ast.BinOp) and isinstance(s.value.left, ast.Name)
                    and isinstance(s.value.right, ast.Name) and isinstance(s.value.op, (ast.FloorDiv, ast.Mod))):
                return s.targets[0].id, type(s.value.op), s.value.left.id, s.value.right.id
            return None
        p1, p2 = parse(s1), parse(s2)
        if p1 is None or p2 is None or p1[2:] != p2[2:] or p1[1] is p2[1]:
            return None
        div, mod = (p1, p2) if p1[1] is ast.FloorDiv else (p2, p1)
        pid, npn = div[2], div[3]
        if div[0] in (pid, npn) or mod[0] in (pid, npn) or div[0] == mod[0]:
            return None
        return s1, s2, pid, div[0], mod[0], npn

    def _cdiv_parts(self, expr: ast.AST) -> tuple[str, str, str] | None:
        """(N, BLOCK, style) for `tl.cdiv(N, BLOCK)` or `(N + BLOCK - 1) // BLOCK`."""
        if isinstance(expr, ast.Call) and self._is_tl(expr.func, "cdiv") and len(expr.args) == 2 and all(
                isinstance(x, ast.Name) for x in expr.args):
            prefix = dotted_name(expr.func) or f"{self.tl}.cdiv"
            return expr.args[0].id, expr.args[1].id, prefix + "({}, {})"  # type: ignore[attr-defined]
        if (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.FloorDiv) and isinstance(expr.right, ast.Name)
                and isinstance(expr.left, ast.BinOp) and isinstance(expr.left.op, ast.Sub)
                and isinstance(expr.left.left, ast.BinOp) and isinstance(expr.left.left.op, ast.Add)
                and isinstance(expr.left.left.left, ast.Name) and isinstance(expr.left.left.right, ast.Name)
                and expr.left.left.right.id == expr.right.id and _int_value(expr.left.right) == 1):
            return expr.left.left.left.id, expr.right.id, "({0} + {1} - 1) // {1}"
        return None

    def _tile_of(self, k: _Kernel, pid_m: str) -> str | None:
        for n in self._walk(k.node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
                for this, other in ((n.left, n.right), (n.right, n.left)):
                    if isinstance(this, ast.Name) and this.id == pid_m and isinstance(other, ast.Name):
                        return other.id
        return None

    def _extent_of(self, k: _Kernel, pid_m: str, bm: str) -> str | None:
        """M in `offs_m < M` (or `... % M`) where offs_m comes from pid_m * BLOCK_M."""
        offs: set[str] = set()
        for n in self._walk(k.node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                for b in self._walk(n.value):
                    if (isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult)
                            and {dotted_name(b.left), dotted_name(b.right)} == {pid_m, bm}):
                        offs.add(n.targets[0].id)
        runtime = set(k.params) - k.constexpr
        for n in self._walk(k.node):
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt):
                left = n.left.value if isinstance(n.left, ast.Subscript) else n.left
                right = n.comparators[0]
                if isinstance(left, ast.Name) and left.id in offs and isinstance(right, ast.Name) and right.id in runtime:
                    return right.id
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.right, ast.Name) and n.right.id in runtime:
                if any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult) and {dotted_name(b.left), dotted_name(b.right)} == {pid_m, bm}
                       for b in self._walk(n.left)):
                    return n.right.id
        return None

    # --- register and shared-memory sanity bounds ------------------------------------------------------------
    def _sanity_constraints(self) -> None:
        for launch in self.launches:
            self._launch_constraints(launch)
        for k in self.kernels.values():
            evict, cache = f"kernel:{k.name}:eviction_policy", f"kernel:{k.name}:cache_modifier"
            if evict in self.knobs and cache in self.knobs:
                # ptxas (Triton 3.6, sm_90a) rejects a load carrying both hints: measured on an H200,
                # all 72 such vector_add configurations failed to assemble
                def both(assign: dict, evict=evict, cache=cache) -> float | None:
                    return 1.0 if assign.get(evict) and assign.get(cache) else None

                self._constraints.append((f"kernel:{k.name}:load-hints", both))

    def _value(self, assign: dict, kid: str, fixed: ast.AST | None, default: int | None) -> int | None:
        if kid in assign:
            v = assign[kid]
            return v if isinstance(v, int) else None
        if fixed is not None:
            return _int_value(fixed)
        return default

    def _param_value(self, assign: dict, launch: _Launch, param: str) -> int | None:
        prefix = f"launch:{launch.kernel.name}:{launch.ordinal}"
        expr = launch.bindings.get(param)
        if isinstance(expr, ast.Name) and expr.id in self.consts:
            return self._value(assign, f"const:{expr.id}", self.consts[expr.id], None)
        if expr is not None:
            return self._value(assign, f"{prefix}:{param}", expr, None)
        if param in self.consts:
            return self._value(assign, f"const:{param}", self.consts[param], None)
        return None

    def _options(self, assign: dict, launch: _Launch) -> tuple[int | None, int | None]:
        prefix = f"launch:{launch.kernel.name}:{launch.ordinal}"
        w_kw, s_kw = launch.options.get("num_warps"), launch.options.get("num_stages")
        w = self._value(assign, f"{prefix}:num_warps", w_kw.value if w_kw else None, None if w_kw else DEFAULT_NUM_WARPS)
        s = self._value(assign, f"{prefix}:num_stages", s_kw.value if s_kw else None, None if s_kw else DEFAULT_NUM_STAGES)
        return w, s

    def _launch_constraints(self, launch: _Launch) -> None:
        k = launch.kernel
        prefix = f"launch:{k.name}:{launch.ordinal}"
        shapes = sorted(p for p, r in k.roles.items() if "shape" in r and self._param_kind(k, p) == "block")
        if not shapes:
            return
        if k.has_dot:
            grid_tiles = [p for p in shapes if "pid" in k.roles[p]]
            k_tiles = [p for p in shapes if "pid" not in k.roles[p]]

            def accumulator(assign: dict) -> float | None:
                vals = [self._param_value(assign, launch, p) for p in grid_tiles]
                w, _ = self._options(assign, launch)
                if not vals or None in vals or w is None:
                    return None
                per_thread = _prod(vals) / (32 * w)  # type: ignore[arg-type]
                return _excess(per_thread, MIN_ACCUMULATOR_PER_THREAD, MAX_ACCUMULATOR_PER_THREAD)

            def shared_memory(assign: dict) -> float | None:
                g = [self._param_value(assign, launch, p) for p in grid_tiles]
                kk = [self._param_value(assign, launch, p) for p in k_tiles]
                _, s = self._options(assign, launch)
                if not g or not kk or None in g or None in kk:
                    return None
                stages = max(1, s or DEFAULT_NUM_STAGES)
                used = sum(x * _prod(kk) for x in g) * OPERAND_BYTES * stages  # type: ignore
                return _excess(used, 0, SHARED_MEMORY_BYTES)

            self._constraints.append((f"{prefix}:accumulator", accumulator))
            self._constraints.append((f"{prefix}:shared-memory", shared_memory))
        else:
            def registers(assign: dict) -> float | None:
                vals = [self._param_value(assign, launch, p) for p in shapes]
                w, _ = self._options(assign, launch)
                if None in vals or w is None:
                    return None
                n = _prod(vals)  # type: ignore[arg-type]
                return _excess(n, MIN_ELEMENTS_PER_WARP * w, MAX_ELEMENTS_PER_THREAD * 32 * w)

            self._constraints.append((f"{prefix}:registers", registers))


def _excess(x: float, lo: float, hi: float) -> float:
    """0 within [lo, hi], else log2 of how far outside."""
    if x <= 0:
        return math.inf
    if x > hi:
        return math.log2(x / hi)
    if lo > 0 and x < lo:
        return math.log2(lo / x)
    return 0.0


def _prod(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def analyze(source: str, *, allow_unroll: bool | None = None) -> Analysis:
    return Analysis(source, allow_unroll=allow_unroll)
