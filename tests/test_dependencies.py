"""Every third-party package the code imports is declared in pyproject.toml (torch and triton on purpose
not: a GPU machine brings its own pair; see the README)."""

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.conftest import ROOT

BROUGHT_BY_THE_MACHINE = {"torch", "triton"}


def imported_top_level(package: Path) -> set[str]:
    names = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"kernel_tui", "__future__"}


def test_every_imported_package_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {d.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower().replace("_", "-")
                for d in project["dependencies"]}
    owners = packages_distributions()
    missing = {}
    for module in imported_top_level(ROOT / "kernel_tui") - BROUGHT_BY_THE_MACHINE:
        dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
        if not dists & declared:
            missing[module] = sorted(dists)
    assert missing == {}, f"imported but not declared: {missing}"


def test_the_first_install_says_what_it_installs_before_the_long_wait():
    """A cold `make run` spent minutes installing torch in silence: every install step says what it does."""
    import shutil
    import subprocess

    make = shutil.which("make")
    assert make is not None
    out = subprocess.run([make, "-n", "-B", "install", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60).stdout
    steps = [ln for ln in out.splitlines() if "pip install" in ln]
    assert steps and all(ln.strip().startswith(("/nonexistent-venv/bin/python", "python")) for ln in steps)
    said = [ln for ln in out.splitlines() if ln.strip().startswith("echo")]
    assert any("torch" in ln and "a few minutes" in ln for ln in said)
    assert any("installing kernel-tui" in ln for ln in said)
