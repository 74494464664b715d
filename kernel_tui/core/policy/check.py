"""The whole policy on one source: its size, its syntax, the walk's violations, and an entrypoint that takes the
task's launch arguments and launches a Triton kernel."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from kernel_tui.core.policy.checker import Bindings, Checker, is_jit_decorator
from kernel_tui.core.policy.report import PolicyReport, Violation


def _kernels_and_launches(tree: ast.Module, aliases: dict[str, str]) -> tuple[set[str], dict[str, set[str]], dict[str, set[str]]]:
    """Module-level jit kernels; for each host function, the kernels it launches and functions it calls."""
    kernels: set[str] = set()
    launches: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            if any(is_jit_decorator(d, aliases) for d in node.decorator_list):
                kernels.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            # kernel = triton.jit(fn)
            if is_jit_decorator(node.value.func, aliases) or is_jit_decorator(node.value, aliases):
                kernels.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in kernels:
            launched, called = set(), set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    f = sub.func
                    if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name):
                        launched.add(f.value.id)
                    elif isinstance(f, ast.Name):
                        called.add(f.id)
            launches[node.name] = launched
            calls[node.name] = called
    return kernels, launches, calls


def _launches_kernel(entry: str, kernels: set[str], launches: dict[str, set[str]], calls: dict[str, set[str]]) -> bool:
    seen: set[str] = set()
    todo = [entry]
    while todo:
        fn = todo.pop()
        if fn in seen or fn not in launches:
            continue
        seen.add(fn)
        if launches[fn] & kernels:
            return True
        todo.extend(calls[fn])
    return False


def check_source(
    source: str,
    *,
    entrypoint: str,
    launch_arguments: Iterable[str],
    tensor_arguments: Iterable[str] = (),
    max_source_chars: int = 50_000,
) -> PolicyReport:
    """Check a candidate's source against the static policy."""
    args = list(launch_arguments)
    if len(source) > max_source_chars:
        return PolicyReport(violations=[Violation(
            rule="source-size", line=0,
            message=f"{len(source)} characters, the task allows {max_source_chars}",
        )])
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return PolicyReport(violations=[], syntax_error=f"line {exc.lineno}: {exc.msg}")

    checker = Checker(tensor_params=set(tensor_arguments), bindings=Bindings(tree))
    checker.visit(tree)
    violations = list(checker.violations)

    entry = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entrypoint), None
    )
    if entry is None:
        violations.append(Violation(
            rule="entrypoint-missing", line=0,
            message=f"no module-level function {entrypoint}({', '.join(args)})",
        ))
    else:
        params = entry.args
        positional = params.posonlyargs + params.args
        required = len(positional) - len(params.defaults)
        if params.vararg is None and not (required <= len(args) <= len(positional)):
            violations.append(Violation(
                rule="entrypoint-signature", line=entry.lineno,
                message=f"{entrypoint} takes {len(positional)} arguments, the task passes {len(args)}: "
                f"({', '.join(args)})",
            ))
        kernels, launches, calls = _kernels_and_launches(tree, checker.aliases)
        if not kernels:
            violations.append(Violation(
                rule="no-triton-kernel", line=0, message="no @triton.jit kernel: the work must be done by one",
            ))
        elif not _launches_kernel(entrypoint, kernels, launches, calls):
            violations.append(Violation(
                rule="no-triton-kernel", line=entry.lineno,
                message=f"{entrypoint} never launches a @triton.jit kernel (kernel[grid](...))",
            ))
    violations.sort(key=lambda v: v.line)
    return PolicyReport(violations=violations)
