"""Say in a few words what a source change is, from the sources themselves.

Used when a person edits a proposal: the proposer's description ("block_size 256 -> 8192") no longer
says what was evaluated once the person changed it to 1024, so the record describes the edit itself.
"""

from __future__ import annotations

import difflib
import re

MAX_CHARS = 100
TOKEN = re.compile(r"\w+|\S")


def _changed_part(old: str, new: str) -> str:
    """The differing tokens of two lines, named by the nearest name before them: `BLOCK_SIZE: 256 -> 1024`."""
    x, y = TOKEN.findall(old), TOKEN.findall(new)
    i = 0
    while i < min(len(x), len(y)) and x[i] == y[i]:
        i += 1
    k = 0
    while k < min(len(x), len(y)) - i and x[len(x) - 1 - k] == y[len(y) - 1 - k]:
        k += 1
    name = next((t for t in reversed(x[:i]) if t[0].isalpha() or t[0] == "_"), "")
    a, b = "".join(x[i : len(x) - k]) or "∅", "".join(y[i : len(y) - k]) or "∅"
    return f"{name}: {a} -> {b}" if name else f"{a} -> {b}"


def describe_change(before: str, after: str) -> str:
    """One line: the changed line (`name = 256 -> 1024`), or how many lines changed and the first of them."""
    a, b = before.splitlines(), after.splitlines()
    pairs, added, removed = [], 0, 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace":
            pairs += list(zip(a[i1:i2], b[j1:j2]))
            added += max(0, (j2 - j1) - (i2 - i1))
            removed += max(0, (i2 - i1) - (j2 - j1))
        elif op == "insert":
            added += j2 - j1
        elif op == "delete":
            removed += i2 - i1
    if not pairs and not added and not removed:
        return "no change"
    parts = []
    if pairs:
        parts.append(_changed_part(*pairs[0]))
        if len(pairs) > 1:
            parts.append(f"{len(pairs) - 1} more line(s) changed")
    if added:
        parts.append(f"{added} line(s) added")
    if removed:
        parts.append(f"{removed} line(s) removed")
    text = "; ".join(parts)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def describe_edit(best: str, edited: str, proposed_change: str) -> str:
    """What a person's edit of a proposal evaluates, against the incumbent, and what it was edited from."""
    return f"edited: {describe_change(best, edited)} (proposed: {proposed_change})"
