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


# The search's structural moves, in words, by knob kind and the value the new source holds: a person who makes
# one by hand reads what it is, not its first changed line ("fortile_idintl.range(...)").
STRUCTURAL_WORDS = {
    "grid": "persistent grid",
    "loads": "TMA loads (tensor descriptors)",
    "split_k": "split-K",
    "epilogue": "epilogue fused into the GEMM",
    "k_mask": "unmasked K loop when K is a multiple of its block",
    "launch_order": "grouped launch order",
    "sizes": "sizes as compile-time constants",
}


def structural_change(before: str, after: str) -> str | None:
    """The structural moves between two sources, and the knobs that moved beside them (`persistent grid, TMA loads
    (tensor descriptors); BLOCK_M 64 -> 128`), or None when no structural knob changed."""
    from kernel_tui.core.proposers.transforms import STRUCTURAL_KINDS, analyze

    try:
        a, b = analyze(before).knobs, analyze(after).knobs
    except (SyntaxError, ValueError):
        return None
    words, moved = [], []
    for kid, knob in b.items():
        old = a.get(kid)
        if old is None or old.value == knob.value:
            continue
        if knob.kind == "warp_specialize":  # which loop, or none: the value is the move
            words.append("warp specialization off" if knob.value == "off" else f"warp-specialized {knob.value}")
        elif knob.kind in STRUCTURAL_KINDS:
            words.append(STRUCTURAL_WORDS.get(knob.kind, f"{knob.label}: {knob.value}"))
        else:
            moved.append(f"{knob.label} {old.value} -> {knob.value}")
    if not words:
        return None
    return ", ".join(words) + (f"; {', '.join(moved)}" if moved else "")


def describe_change(before: str, after: str) -> str:
    """One line: the structural moves made (`persistent grid, TMA loads`), or the changed line (`name = 256 ->
    1024`), or how many lines changed and the first of them."""
    structural = structural_change(before, after)
    if structural is not None:
        return structural if len(structural) <= MAX_CHARS else structural[: MAX_CHARS - 1] + "…"
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
