"""The policy's allow-list against the installed torch and triton, and against every candidate we ship.

The walk goes breadth-first through the attributes of each allowed module at test time and collects every
path that lands on a module that reaches the system (os, sys, subprocess, ...). Each such path, written into
an otherwise valid candidate, must be rejected. A new torch or triton release that grows a new path is
covered without anyone listing it. A second walk follows every value, not only modules and callables, from
each allowed libdevice function: code may hold one, and nothing it offers may lead to the system.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import time
import types
import warnings
from collections import deque
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

from kernel_tui.core.policy import (
    ALLOWED_IMPORTS,
    ALLOWED_PATHS,
    CLASS_PATHS,
    HELD_METHODS,
    LIBDEVICE_MODULES,
    MODULE_PATHS,
    check_source,
)
from kernel_tui.core.policy import allowlist as allow
from kernel_tui.core.proposers.transforms import analyze
from kernel_tui.core.task import load_spec, load_task
from tests.conftest import FIXTURE_NAMES, FIXTURES, PUBLISHED_TASKS, ROOT

ROOTS = ("torch", "torch.cuda", "triton", "triton.language", "triton.language.math", "triton.language.extra",
         "triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice", "math", "typing", "functools")
ESCAPES = ("os", "sys", "subprocess", "importlib", "ctypes", "builtins", "socket")
MAX_DEPTH = 4  # attributes below a root
MAX_NODES = 20_000  # objects expanded per root: torch alone has tens of thousands within four steps

HEADER = "import functools\nimport math\nimport typing\n\nimport torch\nimport triton\nimport triton.language as tl\n"
KERNEL = """

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch(x, y, output, n_elements):
    add_kernel[(triton.cdiv(n_elements, 256),)](x, y, output, n_elements, BLOCK=256)
"""


def check(source: str):
    return check_source(source, entrypoint="launch", launch_arguments=["x", "y", "output", "n_elements"],
                        tensor_arguments=["x", "y", "output"])


@cache
def escape_paths() -> tuple[tuple[str, ...], float]:
    """Every attribute path from an allowed module to an escape module, and the seconds the walk took."""
    started = time.perf_counter()
    for name in ROOTS:
        importlib.import_module(name)
    targets = {id(sys.modules[m]) for m in ESCAPES if m in sys.modules}
    found: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases warn when touched
        for root in ROOTS:
            start = sys.modules[root]
            seen = {id(start): start}  # holding the objects keeps their ids from being reused
            todo = deque([(root, start, 0)])
            expanded = 0
            while todo and expanded < MAX_NODES:
                path, obj, depth = todo.popleft()
                expanded += 1
                try:
                    names = dir(obj)
                except Exception:  # noqa: BLE001 - an object whose dir() fails has no paths to walk
                    continue
                for name in names:
                    try:  # lazy torch attributes import or raise on first touch
                        value = getattr(obj, name)
                    except BaseException:  # noqa: BLE001 - some raise SystemExit-like errors on touch
                        continue
                    if id(value) in targets:
                        found.add(f"{path}.{name}")
                    elif depth + 1 < MAX_DEPTH and id(value) not in seen and (
                            isinstance(value, (types.ModuleType, type)) or callable(value)):
                        seen[id(value)] = value
                        todo.append((f"{path}.{name}", value, depth + 1))
    return tuple(sorted(found)), time.perf_counter() - started


def uses(path: str) -> list[str]:
    """Candidates that reach `path` in launch(): spelled out, through the tl alias, and through `from` imports."""
    body = f"\n    reached = {path}\n"
    sources = [HEADER + KERNEL + body]
    if path.startswith("triton.language."):
        sources.append(HEADER + KERNEL + f"\n    reached = tl.{path.removeprefix('triton.language.')}\n")
    parts = path.split(".")
    for i in range(1, len(parts)):
        module, rest = ".".join(parts[:i]), parts[i:]
        if module in ALLOWED_IMPORTS:
            via = ".".join(["via", *rest[1:]])
            sources.append(f"from {module} import {rest[0]} as via\n" + HEADER + KERNEL + f"\n    reached = {via}\n")
    return sources


def test_the_walk_finds_the_known_escapes():
    paths, seconds = escape_paths()
    print(f"{len(paths)} escape paths in {seconds:.1f}s")
    assert len(paths) > 50, paths
    assert {"typing.sys", "triton.language.core.builtins"} <= set(paths)
    assert any(p.startswith("torch.") for p in paths) and any(p.startswith("triton.runtime.") for p in paths)


def test_every_escape_path_is_rejected():
    accepted = [src for path in escape_paths()[0] for src in uses(path) if check(src).ok]
    assert not accepted, accepted[:3]


def _resolved_allowed_paths() -> list[tuple[str, object]]:
    """Each allowed path the installed torch and triton have, with the object it names."""
    for name in ROOTS:
        importlib.import_module(name)
    found = []
    for path in sorted(ALLOWED_PATHS):
        root, *rest = path.split(".")
        if root not in sys.modules:
            continue
        obj = sys.modules[root]
        try:
            for name in rest:
                obj = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a name another Triton or torch version has (the list is a superset)
            continue
        found.append((path, obj))
    return found


def test_the_allow_list_holds_no_other_module():
    """A path that lands on a module is a module path, which is never held, and names that very module.

    By name, not identity: triton.language.extra imports its cuda package twice, so `tl.extra.cuda` is not
    sys.modules["triton.language.extra.cuda"].
    """
    resolved = _resolved_allowed_paths()
    for path, obj in resolved:
        assert not isinstance(obj, types.ModuleType) or (path in MODULE_PATHS and obj.__name__ == path), \
            f"{path} is the module {obj.__name__}"
    assert len(resolved) > 250


def test_no_escape_path_runs_through_an_allowed_name():
    """Past a module, an allowed name (triton.cdiv, typing.Any) leads nowhere without a dunder: holding it is safe."""
    for path in escape_paths()[0]:
        parts = path.split(".")
        if any(p.startswith("__") and p.endswith("__") for p in parts):
            continue  # dunder-access
        allowed = [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in ALLOWED_PATHS]
        assert allowed[-1] in MODULE_PATHS, f"{path} runs through {allowed[-1]}"


# --- libdevice: what a held function offers ---------------------------------------------------------------------
def _links(obj: object) -> Iterator[tuple[str, object]]:
    """What code holding `obj` reaches in one step: attributes but dunders (refused wherever they appear), mapping
    values and sequence items."""
    try:
        names = [n for n in dir(obj) if not (n.startswith("__") and n.endswith("__"))]
    except Exception:  # noqa: BLE001 - an object whose dir() fails offers no attributes
        names = []
    for name in names:
        try:
            yield f".{name}", getattr(obj, name)
        except BaseException:  # noqa: BLE001 - as in escape_paths
            continue
    if isinstance(obj, Mapping):
        yield from ((f"[{k!r}]", v) for k, v in list(obj.items()))
    elif isinstance(obj, (list, tuple)):
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))


def _value_walk(start: object, seen: dict[int, object]) -> list[str]:
    """Paths from `start` to an escape module through any value, not only modules and callables as in
    escape_paths: a function is held as a value (`f = libdevice.tanh`), and its attributes are then unchecked.
    No depth limit (a libdevice function's closure is some 800 objects); stops once `seen` holds MAX_NODES."""
    targets = {id(sys.modules[m]) for m in ESCAPES if m in sys.modules}
    found: list[str] = []
    todo = deque([("", start)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while todo and len(seen) < MAX_NODES:
            path, obj = todo.popleft()
            for step, value in _links(obj):
                if id(value) in targets:
                    found.append(path + step)
                elif id(value) not in seen:
                    seen[id(value)] = value
                    todo.append((path + step, value))
    return found


def test_the_value_walk_finds_why_libdevice_core_is_refused():
    found = _value_walk(importlib.import_module("triton.language.extra.cuda.libdevice"), {})
    assert ".core.builtins" in found, found[:10]


@pytest.mark.parametrize("module", sorted(LIBDEVICE_MODULES))
def test_no_libdevice_name_reaches_an_escape(module):
    """Every allowed libdevice name is a plain function, and nothing it offers leads to the system."""
    lib = importlib.import_module(module)
    present = [n for n in allow.LIBDEVICE_NAMES if hasattr(lib, n)]  # as TRITON_LANGUAGE_NAMES: a superset
    assert len(present) > 150
    assert [n for n in present if not isinstance(getattr(lib, n), types.FunctionType)] == []
    seen: dict[int, object] = {}
    found = [f"{module}.{name}{path}" for name in present for path in _value_walk(getattr(lib, name), seen)]
    assert not found, found[:5]
    assert len(seen) < MAX_NODES, "the walk stopped before it saw everything"


def test_set_allocator_is_a_plain_function_that_reaches_no_escape():
    """triton.set_allocator, allowed for the scratch memory of a kernel's tensor descriptors: a plain function
    (its globals only through a dunder, refused wherever it appears), and a candidate may call it."""
    triton = importlib.import_module("triton")
    assert isinstance(triton.set_allocator, types.FunctionType)
    assert _value_walk(triton.set_allocator, {}) == []
    src = HEADER + KERNEL + "    triton.set_allocator(scratch)\n\n\ndef scratch(size, alignment, stream):\n" \
        '    return torch.empty(size, device="cuda", dtype=torch.int8)\n'
    assert check(src).ok, check(src).summary()
    assert "dunder-access" in {v.rule for v in check(HEADER + KERNEL + "    g = triton.set_allocator.__globals__\n").violations}


def test_every_allowed_class_is_on_the_class_list():
    """typing's classes are type expressions and stay free; every other class may only be called or annotated."""
    classes = {path for path, obj in _resolved_allowed_paths() if isinstance(obj, type) and not path.startswith("typing.")}
    assert classes - CLASS_PATHS == set(), "add these to allowlist.CLASS_PATHS"
    assert {"torch.Tensor", "triton.language.tensor", "triton.Config"} <= classes


def test_every_tensor_method_is_on_the_method_list():
    import torch

    methods = {n for n in dir(torch.Tensor) if not n.startswith("_") and callable(getattr(torch.Tensor, n, None))}
    assert methods - set(allow.TENSOR_METHODS) == set(), "add these to allowlist.TENSOR_METHODS"


@pytest.mark.parametrize("path", sorted(CLASS_PATHS))
def test_every_class_held_is_named(path):
    short = path.replace("triton.language.", "tl.")
    report = check(HEADER + KERNEL + f"    held = {short}\n    ok: {short} = {short}() if isinstance(x, {short}) else 0\n")
    assert [v.rule for v in report.violations] == ["class-alias"], report.summary()  # held once, free thrice


def test_every_tensor_method_held_in_host_code_is_named():
    body = "".join(f"    h{i} = x.{name}\n" for i, name in enumerate(sorted(HELD_METHODS)))
    report = check(HEADER + KERNEL + body)
    assert len(report.violations) == len(HELD_METHODS) and {v.rule for v in report.violations} == {"bound-method"}


# --- rules that close the holes the walk found ----------------------------------------------------------------
@pytest.mark.parametrize("launch_body, rule", [
    ("m = typing.sys", "attribute-not-allowed"),
    ("m = tl.core.builtins", "attribute-not-allowed"),
    ("m = triton.runtime.cache.os", "attribute-not-allowed"),
    ("m = triton.cdiv.x", "attribute-not-allowed"),
    ("m = tl", "module-alias"),
    ("m = triton.language", "module-alias"),
    ("m = [typing]", "module-alias"),
    ("m = tl if n_elements else tl", "module-alias"),
    ("m = functools.reduce(lambda a, b: a, [math])", "module-alias"),
    ("tl = n_elements", "module-alias"),
    ("m = typing.__dict__", "dunder-access"),
    ("g = (i for i in ()); m = g.gi_frame.f_back.f_globals", "introspection"),
    ("m = launch.func_globals", "introspection"),
    ("m = add_kernel.fn.co_consts", "introspection"),
    ("m = torch.cuda.Stream()", "side-stream"),
    ("m = torch.cuda.Event(enable_timing=True)", "timer-access"),
    ("m = torch.add(x, y)", "torch-compute"),
    ("m = torch.nn.functional.relu(x)", "torch-compute"),
    ("m = torch.empty.x", "attribute-not-allowed"),
    ("match launch:\n        case object(__globals__=g):\n            pass", "dunder-access"),
    ("g = (i for i in ())\n    match g:\n        case object(gi_frame=f):\n            pass", "introspection"),
])
def test_escape_is_named(launch_body, rule):
    report = check(HEADER + KERNEL + f"    {launch_body}\n")
    assert rule in {v.rule for v in report.violations}, report.summary()


@pytest.mark.parametrize("extra, rule", [
    ("from typing import sys\n", "attribute-not-allowed"),
    ("from triton.language import core\n", "attribute-not-allowed"),
    ("from triton import runtime\n", "attribute-not-allowed"),
    ("from torch import add\n", "torch-compute"),
    ("from triton import language\nL = language\n", "module-alias"),
    ("def helper(m=typing.sys):\n    return m\n", "attribute-not-allowed"),
    ("def helper() -> typing.sys:\n    return 0\n", "attribute-not-allowed"),
    ("typing.sys = 0\n", "monkeypatch"),
])
def test_module_level_escape_is_named(extra, rule):
    report = check(HEADER + extra + KERNEL)
    assert rule in {v.rule for v in report.violations}, report.summary()


def test_the_messages_say_what_to_do():
    report = check(HEADER + KERNEL + "    m = typing.sys\n    n = tl\n")
    assert [v.rule for v in report.violations] == ["attribute-not-allowed", "module-alias"]
    assert all("\n" not in v.message for v in report.violations)
    assert "typing.sys" in report.violations[0].message and "allow-list" in report.violations[0].message
    assert "tl.name" in report.violations[1].message


def test_allowed_names_pass_everywhere():
    src = (
        "from __future__ import annotations\n" + HEADER + "from typing import Optional\nfrom triton import Config\n"
        + KERNEL + "    cfg: Optional[Config] = triton.Config({'BLOCK': 64}, num_warps=4)\n"
        "    k = functools.partial(max, 1)\n    m = math.ceil(math.log2(triton.next_power_of_2(n_elements)))\n"
        "    t = torch.empty(1, dtype=torch.float16, device=x.device)\n    c = typing.cast(int, 1)\n"
    )
    assert check(src).ok, check(src).summary()


# --- every candidate we ship or generate still passes ----------------------------------------------------------
def _task_of(path: Path) -> str | None:
    """The fixture a candidate is for; None for one written for an imported task (KernelBench's)."""
    names = [n for n in FIXTURE_NAMES if n in path.as_posix().removeprefix(ROOT.as_posix())]
    if not names:
        assert "kb_" in path.as_posix() or "kernelbench" in path.as_posix(), path
        return None
    return max(names, key=len)


def _own_signature(source: str) -> list[str]:
    """The positional parameters of the candidate's own launch (an imported task's launch arguments)."""
    launch = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "launch")
    return [a.arg for a in launch.args.args]


def _shipped() -> list[tuple[str, Path]]:
    files = [FIXTURES / n / "baseline.py" for n in FIXTURE_NAMES]
    files += sorted((ROOT / "tests" / "candidates").rglob("*.py"))
    # the framework's own kernels (torch.add, torch.compile) are there to compare with --no-policy only
    files += [p for p in sorted((ROOT / "bench").rglob("*.py"))
              if "candidates" in p.parts or re.match(r"best_\w+\.py$", p.name)]
    files = [p for p in files if "--no-policy" not in p.read_text(encoding="utf-8")]
    for path in sorted((ROOT / "tests" / "adversarial").glob("*__*.py")):
        head = path.read_text(encoding="utf-8").split("\nimport", 1)[0]
        if "# policy: off" not in head and not re.search(r"# expect: (policy_violation|compile_error)", head):
            files.append(path)
    return [(_task_of(p), p) for p in files]


SHIPPED = _shipped()


@pytest.mark.parametrize("task, path", SHIPPED, ids=[p.relative_to(ROOT).as_posix() for _, p in SHIPPED])
def test_shipped_candidate_passes(task, path):
    source = path.read_text(encoding="utf-8")
    if task is None:  # every positional parameter taken as a tensor: the stricter reading
        args = _own_signature(source)
        report = check_source(source, entrypoint="launch", launch_arguments=args, tensor_arguments=args)
    else:
        spec = load_task(FIXTURES / task).spec
        report = check_source(source, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                              tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
    assert report.ok, report.summary()


@pytest.mark.parametrize("which", sorted(PUBLISHED_TASKS))
def test_published_baseline_passes(which):
    task_json, sources = PUBLISHED_TASKS[which]
    spec = load_spec(task_json)
    report = check_source((sources / "baseline.py").read_text(encoding="utf-8"), entrypoint=spec.entrypoint,
                          launch_arguments=spec.launch_arguments,
                          tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
    assert report.ok, report.summary()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_what_the_search_generates_passes(name):
    """Every one- and two-step transformation of the baseline, as the built-in search would propose it."""
    spec = load_task(FIXTURES / name).spec
    first = analyze((FIXTURES / name / "baseline.py").read_text(encoding="utf-8"), allow_unroll=True)
    sources = []
    for action in first.actions():
        src = first.apply(action)
        second = analyze(src, allow_unroll=True)
        sources += [src] + [second.apply(a) for a in second.actions()]
    assert sources
    for src in sources:
        report = check_source(src, entrypoint=spec.entrypoint, launch_arguments=spec.launch_arguments,
                              tensor_arguments=[t.name for t in spec.tensors if t.kind != "scalar"])
        assert report.ok, (report.summary(), src)
