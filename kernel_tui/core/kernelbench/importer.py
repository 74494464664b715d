"""Import one KernelBench problem file as a task directory.

1. Read the source (`source.py`): candidate dimensions, the dimension setter, whether get_inputs is plain.
2. First child (`probe.py`): shapes on the meta device at the problem's sizes and with each candidate
   moved on its own (+7, +13, +24, x2, +1: distinct moves, so M == N == 4096 are never confused). A
   candidate is a dimension when some input or parameter axis moves with it.
3. Fit every axis and every operator's FLOPs (`fit.py`), choose interpreter-sized shapes (one ragged).
4. Second child: verify the fits with every dimension moved at once; run the reference for real on the
   small shapes (it must work there), measure the outputs' magnitude (tolerances) and the parameters'
   values (their distributions).
5. Write the directory (`writer.py`).
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_tui.core.errors import TaskError
from kernel_tui.core.expressions import ExpressionError, evaluate, names_in
from kernel_tui.core.kernelbench import child, initializers, source, writer
from kernel_tui.core.kernelbench.fit import Expr, Sample, fit, fit_sum, product
from kernel_tui.core.task import MAX_INTERPRETER_ELEMENTS

PRECISIONS = {"fp32": ("float32", 1e-4), "fp16": ("float16", 1e-2), "bf16": ("bfloat16", 1e-2)}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1}
TASK_DTYPES = set(ITEMSIZE) - {"uint8"}
# distinct moves, up and down; the run of +1..+16 shows a floor form every remainder of its divisor
SINGLE_MOVES = (lambda v: v + 24, lambda v: 2 * v, lambda v: v // 2 + 1, lambda v: v // 8 + 3,
                *((lambda v, k=k: v + k) for k in range(1, 17)))
JOINT_PRIMES = (3, 5, 11, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67)
INTERPRETER_ELEMENTS = 262_144  # one call's tensors, all together, on Triton's CPU interpreter
SMALL_DIM = 16  # dimensions at or below this (kernel sizes, few channels) are left alone when shrinking
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


@dataclass(frozen=True)
class Imported:
    out: Path
    name: str
    dims: dict[str, int]
    notes: list[str]


def _launch_name(name: str) -> str:
    return re.sub(r"\W", "_", name.replace(".", "_"))


def _level(path: Path) -> int | None:
    m = re.fullmatch(r"level(\d+)", path.parent.name)
    return int(m.group(1)) if m else None


def task_name(path: Path) -> str:
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", path.stem).strip("_").lower()
    level = _level(path)
    return f"kb_l{level}_{stem}" if level is not None else f"kb_{stem}"


# --- measuring -----------------------------------------------------------------------------------------

def _signature(m: dict[str, Any]) -> tuple:
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


def _first_probe(problem: source.Problem, precision: str, timeout: float) -> tuple[list[str], Measured, list[str]]:
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
    sig = _signature(first)
    dims: list[str] = []
    for m, mover in zip(answer["meta"], moved_by):
        if mover is None or mover in dims or not m["ok"] or _signature(m) != sig:
            continue
        if _axes(m) != _axes(first):
            dims.append(mover)
    dims = [n for n in names if n in dims]  # the order they are assigned in the file
    samples = [(d, m) for d, m, name in zip(meta, answer["meta"], moved_by)
               if m["ok"] and _signature(m) == sig and (name is None or name in dims)]
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


# --- fitting -------------------------------------------------------------------------------------------

def _fit_all(path: str, measured: Measured, dims: list[str], base: dict[str, int]) -> list[list[Expr]]:
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


def _elements(shapes: list[list[Expr]], dims: dict[str, int]) -> float:
    total = 0
    for shape in shapes:
        n = 1
        for e in shape:
            try:
                v = evaluate(e, dims)
            except ExpressionError:
                return math.inf
            if not isinstance(v, int) or v < 1:
                return math.inf
            n *= v
        total += n
    return total


def _shrink(shapes: list[list[Expr]], base: dict[str, int], budget: int, keep: str | None = None) -> dict[str, int]:
    """Halve the largest dimension (not `keep`) until one call's tensors fit in `budget` elements."""
    dims = dict(base)
    for floor in (SMALL_DIM, 1):
        while _elements(shapes, dims) > budget:
            big = [n for n in dims if dims[n] > floor and n != keep]
            if not big:
                break
            n = max(big, key=lambda k: dims[k])
            dims[n] = max(floor, (dims[n] + 1) // 2)
    return dims


def _not_degenerate(runs: list[tuple[dict[str, int], dict[str, Any]]]) -> list[tuple[dict[str, int], dict[str, Any]]]:
    """Drop small shapes where an output all but vanishes next to another small shape's (a GroupNorm
    whose groups shrank to one channel normalizes everything to zero): such a shape tests nothing."""
    if len(runs) < 2:
        return runs
    n = len(runs[0][1]["outputs"])
    best = [max(r["outputs"][i].get("q90", 0.0) for _, r in runs) for i in range(n)]
    kept = [(d, r) for d, r in runs
            if all(r["outputs"][i].get("q90", 0.0) >= 1e-3 * best[i] for i in range(n))]
    return kept or runs


def _ragged_variants(small: dict[str, int], base: dict[str, int]) -> list[dict[str, int]]:
    large = [n for n in small if small[n] > SMALL_DIM or small[n] != base[n]]
    out = []
    odd = {n: (small[n] - 1 if small[n] % 2 == 0 and small[n] > 2 else small[n]) for n in small}
    out.append({**small, **{n: odd[n] for n in large}})
    up = {n: (small[n] + 1 if small[n] % 2 == 0 else small[n]) for n in small}
    out.append({**small, **{n: up[n] for n in large}})
    for n in sorted(large, key=lambda k: -small[k]):
        out.append({**small, n: odd[n]})
    unique: list[dict[str, int]] = []
    for d in out:
        if d != small and d not in unique:
            unique.append(d)
    return unique


def _joints(base: dict[str, int], dims: list[str]) -> list[dict[str, int]]:
    return [
        {n: base[n] + JOINT_PRIMES[i % len(JOINT_PRIMES)] for i, n in enumerate(dims)},
        {n: 2 * base[n] for n in dims},
        {n: 3 * base[n] for n in dims},
    ]


# --- the import ------------------------------------------------------------------------------------------

def import_problem(path: Path, out: Path | None = None, *, precision: str = "fp32", baseline: Path | None = None,
                   force: bool = False, timeout: float = child.DEFAULT_TIMEOUT) -> Imported:
    """Import `path` as a task directory at `out` (default: ./<task name>); TaskError says why not."""
    path = Path(path).resolve()
    if precision not in PRECISIONS:
        raise TaskError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: no such problem file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read: {exc}") from None
    baseline_text = None
    if baseline is not None:
        try:
            baseline_text = Path(baseline).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskError(f"{baseline}: cannot read the baseline: {exc}") from None
    name = task_name(path)
    out = Path(out) if out is not None else Path(name)
    if out.exists() and not force:
        raise TaskError(f"{out}: already exists (pass --force to replace it)")
    problem = source.parse(str(path), text)
    torch_dtype, tol = PRECISIONS[precision]
    notes: list[str] = []

    forward_names, measured, dims = _first_probe(problem, precision, timeout)
    base = {n: problem.values[n] for n in dims}
    setter = source.setter_source(problem, dims)
    shapes = _fit_all(str(path), measured, dims, base)
    measured.shapes = shapes

    # second child: every dimension moved at once (verifies the fits), and real runs at small sizes
    # the plain shrink first; then ones that leave one dimension alone, for a problem that ties it to a
    # constant (out_channels divisible by groups = in_channels)
    small: list[dict[str, int]] = []
    for keep in [None, *dims]:
        d = _shrink(shapes, base, INTERPRETER_ELEMENTS, keep)
        if d not in small and _elements(shapes, d) <= INTERPRETER_ELEMENTS:
            small.append(d)
    if not small:
        big = _shrink(shapes, base, INTERPRETER_ELEMENTS)
        if _elements(shapes, big) > MAX_INTERPRETER_ELEMENTS:
            raise TaskError(f"{path}: no shape is small enough for the CPU interpreter: at "
                            f"{big or 'the only sizes'} one call holds {_elements(shapes, big):,.0f} elements "
                            "(sizes that depend on no dimension cannot shrink)")
        small.append(big)
    ragged = [r for d in small for r in _ragged_variants(d, base)]
    ragged = [r for i, r in enumerate(ragged) if r not in ragged[:i] and r not in small]
    joints = _joints(base, dims) if dims else []
    metas = joints + small + ragged
    reals = small + ragged
    answer = child.probe({"path": str(path), "precision": precision, "configure": setter,
                          "meta": metas, "real": reals}, timeout)
    sig = _signature(measured.base)
    for d, m in zip(metas, answer["meta"]):
        if m["ok"] and _signature(m) == sig:
            measured.samples.append((d, m))
    verified = sum(1 for d, m in zip(joints, answer["meta"]) if m["ok"] and _signature(m) == sig)
    # refit on every measurement: a floor form's offset is pinned down by the small sizes too
    shapes = _fit_all(str(path), measured, dims, base)
    measured.shapes = shapes
    if dims and not verified:
        notes.append("shape expressions checked with one dimension moved at a time only "
                     "(no run with every dimension moved at once succeeded)")

    n_in, n_state = len(measured.base["inputs"]), len(measured.base["state"])
    out_shapes = shapes[n_in + n_state :]
    valid = []
    for d, r in zip(reals, answer["real"]):
        if not r["ok"]:
            continue
        if any(not o.get("finite", True) for o in r["outputs"]):
            continue
        expected = [[int(evaluate(e, d)) for e in s] for s in out_shapes]
        if [o.get("shape") for o in r["outputs"]] != expected:
            raise TaskError(f"{path}: at {d} the outputs have shapes {[o.get('shape') for o in r['outputs']]}, "
                            f"not the fitted {expected}")
        valid.append((d, r))
    small_ok = _not_degenerate([(d, r) for d, r in valid if d in small])
    if not small_ok:
        why = next((r["error"] for r in answer["real"] if not r["ok"]), "NaN/Inf in the output")
        raise TaskError(f"{path}: the reference fails at interpreter sizes {small[0]}: {why}")
    small_dims, small_run = small_ok[0]
    ragged_ok = [(d, r) for d, r in valid if d in ragged]
    ragged_ok.sort(key=lambda v: sum(abs(v[0][k] - small_dims[k]) > 1 for k in small_dims))  # near the small one
    if not ragged_ok:
        notes.append("no ragged interpreter shape runs (odd sizes are refused by the problem)")
    seed_forward = any(not o.get("same", True) for _, r in valid for o in r["outputs"])
    if seed_forward:
        notes.append("forward draws random numbers: the reference seeds torch with 0 before each call")

    # launch arguments
    first = measured.base
    entries: list[Entry] = []
    names = forward_names[: len(first["inputs"])] if len(forward_names) >= len(first["inputs"]) else []
    if not names:
        names = [f"input{i}" for i in range(len(first["inputs"]))]
        notes.append("forward's parameters could not be matched to get_inputs(): inputs named input0, input1, ...")
    draws = source.plain_inputs(problem)
    use_generator = draws is None
    for i, (x, shape) in enumerate(zip(first["inputs"], shapes[:n_in])):
        if x["kind"] == "scalar":
            dtype = "int64" if x["type"] == "int" else "float32"
            entries.append(Entry(names[i], "scalar", dtype, value=_scalar_value(i, x, measured, dims, base, notes)))
            continue
        dtype = x["dtype"]
        dist = None
        if draws is not None:
            dist = _draw_distribution(draws[i], problem, dims)
            if dist is None:
                use_generator = True
        entries.append(Entry(names[i], "input", dtype, shape, distribution=dist))
    if use_generator:
        for e in entries:
            e.distribution = None
        notes.append("inputs drawn by the problem's own get_inputs() (inputs.py), not by distributions")

    state_shapes = {s["name"]: shapes[n_in + j] for j, s in enumerate(first["state"])}
    for j, s in enumerate(first["state"]):
        why = initializers.unrepresentable(s["name"], s["buffer"], small_run["state"].get(s["name"]), s["dtype"])
        if why:
            raise TaskError(f"{path}: {why}")
        dist, note = initializers.distribution(s["name"], s["owner"], state_shapes, small_dims,
                                               small_run["state"].get(s["name"]), s["dtype"])
        if note:
            notes.append(note)
        entries.append(Entry(_launch_name(s["name"]), "parameter", s["dtype"], shapes[n_in + j], distribution=dist))
    out_names = ["out"] if not first["tuple"] else [f"out{i}" for i in range(len(first["outputs"]))]
    chosen = [small_ok[0]] + ragged_ok[:1]
    for i, (x, shape) in enumerate(zip(first["outputs"], out_shapes)):
        e = Entry(out_names[i], "output", x["dtype"], shape)
        q = min(r["outputs"][i].get("q90", 0.0) for _, r in chosen)
        if x["dtype"].startswith(("float", "bfloat")):
            e.atol_scale = ZERO_SHARE  # the same cap at every shape, the real sizes included
            if q > 0 and ZERO_SHARE * q < tol:
                e.atol = float(f"{ZERO_SHARE * q:.2g}")
            elif q == 0:
                notes.append(f"{e.name}: 90% of its values are zero at {small_dims}; an all-zeros answer may pass")
        entries.append(e)
    for n in dims:
        entries.append(Entry(n, "scalar", "int64", value=n))
    launch = [e.name for e in entries]
    dupes = {n for n in launch if launch.count(n) > 1}
    if dupes:
        raise TaskError(f"{path}: launch argument names collide: {sorted(dupes)}")

    flops, flops_label = _flops(measured, base, dims)
    bytes_expr = _bytes(entries)

    layout = writer.Layout(
        forward=names, state=[s["name"] for s in first["state"]],
        buffers=[s["name"] for s in first["state"] if s["buffer"]], outputs=len(out_names), dims=dims,
        dtype=torch_dtype, tuple_output=bool(first["tuple"]), seed_forward=seed_forward)
    files = {"reference.py": writer.reference_source(text, path.stem, layout, setter)}
    if use_generator:
        files["inputs.py"] = writer.inputs_source(text, path.stem, layout, setter)
    if baseline_text is not None:
        files["baseline.py"] = baseline_text
    else:
        files["baseline.py"] = writer.baseline_source(text, path.stem, layout, setter)

    shapes_list = [{"name": "small", "dims": small_dims, "interpreter": True}]
    if ragged_ok:
        shapes_list.append({"name": "ragged", "dims": ragged_ok[0][0], "interpreter": True})
    spec: dict[str, Any] = {
        "schemaVersion": 2,
        "name": name,
        "description": _description(problem, path),
        "language": "triton",
        "entrypoint": "launch",
        "precision": precision,
        "shape": base,
        "tensors": [_tensor_json(e, precision) for e in entries],
        "launchArguments": launch,
        "reference": {"filename": "reference.py", "entrypoint": "reference", "outputs": out_names},
        "baseline": {"filename": "baseline.py", "language": "triton" if baseline_text is not None else "pytorch"},
        "correctness": {"seeds": [17, 29], "atol": tol, "rtol": tol, "shapes": shapes_list},
        "costModel": {"flops": flops, "bytes": bytes_expr, "label": flops_label},
        "origin": {"kind": "kernelbench", "path": str(path), "sha256": hashlib.sha256(raw).hexdigest(),
                   "problem": path.stem, "precision": precision, "notes": notes},
    }
    if _level(path) is not None:  # known from a levelN folder only; no level beats a wrong or null one
        spec["origin"]["level"] = _level(path)
    if not dims:
        spec["shape"] = {}
    if use_generator:
        spec["generator"] = {"filename": "inputs.py", "entrypoint": "make_inputs"}
    writer.write_task(out, files, spec, force)
    return Imported(out, name, base, notes)


def _tensor_json(e: Entry, precision: str) -> dict[str, Any]:
    dtype = e.dtype
    if precision != "fp32" and e.kind != "scalar" and dtype == "float32":
        dtype = PRECISIONS[precision][0]
    d: dict[str, Any] = {"name": e.name, "kind": e.kind, "dtype": dtype}
    if e.kind == "scalar":
        d["value"] = e.value
    else:
        d["shape"] = e.shape
    if e.distribution is not None:
        d["input"] = e.distribution
    if e.atol is not None:
        d["atol"] = e.atol
    if e.atol_scale is not None:
        d["atolScale"] = e.atol_scale
    return d


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


def _description(problem: source.Problem, path: Path) -> str:
    cls = next((n for n in problem.tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    doc = ast.get_docstring(cls) if cls is not None else None
    first = " ".join(doc.split("\n\n")[0].split()) if doc else ""
    level = _level(path)
    where = f"KernelBench level {level} problem {path.stem}" if level is not None else f"KernelBench-format problem {path.stem}"
    return f"{where}: {first}" if first else where
