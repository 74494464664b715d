"""Steps 1-3 of an import: the first child's measurements on the meta device, which candidates are
dimensions (some input or parameter axis moves with them), and every axis fitted as an expression over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_tui.core.errors import TaskError
from kernel_tui.core.kernelbench import child, source
from kernel_tui.core.kernelbench.fit import Expr, Sample, fit

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1}
TASK_DTYPES = set(ITEMSIZE) - {"uint8"}
# distinct moves, up and down; the run of +1..+16 shows a floor form every remainder of its divisor
SINGLE_MOVES = (lambda v: v + 24, lambda v: 2 * v, lambda v: v // 2 + 1, lambda v: v // 8 + 3,
                *((lambda v, k=k: v + k) for k in range(1, 17)))


def signature(m: dict[str, Any]) -> tuple:
    """What must not change between measurements: how many of each, ranks, names, dtypes."""
    return (
        tuple((x["kind"], len(x.get("shape", [])), x.get("dtype")) for x in m["inputs"]),
        tuple((s["name"], len(s["shape"]), s["dtype"]) for s in m["state"]),
        tuple((x["kind"], len(x.get("shape", [])), x.get("dtype")) for x in m["outputs"]),
    )


def _axes(m: dict[str, Any]) -> list[int]:
    """Every axis of the inputs and the state, flattened (what makes a candidate a dimension)."""
    sizes: list[int] = []
    for x in m["inputs"]:
        sizes += x.get("shape", [])
    for s in m["state"]:
        sizes += s["shape"]
    return sizes


def _all_axes(m: dict[str, Any]) -> list[int]:
    return _axes(m) + [n for x in m["outputs"] for n in x.get("shape", [])]


@dataclass
class Measured:
    base: dict[str, Any]
    shapes: list[list[Expr]]  # fitted, once known
    samples: list[tuple[dict[str, int], dict[str, Any]]]  # (dims, measurement), base first


def first_probe(problem: source.Problem, precision: str, timeout: float) -> tuple[list[str], Measured, list[str]]:
    base = problem.values
    names = [c.name for c in problem.candidates]
    meta = [dict(base)]
    moved_by: list[str | None] = [None]
    for name in names:
        seen = {base[name]}
        for move in SINGLE_MOVES:
            v = move(base[name])
            if v in seen or v < 1:
                continue
            seen.add(v)
            meta.append({**base, name: v})
            moved_by.append(name)
    answer = child.probe({"path": problem.path, "precision": precision, "meta": meta,
                          "configure": source.setter_source(problem, names)}, timeout)
    first = answer["meta"][0]
    if not first["ok"]:
        raise TaskError(f"{problem.path}: the model does not run on the meta device: {first['error']}")
    _check_kinds(problem.path, first)
    sig = signature(first)
    dims: list[str] = []
    for m, mover in zip(answer["meta"], moved_by):
        if mover is None or mover in dims or not m["ok"] or signature(m) != sig:
            continue
        if _axes(m) != _axes(first):
            dims.append(mover)
    dims = [n for n in names if n in dims]  # the order they are assigned in the file
    samples = [(d, m) for d, m, name in zip(meta, answer["meta"], moved_by)
               if m["ok"] and signature(m) == sig and (name is None or name in dims)]
    return answer["forward"], Measured(first, [], [(_restrict(d, dims), m) for d, m in samples]), dims


def _restrict(d: dict[str, int], dims: list[str]) -> dict[str, int]:
    return {k: d[k] for k in dims}


def _check_kinds(path: str, m: dict[str, Any]) -> None:
    for i, x in enumerate(m["inputs"]):
        if x["kind"] == "other":
            raise TaskError(f"{path}: get_inputs() element {i} is {x['type']}, not a tensor or a number")
    for i, x in enumerate(m["outputs"]):
        if x["kind"] != "tensor":
            raise TaskError(f"{path}: forward returns {x.get('type', 'a number')} (output {i}), not a tensor")
    if not m["outputs"]:
        raise TaskError(f"{path}: forward returns no tensor")
    if m.get("attributes"):
        raise TaskError(f"{path}: the Model keeps tensor(s) {', '.join(m['attributes'])} as plain attributes, neither "
                        "parameters nor buffers: the task format cannot hand them to a kernel")
    for x in [*m["inputs"], *m["state"], *m["outputs"]]:
        if x.get("dtype") and x["dtype"] not in TASK_DTYPES:
            raise TaskError(f"{path}: a tensor of dtype {x['dtype']} (the task format has no such dtype)")


def fit_all(path: str, measured: Measured, dims: list[str], base: dict[str, int]) -> list[list[Expr]]:
    """Shape expressions of every input, state entry and output, in that order."""
    first = measured.base
    shapes: list[list[Expr]] = []
    labels = ([f"input {i}" for i in range(len(first["inputs"]))] + [s["name"] for s in first["state"]]
              + [f"output {i}" for i in range(len(first["outputs"]))])
    flat = [_all_axes(m) for _, m in measured.samples]
    ranks = ([len(x.get("shape", [])) for x in first["inputs"]] + [len(s["shape"]) for s in first["state"]]
             + [len(x["shape"]) for x in first["outputs"]])
    k = 0
    for label, rank in zip(labels, ranks):
        shape: list[Expr] = []
        for axis in range(rank):
            samples = [Sample(d, f[k]) for (d, _), f in zip(measured.samples, flat)]
            expr = fit(samples, base, dims)
            if expr is None:
                sizes = sorted({s.value for s in samples})[:6]
                raise TaskError(f"{path}: cannot express axis {axis} of {label} over the dimensions "
                                f"{', '.join(dims) or '(none)'} (sizes seen: {sizes})")
            shape.append(expr)
            k += 1
        shapes.append(shape)
    return shapes


@dataclass
class Probed:
    """What the first child and the fits say about a problem."""

    forward: list[str]  # forward's parameter names
    measured: Measured
    dims: list[str]  # the candidates that are dimensions, in the order the file assigns them
    base: dict[str, int]  # the dimensions at the problem's own sizes
    setter: str  # source that sets the dimensions (and what derives from them) before the model is built


def probe(problem: source.Problem, precision: str, timeout: float) -> Probed:
    """Steps 1-3: the first child, then every axis fitted over the dimensions it found."""
    forward, measured, dims = first_probe(problem, precision, timeout)
    base = {n: problem.values[n] for n in dims}
    setter = source.setter_source(problem, dims)
    measured.shapes = fit_all(problem.path, measured, dims, base)
    return Probed(forward, measured, dims, base, setter)
