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

Steps 1-3 are `measure.py`'s; the interpreter's sizes and the runs kept, `sizes.py`'s; the launch arguments
and the cost model, `arguments.py`'s. `import_problem` takes the steps in order, each handing its result to
the next.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_tui.core.errors import TaskError
from kernel_tui.core.kernelbench import child, source, writer
from kernel_tui.core.kernelbench.arguments import Arguments, Entry, cost_model, launch_arguments
from kernel_tui.core.kernelbench.measure import Probed, fit_all, probe, signature
from kernel_tui.core.kernelbench.sizes import SmallRuns, interpreter_sizes, joints, kept_runs

PRECISIONS = {"fp32": ("float32", 1e-4), "fp16": ("float16", 1e-2), "bf16": ("bfloat16", 1e-2)}


@dataclass(frozen=True)
class Imported:
    out: Path
    name: str
    dims: dict[str, int]
    notes: list[str]


def _level(path: Path) -> int | None:
    m = re.fullmatch(r"level(\d+)", path.parent.name)
    return int(m.group(1)) if m else None


def task_name(path: Path) -> str:
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", path.stem).strip("_").lower()
    level = _level(path)
    return f"kb_l{level}_{stem}" if level is not None else f"kb_{stem}"


def import_problem(path: Path, out: Path | None = None, *, precision: str = "fp32", baseline: Path | None = None,
                   force: bool = False, timeout: float = child.DEFAULT_TIMEOUT) -> Imported:
    """Import `path` as a task directory at `out` (default: ./<task name>); TaskError says why not."""
    path = Path(path).resolve()
    if precision not in PRECISIONS:
        raise TaskError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
    raw, text = _read_problem(path)
    baseline_text = None if baseline is None else _read_baseline(baseline)
    name = task_name(path)
    out = Path(out) if out is not None else Path(name)
    if out.exists() and not force:
        raise TaskError(f"{out}: already exists (pass --force to replace it)")
    problem = source.parse(str(path), text)
    notes: list[str] = []  # what a person should know of the import: the task's origin keeps them

    probed = probe(problem, precision, timeout)
    small, ragged = interpreter_sizes(str(path), probed.measured.shapes, probed.base, probed.dims)
    runs = _second_probe(problem, precision, timeout, probed, small, ragged, notes)
    args = launch_arguments(problem, probed, runs, PRECISIONS[precision][1], notes)

    files = _files(problem, probed, runs, args, precision, baseline_text)
    spec = _spec(problem, name, precision, probed, runs, args, baseline_text is not None,
                 _origin(path, raw, precision, notes))
    writer.write_task(out, files, spec, force)
    return Imported(out, name, probed.base, notes)


def _read_problem(path: Path) -> tuple[bytes, str]:
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: no such problem file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read: {exc}") from None
    return raw, text


def _read_baseline(baseline: Path) -> str:
    try:
        return Path(baseline).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{baseline}: cannot read the baseline: {exc}") from None


def _second_probe(problem: source.Problem, precision: str, timeout: float, probed: Probed,
                  small: list[dict[str, int]], ragged: list[dict[str, int]], notes: list[str]) -> SmallRuns:
    """Step 4: the second child moves every dimension at once (verifying the fits, then refitted on every
    measurement) and runs the reference for real at the small and ragged sizes."""
    measured, dims, base = probed.measured, probed.dims, probed.base
    joint = joints(base, dims) if dims else []
    metas = joint + small + ragged
    reals = small + ragged
    answer = child.probe({"path": problem.path, "precision": precision, "configure": probed.setter,
                          "meta": metas, "real": reals}, timeout)
    sig = signature(measured.base)
    for d, m in zip(metas, answer["meta"]):
        if m["ok"] and signature(m) == sig:
            measured.samples.append((d, m))
    verified = sum(1 for d, m in zip(joint, answer["meta"]) if m["ok"] and signature(m) == sig)
    # refit on every measurement: a floor form's offset is pinned down by the small sizes too
    measured.shapes = fit_all(problem.path, measured, dims, base)
    if dims and not verified:
        notes.append("shape expressions checked with one dimension moved at a time only "
                     "(no run with every dimension moved at once succeeded)")
    n_in, n_state = len(measured.base["inputs"]), len(measured.base["state"])
    runs = kept_runs(problem.path, reals, answer["real"], measured.shapes[n_in + n_state :], small, ragged)
    if not runs.ragged:
        notes.append("no ragged interpreter shape runs (odd sizes are refused by the problem)")
    if runs.seed_forward:
        notes.append("forward draws random numbers: the reference seeds torch with 0 before each call")
    return runs


def _files(problem: source.Problem, probed: Probed, runs: SmallRuns, args: Arguments, precision: str,
           baseline_text: str | None) -> dict[str, str]:
    """reference.py, baseline.py (the one given, else the problem's PyTorch) and, where the problem draws its
    own inputs, inputs.py."""
    first = probed.measured.base
    layout = writer.Layout(
        forward=args.forward, state=[s["name"] for s in first["state"]],
        buffers=[s["name"] for s in first["state"] if s["buffer"]], outputs=len(args.outputs), dims=probed.dims,
        dtype=PRECISIONS[precision][0], tuple_output=bool(first["tuple"]), seed_forward=runs.seed_forward,
        names=[e.name for e in args.entries][: len(args.forward) + len(first["state"])])
    text, stem, setter = problem.text, Path(problem.path).stem, probed.setter
    files = {"reference.py": writer.reference_source(text, stem, layout, setter)}
    if args.generator:
        files["inputs.py"] = writer.inputs_source(text, stem, layout, setter)
    if baseline_text is not None:
        files["baseline.py"] = baseline_text
    else:
        files["baseline.py"] = writer.baseline_source(text, stem, layout, setter)
    return files


def _spec(problem: source.Problem, name: str, precision: str, probed: Probed, runs: SmallRuns, args: Arguments,
          triton_baseline: bool, origin: dict[str, Any]) -> dict[str, Any]:
    """task.json's content."""
    tol = PRECISIONS[precision][1]
    shapes_list = [{"name": "small", "dims": runs.small[0], "interpreter": True}]
    if runs.ragged:
        shapes_list.append({"name": "ragged", "dims": runs.ragged[0][0], "interpreter": True})
    spec: dict[str, Any] = {
        "schemaVersion": 2,
        "name": name,
        "description": _description(problem, Path(problem.path)),
        "language": "triton",
        "entrypoint": "launch",
        "precision": precision,
        "shape": probed.base,
        "tensors": [_tensor_json(e, precision) for e in args.entries],
        "launchArguments": [e.name for e in args.entries],
        "reference": {"filename": "reference.py", "entrypoint": "reference", "outputs": args.outputs},
        "baseline": {"filename": "baseline.py", "language": "triton" if triton_baseline else "pytorch"},
        "correctness": {"seeds": [17, 29], "atol": tol, "rtol": tol, "shapes": shapes_list},
        "costModel": cost_model(probed, args.entries),
        "origin": origin,
    }
    if not probed.dims:
        spec["shape"] = {}
    if args.generator:
        spec["generator"] = {"filename": "inputs.py", "entrypoint": "make_inputs"}
    return spec


def _origin(path: Path, raw: bytes, precision: str, notes: list[str]) -> dict[str, Any]:
    """Where the task came from, for people (the engine reads none of it)."""
    origin: dict[str, Any] = {"kind": "kernelbench", "path": str(path), "sha256": hashlib.sha256(raw).hexdigest(),
                              "problem": path.stem, "precision": precision, "notes": notes}
    if _level(path) is not None:  # known from a levelN folder only; no level beats a wrong or null one
        origin["level"] = _level(path)
    return origin


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


def _description(problem: source.Problem, path: Path) -> str:
    cls = next((n for n in problem.tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    doc = ast.get_docstring(cls) if cls is not None else None
    first = " ".join(doc.split("\n\n")[0].split()) if doc else ""
    level = _level(path)
    where = f"KernelBench level {level} problem {path.stem}" if level is not None else f"KernelBench-format problem {path.stem}"
    return f"{where}: {first}" if first else where
