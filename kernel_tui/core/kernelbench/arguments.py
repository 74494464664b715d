"""Step 5 of an import: the task's launch arguments (inputs, parameters, outputs, then the dimensions as
scalars) with their distributions and tolerances, and the cost model."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate, names_in
from kernel_tui.core.kernelbench import initializers, source
from kernel_tui.core.kernelbench.fit import Expr, Sample, fit, fit_sum, product
from kernel_tui.core.kernelbench.measure import ITEMSIZE, Measured, Probed
from kernel_tui.core.kernelbench.sizes import SmallRuns

ZERO_SHARE = 1e-2  # atol at most this share of |expected|'s 90th percentile: an all-zeros output fails


@dataclass
class Entry:
    """One launch argument: a tensor (shape expressions) or a scalar."""

    name: str
    kind: str  # input | parameter | output | scalar
    dtype: str
    shape: list[Expr] = field(default_factory=list)
    value: Expr | float | None = None
    distribution: dict[str, Any] | None = None
    atol: float | None = None
    atol_scale: float | None = None


@dataclass
class Arguments:
    """The launch arguments, and what the written files need to know of them."""

    entries: list[Entry]
    forward: list[str]  # the names forward's inputs get
    outputs: list[str]
    generator: bool  # inputs drawn by the problem's own get_inputs() (inputs.py), not by distributions


def _launch_name(name: str) -> str:
    return re.sub(r"\W", "_", name.replace(".", "_"))


def launch_arguments(problem: source.Problem, p: Probed, runs: SmallRuns, tol: float, notes: list[str]) -> Arguments:
    """Inputs, parameters, outputs and the dimensions, in that order; TaskError when two share a name."""
    inputs, forward, generator = _inputs(problem, p, notes)
    parameters = _parameters(problem.path, p, runs, notes)
    outputs, out_names = _outputs(p, runs, tol, notes)
    entries = [*inputs, *parameters, *outputs, *(Entry(n, "scalar", "int64", value=n) for n in p.dims)]
    launch = [e.name for e in entries]
    dupes = {n for n in launch if launch.count(n) > 1}
    if dupes:
        raise TaskError(f"{problem.path}: launch argument names collide: {sorted(dupes)}")
    return Arguments(entries, forward, out_names, generator)


def _inputs(problem: source.Problem, p: Probed, notes: list[str]) -> tuple[list[Entry], list[str], bool]:
    """get_inputs()'s elements as entries, the names they get, and whether the problem's own get_inputs()
    draws them (when any one has no distribution of the task format)."""
    first = p.measured.base
    n_in = len(first["inputs"])
    entries: list[Entry] = []
    names = p.forward[:n_in] if len(p.forward) >= n_in else []
    if not names:
        names = [f"input{i}" for i in range(n_in)]
        notes.append("forward's parameters could not be matched to get_inputs(): inputs named input0, input1, ...")
    draws = source.plain_inputs(problem)
    use_generator = draws is None
    for i, (x, shape) in enumerate(zip(first["inputs"], p.measured.shapes[:n_in])):
        if x["kind"] == "scalar":
            dtype = "int64" if x["type"] == "int" else "float32"
            entries.append(Entry(names[i], "scalar", dtype, value=_scalar_value(i, x, p.measured, p.dims, p.base, notes)))
            continue
        dtype = x["dtype"]
        dist = None
        if draws is not None:
            dist = _draw_distribution(draws[i], problem, p.dims)
            if dist is None:
                use_generator = True
        entries.append(Entry(names[i], "input", dtype, shape, distribution=dist))
    if use_generator:
        for e in entries:
            e.distribution = None
        notes.append("inputs drawn by the problem's own get_inputs() (inputs.py), not by distributions")
    return entries, names, use_generator


def _parameters(path: str, p: Probed, runs: SmallRuns, notes: list[str]) -> list[Entry]:
    """The model's parameters and buffers, with the distributions their initializers follow."""
    first = p.measured.base
    n_in = len(first["inputs"])
    small_dims, small_run = runs.small
    shapes = p.measured.shapes
    state_shapes = {s["name"]: shapes[n_in + j] for j, s in enumerate(first["state"])}
    entries = []
    for j, s in enumerate(first["state"]):
        why = initializers.unrepresentable(s["name"], s["buffer"], small_run["state"].get(s["name"]), s["dtype"])
        if why:
            raise TaskError(f"{path}: {why}")
        dist, note = initializers.distribution(s["name"], s["owner"], state_shapes, small_dims,
                                               small_run["state"].get(s["name"]), s["dtype"])
        if note:
            notes.append(note)
        entries.append(Entry(_launch_name(s["name"]), "parameter", s["dtype"], shapes[n_in + j], distribution=dist))
    return entries


def _outputs(p: Probed, runs: SmallRuns, tol: float, notes: list[str]) -> tuple[list[Entry], list[str]]:
    """forward's outputs, each with an atol that an all-zeros answer cannot meet at the kept shapes, and their names."""
    first = p.measured.base
    out_shapes = p.measured.shapes[len(first["inputs"]) + len(first["state"]):]
    out_names = ["out"] if not first["tuple"] else [f"out{i}" for i in range(len(first["outputs"]))]
    small_dims = runs.small[0]
    entries = []
    for i, (x, shape) in enumerate(zip(first["outputs"], out_shapes)):
        e = Entry(out_names[i], "output", x["dtype"], shape)
        q = min(r["outputs"][i].get("q90", 0.0) for _, r in runs.chosen)
        if x["dtype"].startswith(("float", "bfloat")):
            e.atol_scale = ZERO_SHARE  # the same cap at every shape, the real sizes included
            if q > 0 and ZERO_SHARE * q < tol:
                e.atol = float(f"{ZERO_SHARE * q:.2g}")
            elif q == 0:
                notes.append(f"{e.name}: 90% of its values are zero at {small_dims}; an all-zeros answer may pass")
        entries.append(e)
    return entries, out_names


def _scalar_value(i: int, x: dict[str, Any], measured: Measured, dims: list[str], base: dict[str, int],
                  notes: list[str]) -> Expr | float:
    """A number get_inputs() passes: an expression over the dimensions where it follows them (a size handed
    to forward, N = the rows of x, must shrink with x at the interpreter's sizes), else its value."""
    seen = [Sample(d, m["inputs"][i]["value"]) for d, m in measured.samples
            if m["inputs"][i].get("kind") == "scalar" and isinstance(m["inputs"][i].get("value"), int)]
    if x["type"] != "int" or len({s.value for s in seen}) < 2:
        return x["value"]
    expr = fit(seen, base, dims)
    if expr is None:
        notes.append(f"input {i}: a number that changes with the dimensions but follows no expression over them: "
                     f"kept at {x['value']}")
        return x["value"]
    return expr


def _draw_distribution(draw: source.Draw, problem: source.Problem, dims: list[str]) -> dict[str, Any] | None:
    if draw.kind == "uniform":
        return {"distribution": "uniform", "low": 0, "high": 1}
    if draw.kind == "normal":
        return {"distribution": "normal", "mean": 0, "standardDeviation": 1}
    if draw.kind == "randint":
        low, high = _over_dims(draw.low, problem, dims), _over_dims(draw.high, problem, dims)
        if low is None or high is None:
            return None
        return {"distribution": "randint", "low": low, "high": high}
    return None


def _over_dims(expr: object, problem: source.Problem, dims: list[str]) -> Expr | None:
    """A randint bound as an expression over the dimensions (other constants by value), or None."""
    values = {c.name: c.value for c in problem.candidates if c.index is None}
    try:
        tree = ast.parse(str(expr), mode="eval")
    except SyntaxError:
        return None
    if any(isinstance(n, ast.Name) and n.id not in values for n in ast.walk(tree)):
        return None
    text = ast.unparse(_Substitute({k: v for k, v in values.items() if k not in dims}).visit(tree))
    try:
        value = evaluate(text, {d: values[d] for d in dims})
    except ExpressionError:
        return None
    return text if names_in(text) else int(value)


class _Substitute(ast.NodeTransformer):
    """Constants that are not dimensions, by value."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(self.values[node.id]) if node.id in self.values else node


def cost_model(p: Probed, entries: list[Entry]) -> dict[str, Any]:
    """task.json's costModel: FLOPs as fitted over the dimensions (where one fits), bytes as every tensor once."""
    flops, label = _flops(p.measured, p.base, p.dims)
    return {"flops": flops, "bytes": _bytes(entries), "label": label}


def _flops(measured: Measured, base: dict[str, int], dims: list[str]) -> tuple[Expr, str]:
    ops = sorted({op for _, m in measured.samples for op in m["flops"]})
    total = sum(measured.base["flops"].values())
    if not ops:
        return 0, "FLOPs: torch.utils.flop_counter counts none (no matmul or convolution); bytes: every tensor once"
    series = {op: [Sample(d, m["flops"].get(op, 0)) for d, m in measured.samples] for op in ops}
    composites = sorted({e for s in measured.shapes for e in s if isinstance(e, str) and not e.isidentifier()})
    expr = fit_sum(series, base, dims, composites)
    if expr is not None:
        return expr, f"FLOPs of {', '.join(o.split('.')[-1] for o in ops)} (torch.utils.flop_counter); bytes: every tensor once"
    return total, ("FLOPs at the problem's own sizes only (torch.utils.flop_counter; no expression over the "
                   "dimensions fits); bytes: every tensor once")


def _bytes(entries: list[Entry]) -> Expr:
    """Every tensor once; tensors of the same shape expression counted together."""
    lit = 0
    terms: dict[str, int] = {}
    for e in entries:
        if e.kind == "scalar":
            continue
        size = product(e.shape)
        if isinstance(size, int):
            lit += size * ITEMSIZE[e.dtype]
        else:
            terms[size] = terms.get(size, 0) + ITEMSIZE[e.dtype]
    parts = [f"{k} * {v}" for v, k in terms.items()] + ([str(lit)] if lit else [])
    return " + ".join(parts) if parts else 0
