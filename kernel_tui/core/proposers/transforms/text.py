"""Edits as byte spans of the source, placed from the AST's (line, UTF-8 column) offsets; a source's hash.

An edit replaces or inserts at exactly the span it changes, so every other byte of a candidate (comments,
layout, quoting) survives; an inserted argument follows the call's own style.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Edit:
    """Replace source bytes [start, end) by `text` (start == end: an insertion)."""

    start: int
    end: int
    text: str


class SourceText:
    def __init__(self, source: str) -> None:
        self.source = source
        self.data = source.encode("utf-8")
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.newline = "\r\n" if b"\r\n" in self.data else "\n"  # what an inserted line ends with

    def offset(self, lineno: int, col: int) -> int:
        return self.line_starts[lineno - 1] + col

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:  # the last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def indent_at(self, offset: int) -> str:
        line_start = self.line_starts[self.line_of(offset)]
        line = self.data[line_start:offset].decode("utf-8")
        return line[: len(line) - len(line.lstrip())]

    def skip_to_close(self, offset: int) -> int | None:
        """From the end of a last argument: the offset of the closing parenthesis (commas, spaces and
        comments may come between), or None when something else does."""
        i, data = offset, self.data
        while i < len(data):
            c = data[i : i + 1]
            if c == b")":
                return i
            if c == b"#":
                nl = data.find(b"\n", i)
                i = len(data) if nl < 0 else nl
                continue
            if c not in (b" ", b"\t", b"\r", b"\n", b",", b"\\", b"\f"):
                return None
            i += 1
        return None


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    data = source.encode("utf-8")
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end:
            raise ValueError("overlapping edits")
    for e in reversed(ordered):
        data = data[: e.start] + e.text.encode("utf-8") + data[e.end :]
    return data.decode("utf-8")


def insert_argument(text: SourceText, last: tuple[int, int] | None, close: int, new: str) -> Edit:
    """An edit adding argument `new` after the last one (its [start, end) offsets; None: no arguments),
    in the call's (or signature's) own style: one line, or one argument a line with or without a
    trailing comma."""
    if last is None:
        return Edit(close, close, new)
    last_start, last_end = last
    between = text.data[last_end:close]
    stripped = between.lstrip(b" \t")
    multiline = text.line_of(last_end) != text.line_of(close)
    indent = text.indent_at(last_start)
    if stripped.startswith(b","):  # a trailing comma
        comma = last_end + (len(between) - len(stripped))
        if multiline:
            return Edit(comma + 1, comma + 1, f"{text.newline}{indent}{new},")
        return Edit(comma + 1, comma + 1, f" {new},")
    if multiline:
        return Edit(last_end, last_end, f",{text.newline}{indent}{new}")
    return Edit(last_end, last_end, f", {new}")


def _call_args_in_order(call: ast.Call) -> list[ast.AST]:
    items: list[ast.AST] = [*call.args, *call.keywords]
    return sorted(items, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def insert_keyword(text: SourceText, call: ast.Call, new: str) -> Edit:
    items = _call_args_in_order(call)
    close = text.end(call) - 1
    return insert_argument(text, (text.start(items[-1]), text.end(items[-1])) if items else None, close, new)


def remove_keyword(text: SourceText, call: ast.Call, kw: ast.keyword) -> Edit:
    items = _call_args_in_order(call)
    i = items.index(kw)
    if i == 0:
        raise ValueError("cannot remove a first argument")
    return Edit(text.end(items[i - 1]), text.end(kw), "")


def literal(value: object, quote: str = '"') -> str:
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    return str(value)
