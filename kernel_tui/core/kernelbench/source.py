"""What the problem's source says, read with `ast` only (the problem is never imported here).

Candidate dimensions are the module-level integer constants: `N = 2048 * 2`, each name of
`D, H, W = (16, 32, 32)` and of `height = width = 256`, and each element of a literal tuple such as `input_shape = (32768,)` (named
`input_shape_0`). Which of them are dimensions is measured later, by perturbation. The setter generated
here assigns chosen constants and re-runs every later module-level assignment that depends on them
(`bias_shape = (out_features,)`), so derived values follow, in the probe and in the written reference.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate

SETTER = "_kt_set_dimensions"


@dataclass(frozen=True)
class Candidate:
    name: str  # the dimension name it would get
    value: int
    target: str  # the module-level name assigned
    index: int | None = None  # element of a literal tuple, or None for a plain name


@dataclass(frozen=True)
class Problem:
    path: str
    text: str
    tree: ast.Module
    candidates: tuple[Candidate, ...]

    @property
    def values(self) -> dict[str, int]:
        return {c.name: c.value for c in self.candidates}


def _int_of(node: ast.expr) -> int | None:
    """The value of an integer constant expression without names (`2048 * 2`), else None."""
    if any(isinstance(n, (ast.Name, ast.Call, ast.Attribute)) for n in ast.walk(node)):
        return None
    try:
        value = evaluate(ast.unparse(node), {})
    except ExpressionError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_bool(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _candidates(tree: ast.Module) -> list[Candidate]:
    found: dict[str, Candidate] = {}

    def add(c: Candidate) -> None:
        found.pop(c.name, None)  # a reassigned name counts where it is last assigned
        found[c.name] = c

    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        value = stmt.value
        if len(stmt.targets) > 1:  # height = width = 256
            n = None if _is_bool(value) else _int_of(value)
            if n is not None and all(isinstance(t, ast.Name) for t in stmt.targets):
                for t in stmt.targets:
                    add(Candidate(t.id, n, t.id))  # type: ignore[attr-defined]
            continue
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            if _is_bool(value):
                continue
            n = _int_of(value)
            if n is not None:
                add(Candidate(target.id, n, target.id))
            elif isinstance(value, ast.Tuple) and value.elts:
                ints = [None if _is_bool(e) else _int_of(e) for e in value.elts]
                if all(i is not None for i in ints):
                    for k, i in enumerate(ints):
                        add(Candidate(f"{target.id}_{k}", int(i), target.id, k))  # type: ignore[arg-type]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                if isinstance(t, ast.Name) and not _is_bool(v) and (n := _int_of(v)) is not None:
                    add(Candidate(t.id, n, t.id))
    return list(found.values())


def parse(path: str, text: str) -> Problem:
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise TaskError(f"{path}: not valid Python (line {exc.lineno}: {exc.msg})") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in defined]
    if missing:
        raise TaskError(f"{path}: not a KernelBench problem: no {', '.join(missing)} defined at module level")
    return Problem(path, text, tree, tuple(_candidates(tree)))


def _assigned(stmt: ast.stmt) -> set[str]:
    names: set[str] = set()
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    for t in targets:
        names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def setter_source(problem: Problem, settable: list[str]) -> str:
    """`def _kt_set_dimensions(dims)`: assign the `settable` candidates from `dims`, then re-run the
    module-level assignments that depend on them, in source order."""
    by_target: dict[str, list[Candidate]] = {}
    for c in problem.candidates:
        if c.name in settable:
            by_target.setdefault(c.target, []).append(c)
    lines: list[str] = []
    changed: set[str] = set()
    done: set[str] = set()
    for stmt in problem.tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            continue
        targets = _assigned(stmt)
        mine = [t for t in targets if t in by_target]
        if mine and isinstance(stmt, ast.Assign):
            for target in mine:
                if target in done:
                    continue
                done.add(target)
                cands = by_target[target]
                if cands[0].index is None:
                    lines.append(f"{target} = int(dims[{cands[0].name!r}])")
                else:
                    elements = _literal_elements(problem, target)
                    for c in cands:
                        elements[c.index] = f"int(dims[{c.name!r}])"  # type: ignore[index]
                    lines.append(f"{target} = ({', '.join(elements)},)")
                changed.add(target)
            continue
        used = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)} if stmt.value else set()
        if used & changed:
            lines.append(ast.unparse(stmt))
            changed.update(targets)
    names = sorted(changed)
    body = [f"global {', '.join(names)}"] if names else []
    body += lines or ["pass"]
    return f"def {SETTER}(dims):\n" + "".join(f"    {line}\n" for line in body)


def _literal_elements(problem: Problem, target: str) -> list[str]:
    values = {c.index: str(c.value) for c in problem.candidates if c.target == target and c.index is not None}
    return [values[i] for i in range(len(values))]


# --- get_inputs: plain draws or not -------------------------------------------------------------------

DRAWS = {"rand": "uniform", "randn": "normal", "randint": "randint"}


@dataclass(frozen=True)
class Draw:
    """One element of a plain get_inputs: a torch.rand/randn/randint call (or a number)."""

    kind: str  # uniform | normal | randint | number
    low: str | int | float | None = None  # randint bounds as expressions over constants
    high: str | int | float | None = None


def _torch_call(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "torch"
        and node.func.attr in DRAWS
    ):
        return node.func.attr
    return None


def plain_inputs(problem: Problem) -> list[Draw] | None:
    """The draws of get_inputs when it only returns torch.rand/randn/randint calls and numbers (directly
    or through local names assigned once); None when it does anything else."""
    fn = next(n for n in problem.tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs")
    if fn.args.args or fn.args.vararg or fn.args.kwonlyargs:
        return None
    local: dict[str, ast.expr] = {}
    returned: list[ast.expr] | None = None
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if stmt.targets[0].id in local:
                return None
            local[stmt.targets[0].id] = stmt.value
            continue
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)) and returned is None:
            returned = list(stmt.value.elts)
            continue
        return None
    if returned is None:
        return None
    draws = []
    for node in returned:
        if isinstance(node, ast.Name) and node.id in local:
            node = local[node.id]
        draw = _draw(node)
        if draw is None:
            return None
        draws.append(draw)
    return draws


def _draw(node: ast.expr) -> Draw | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Draw("number")
    kind = _torch_call(node)
    if kind is None:
        return None
    call = node
    assert isinstance(call, ast.Call)
    if any(k.arg not in (None,) for k in call.keywords):
        return None  # dtype=, device=, generator=: not a plain draw
    if kind != "randint":
        return Draw(DRAWS[kind])
    if len(call.args) == 3:
        low, high = ast.unparse(call.args[0]), ast.unparse(call.args[1])
    elif len(call.args) == 2:
        low, high = "0", ast.unparse(call.args[0])
    else:
        return None
    return Draw("randint", low, high)
