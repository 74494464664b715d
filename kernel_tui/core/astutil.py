"""Small helpers over Python's `ast` shared by the policy and the transformations."""

from __future__ import annotations

import ast


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
