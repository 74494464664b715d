"""The literal knob families: block and tiling constants, launch options, load hints and loop
unrolling. Each is found by an applicability check that errs on the side of offering less, and comes
with the editor that changes exactly its literal (or inserts it at Triton's default).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel_tui.core.proposers.transforms.knobs import (
    BLOCK_BOUNDS,
    CACHE_MODIFIERS,
    DEFAULT_NUM_STAGES,
    DEFAULT_NUM_WARPS,
    DOT_BLOCK_BOUNDS,
    DOT_PRECISIONS,
    EVEN_K_GUARD,
    EVICTION_POLICIES,
    FACTORS,
    GROUP_SIZES,
    NUM_STAGES,
    NUM_WARPS,
    UNROLL_FACTORS,
    Kernel,
    Knob,
    Launch,
)
from kernel_tui.core.proposers.transforms.names import int_value, is_pow2, pow2_range
from kernel_tui.core.proposers.transforms.text import (
    Edit,
    SourceText,
    insert_keyword,
    literal,
    remove_keyword,
)


class KnobFamilies:
    """Mixed into Analysis: reads its kernels, launches and constants, its tree walks (`_walk`, `_names`)
    and name resolution (`_is_tl`), and fills its knobs and their editors."""

    text: SourceText
    tl: str | None
    aliases: dict[str, str]
    allow_unroll: bool
    knobs: dict[str, Knob]
    kernels: dict[str, Kernel]
    launches: list[Launch]
    consts: dict[str, ast.Constant]
    _editors: dict[str, Callable[[int | str], list[Edit]]]

    if TYPE_CHECKING:  # provided by Analysis
        def _walk(self, node: ast.AST) -> list[ast.AST]: ...
        def _names(self, node: ast.AST) -> set[str]: ...
        def _is_tl(self, node: ast.AST, *names: str) -> bool: ...
        def _persistent_loop(self, k: Kernel) -> ast.For | None: ...

    # --- block and tiling constants -----------------------------------------------------------------
    def _param_kind(self, k: Kernel, param: str) -> str | None:
        """block (a tensor dimension), factor, group, or None: not a free knob."""
        roles = k.roles.get(param, set())
        if "min" in roles and param.upper().startswith("GROUP"):
            return "group"
        if not roles & {"step", "pid", "loop"}:
            return None  # a shape the block must cover (or not a tiling value at all)
        return "block" if "shape" in roles else "factor"

    def _block_knobs(self) -> None:
        uses: dict[str, list[tuple[Kernel, str, Launch | None]]] = {}
        for launch in self.launches:
            k = launch.kernel
            for param, expr in launch.bindings.items():
                if param not in k.constexpr or param == EVEN_K_GUARD:
                    continue  # the guard reads the block's current value at every launch: it follows any change
                if isinstance(expr, ast.Name) and expr.id in self.consts:
                    uses.setdefault(f"const:{expr.id}", []).append((k, param, launch))
                elif int_value(expr) is not None:
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
            value = int_value(node)
            if value is None or not is_pow2(value):
                continue
            kinds: set[str] = set()
            ok, dot, unmasked = True, False, False
            for k, param, via in where:  # via: the launch of this use, or None
                kind = self._param_kind(k, param) if param else None
                if kind is None or k.tuned or (via is not None and via.has_star and not is_const):
                    ok = False
                    break
                if kind in ("block", "factor") and "pid" in k.roles.get(param, set()):
                    # the program id walks over blocks: the grid must follow the same value
                    if via is None:
                        launch_list = [ln for ln in self.launches if ln.kernel is k]
                    else:
                        launch_list = [via]
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
            domain: tuple[int, ...]
            if kind == "group":
                domain = GROUP_SIZES
            elif kind == "factor":
                domain = FACTORS
            else:
                domain = pow2_range(*(DOT_BLOCK_BOUNDS if dot else BLOCK_BOUNDS))
            if unmasked and kind != "group":  # divides the shapes now; a half of it still does
                domain = tuple(v for v in domain if v <= value)
            if value not in domain:
                domain = tuple(sorted({*domain, value}))
            self.knobs[kid] = Knob(id=kid, kind=kind, label=name.lower(), value=value, domain=domain, dot=dot,
                                   kernels=frozenset(k.name for k, _, _ in where))
            self._editors[kid] = _replace((self.text.start(node), self.text.end(node)))

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
                    value = int_value(kw.value)
                    if value is None or value not in domain:
                        continue
                    if opt == "num_stages" and not k.pipelined:
                        continue
                    self._editors[kid] = _replace((self.text.start(kw.value), self.text.end(kw.value)))
                else:
                    if launch.has_star or (opt == "num_stages" and not k.pipelined):
                        continue
                    value = default

                    def insert(new: int | str, c: ast.Call = launch.call, o: str = opt) -> list[Edit]:
                        return [insert_keyword(self.text, c, f"{o}={new}")]

                    self._editors[kid] = insert
                self.knobs[kid] = Knob(id=kid, kind=opt, label=opt, value=value, domain=domain, where=where,
                                       dot=k.has_dot, kernels=frozenset({k.name}))

    # --- loads: eviction policy and cache modifier --------------------------------------------------------
    def _load_knobs(self) -> None:
        for k in self.kernels.values():
            if not k.loads:
                continue
            for opt, domain in (("eviction_policy", EVICTION_POLICIES), ("cache_modifier", CACHE_MODIFIERS)):
                values: set[str | None] = set()  # None: a value this family cannot read or edit
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
                if value is None or value not in domain:  # None is ruled out above; this narrows the type
                    continue
                kid = f"kernel:{k.name}:{opt}"
                self.knobs[kid] = Knob(id=kid, kind=opt, label=k.name, value=value, domain=domain, numeric=False)

                def load_edits(new: int | str, k: Kernel = k, opt: str = opt) -> list[Edit]:
                    return self._load_edits(k, opt, new)

                self._editors[kid] = load_edits

    # --- tl.dot input precision ---------------------------------------------------------------------
    def _precision_knobs(self) -> None:
        """A kernel whose every tl.dot says input_precision="ieee" (or "tf32x3") literally: the other of the
        two (DOT_PRECISIONS). Never from an unwritten precision, Triton's default (TF32 for fp32 operands),
        which is less precise than either; fp16 and bf16 operands ignore it. The correctness check decides."""
        for k in self.kernels.values():
            values: set[str | None] = set()
            for call in k.dots:  # None: a precision this family cannot read or edit
                kw = next((x for x in call.keywords if x.arg == "input_precision"), None)
                written = kw.value.value if kw is not None and isinstance(kw.value, ast.Constant) else None
                unpacked = any(x.arg is None for x in call.keywords)
                values.add(written if isinstance(written, str) and not unpacked else None)
            if len(values) != 1 or None in values or (value := values.pop()) not in DOT_PRECISIONS:
                continue
            kid = f"kernel:{k.name}:input_precision"
            self.knobs[kid] = Knob(id=kid, kind="input_precision", label=k.name, value=str(value),
                                   domain=DOT_PRECISIONS, numeric=False, kernels=frozenset({k.name}))
            spans = [(self.text.start(kw.value), self.text.end(kw.value)) for call in k.dots
                     for kw in call.keywords if kw.arg == "input_precision"]

            def precision_edits(new: int | str, spans: list[tuple[int, int]] = spans) -> list[Edit]:
                out = []
                for s, e in spans:
                    quote = self.text.text(s, s + 1)
                    out.append(Edit(s, e, literal(new, quote if quote in "'\"" else '"')))
                return out

            self._editors[kid] = precision_edits

    def _load_edits(self, k: Kernel, opt: str, new: int | str) -> list[Edit]:
        edits = []
        for call in k.loads:
            kw = next((x for x in call.keywords if x.arg == opt), None)
            if kw is None:
                edits.append(insert_keyword(self.text, call, f'{opt}="{new}"'))
            elif new == "":
                edits.append(remove_keyword(self.text, call, kw))
            else:
                s, e = self.text.start(kw.value), self.text.end(kw.value)
                quote = self.text.text(s, s + 1)
                edits.append(Edit(s, e, literal(new, quote if quote in "'\"" else '"')))
        return edits

    # --- loop unrolling ---------------------------------------------------------------------------------
    def _unroll_knobs(self) -> None:
        if not self.allow_unroll or self.tl is None:
            return
        for k in self.kernels.values():
            tiles = self._persistent_loop(k)  # the loop over tiles is no loop of the kernel's work: the ids stay
            loops = [n for n in self._walk(k.node) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and n is not tiles]
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
                value = 1 if kw is None else int_value(kw.value)
                if value is None or value not in UNROLL_FACTORS:
                    continue
                kid = f"loop:{k.name}:{i}:unroll"
                where = f" (loop {i + 1} of {k.name})" if len(loops) > 1 or len(self.kernels) > 1 else ""
                self.knobs[kid] = Knob(id=kid, kind="unroll", label="loop_unroll_factor", value=value,
                                       domain=UNROLL_FACTORS, where=where)

                def unroll_edits(new: int | str, call: ast.Call = call, kw: ast.keyword | None = kw,
                                 builtin: bool = builtin) -> list[Edit]:
                    return self._unroll_edits(call, kw, builtin, new)

                self._editors[kid] = unroll_edits

    def _unroll_edits(self, call: ast.Call, kw: ast.keyword | None, builtin: bool, new: int | str) -> list[Edit]:
        if kw is not None:
            return [Edit(self.text.start(kw.value), self.text.end(kw.value), str(new))]
        edits = [insert_keyword(self.text, call, f"loop_unroll_factor={new}")]
        if builtin:
            edits.append(Edit(self.text.start(call.func), self.text.end(call.func), f"{self.tl}.range"))
        return edits


def _replace(span: tuple[int, int]) -> Callable[[int | str], list[Edit]]:
    """The editor of a literal at `span`: its text becomes the new value's."""
    start, end = span
    return lambda new: [Edit(start, end, str(new))]
