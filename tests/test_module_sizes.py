"""No module in kernel_tui/ over 500 lines and no function over 80, unless the file says why.

A module past ~500 lines is doing two things, and a function a reader must scroll wants a few named steps. Where
one has a reason to be longer, the file says so in its opening comment lines (above the docstring), one line
per exception:

    # size: module: <why this module is one piece>
    # size: <function>: <why this function is one piece>

<function> is the function's name as defined in the module: `name`, `Class.method` or `outer.inner`. A marker
that no longer excuses anything fails the test too, so an exception does not outlive its reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from tests.conftest import ROOT

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MODULE = "module"
MARKER = re.compile(r"#\s*size:\s*(?P<what>[\w.]+)\s*:\s*(?P<why>\S.*)$")

# Files another line of work is rewriting: their exceptions live here, not in the files, until that work lands
# (an entry for a file that is gone or back within the limits fails the test). None now.
PENDING: dict[str, dict[str, str]] = {}


@dataclass
class Survey:
    """One module's length, its functions' lengths, and the exceptions its opening comment lines declare."""

    lines: int
    functions: dict[str, int] = field(default_factory=dict)  # qualified name -> lines from `def` to its end
    markers: dict[str, str] = field(default_factory=dict)  # what is excused -> why
    problems: list[str] = field(default_factory=list)  # markers that are malformed or not at the top


def survey(text: str) -> Survey:
    lines = text.splitlines()
    found = Survey(lines=len(lines))
    opening = True
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        opening = opening and (not stripped or stripped.startswith("#"))
        if not re.match(r"#\s*size:", stripped):
            continue
        marker = MARKER.fullmatch(stripped)
        if not opening:
            found.problems.append(f"line {number}: a size marker belongs in the opening comment lines")
        elif marker is None:
            found.problems.append(f"line {number}: write `# size: module: <reason>` or `# size: <function>: <reason>`")
        else:
            found.markers[marker["what"]] = marker["why"]
    _functions(ast.parse(text), "", found.functions)
    return found


def _functions(node: ast.AST, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                out[name] = (child.end_lineno or child.lineno) - child.lineno + 1
            _functions(child, f"{name}.", out)
        else:
            _functions(child, prefix, out)


def modules() -> dict[str, Survey]:
    return {path.relative_to(ROOT).as_posix(): survey(path.read_text(encoding="utf-8"))
            for path in sorted((ROOT / "kernel_tui").rglob("*.py"))}


def excused(name: str, found: Survey) -> dict[str, str]:
    return {**found.markers, **PENDING.get(name, {})}


def oversized(found: Survey) -> dict[str, int]:
    """What is over its limit: MODULE and the functions, with their lengths."""
    over = {MODULE: found.lines} if found.lines > MAX_MODULE_LINES else {}
    return over | {f: n for f, n in found.functions.items() if n > MAX_FUNCTION_LINES}


def test_no_module_or_function_over_its_limit_without_a_reason():
    offenders = [f"{name}: {what} has {n} lines" for name, found in modules().items()
                 for what, n in oversized(found).items() if what not in excused(name, found)]
    assert not offenders, (f"over {MAX_MODULE_LINES} lines a module, over {MAX_FUNCTION_LINES} a function: split it, "
                           "or say why at the top of the file (`# size: module: <reason>`):\n" + "\n".join(offenders))


def test_every_exception_is_still_needed():
    found_all = modules()
    stale = [f"{name}: PENDING lists a file that is gone" for name in PENDING if name not in found_all]
    for name, found in found_all.items():
        over = oversized(found)
        stale += [f"{name}: `{what}` is excused but within its limit" for what in excused(name, found) if what not in over]
    assert not stale, "delete the exceptions that excuse nothing:\n" + "\n".join(stale)


def test_size_markers_are_well_formed_and_at_the_top():
    problems = [f"{name}: {p}" for name, found in modules().items() for p in found.problems]
    assert not problems, "\n".join(problems)


def test_a_marker_excuses_what_it_names_and_nothing_else():
    def body(indent: int) -> str:
        return "\n".join(f"{' ' * indent}x = {i}" for i in range(MAX_FUNCTION_LINES))

    text = (f'# size: Parser.build: one table of options\n"""A module."""\n\n\nclass Parser:\n    def build(self):\n'
            f"{body(8)}\n\n    def other(self):\n{body(8)}\n\n\ndef outer():\n    def inner():\n{body(8)}\n")
    found = survey(text)
    assert found.markers == {"Parser.build": "one table of options"} and not found.problems
    assert set(oversized(found)) == {"Parser.build", "Parser.other", "outer", "outer.inner"}
    assert found.functions["Parser.build"] == MAX_FUNCTION_LINES + 1

    late = survey('"""A module."""\n# size: module: too late\n')
    assert not late.markers and late.problems and "opening comment" in late.problems[0]
    assert survey("# size: module\n").problems  # no reason given
