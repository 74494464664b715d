"""No import cycle inside kernel_tui: every import counts, at the top of a module or inside a function (an
import moved into a function to dodge a cycle is the same cycle, resolved later), and TYPE_CHECKING ones too."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "kernel_tui"


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The kernel_tui modules `name` imports, each with the packages above it (importing a module runs them),
    leaving out the packages `name` itself lives in."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                module = ".".join(parts[:i])
                if module in known and module != name and not name.startswith(module + "."):
                    found.add(module)
    return found


def test_the_walk_sees_imports_inside_functions():
    known = modules()
    assert "kernel_tui.core.suite.distributed" in imports(
        "kernel_tui.core.suite.run", known["kernel_tui.core.suite.run"], known)
    assert "kernel_tui.core.evaluator.timing_gpu" in imports(
        "kernel_tui.core.evaluator.judge", known["kernel_tui.core.evaluator.judge"], known)  # a lazy one


def test_no_import_cycle_inside_the_package():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as err:
        raise AssertionError(f"an import cycle: {' -> '.join(err.args[1])}") from None
