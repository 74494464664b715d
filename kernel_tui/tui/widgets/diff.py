"""A unified diff for a narrow pane: coloured, the changed characters of a changed line highlighted
(difflib), and long lines wrapped with a hanging indent, so the change is on screen at any width."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

HEADER_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"))
LINE_STYLES = {"+": "green", "-": "red"}
CHANGED_STYLES = {"+": "bold reverse green", "-": "bold reverse red"}
MIN_SIMILARITY = 0.4  # below this a removed and an added line are two different lines, not one edited
TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
CONTINUATION = "  "  # extra indent of a folded line's continuation rows
FOLDED = "↪ "  # ends the indent of a folded row: it goes on the line above


def tokens(line: str) -> list[str]:
    """Words, runs of spaces and single punctuation marks: a change is marked a whole token at a time."""
    return TOKEN.findall(line)


def changed_spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The character ranges that differ between an old and a new line, or none if they are unrelated."""
    a, b = tokens(old), tokens(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < MIN_SIMILARITY:
        return [], []
    starts_a, starts_b = _offsets(a), _offsets(b)
    old_spans, new_spans = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            old_spans.append((starts_a[i1], starts_a[i2]))
        if j2 > j1:
            new_spans.append((starts_b[j1], starts_b[j2]))
    return _merged(old_spans, old), _merged(new_spans, new)


def _offsets(toks: list[str]) -> list[int]:
    out = [0]
    for t in toks:
        out.append(out[-1] + len(t))
    return out


def _merged(spans: list[tuple[int, int]], line: str) -> list[tuple[int, int]]:
    """Spans apart only by spaces become one: `loads that evict` is marked as one change, not three."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and not line[out[-1][1]:a].strip():
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _runs(lines: list[str]) -> Iterator[tuple[int, int, int]]:
    """Each block of removed lines followed by added lines: (first removed, first added, end)."""
    i = 0
    while i < len(lines):
        if not lines[i].startswith("-") or lines[i].startswith("---"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].startswith("-") and not lines[i].startswith("---"):
            i += 1
        added = i
        while i < len(lines) and lines[i].startswith("+") and not lines[i].startswith("+++"):
            i += 1
        yield start, added, i


def diff_lines(diff: str) -> list[Text]:
    """One styled Text per diff line; paired removed/added lines get their differing characters marked."""
    raw = diff.splitlines()
    out = [_styled(line) for line in raw]
    for start, added, end in _runs(raw):
        for old_i, new_i in zip(range(start, added), range(added, end)):
            old_spans, new_spans = changed_spans(raw[old_i][1:], raw[new_i][1:])
            for a, b in old_spans:
                out[old_i].stylize(CHANGED_STYLES["-"], a + 1, b + 1)
            for a, b in new_spans:
                out[new_i].stylize(CHANGED_STYLES["+"], a + 1, b + 1)
    return out


def _styled(line: str) -> Text:
    style = next((s for prefix, s in HEADER_STYLES if line.startswith(prefix)), None)
    if style is None:
        style = LINE_STYLES.get(line[:1], "")
    text = Text(line)
    text.stylize(style)  # a span, not the base style: a slice of the line keeps it
    return text


def hanging_indent(line: Text) -> int:
    """Continuation rows start under the code: the marker column, the line's own indent, then a little more."""
    plain = line.plain
    body = plain[1:] if plain[:1] in "+- " else plain
    return 1 + len(body) - len(body.lstrip(" ")) + len(CONTINUATION)


BREAK_AFTER = " ,("  # a row prefers to end after one of these when one is in its second half


def fold(length: int, first: int, rest: int, text: str) -> list[tuple[int, int]]:
    """Rows of a long line: (start, end) offsets, the first row `first` wide, the others `rest` wide."""
    rows, start, width = [], 0, first
    while length - start > width:
        end = start + width
        cut = max(text.rfind(c, start, end) for c in BREAK_AFTER) + 1
        end = cut if cut > start + width // 2 else end
        rows.append((start, end))
        start, width = end, rest
    rows.append((start, length))
    return rows


class DiffText:
    """A renderable: every diff line folded to the width it is given, continuation rows indented."""

    def __init__(self, diff: str) -> None:
        self.lines = diff_lines(diff)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 8)
        for line in self.lines:
            indent = min(hanging_indent(line), width // 2)
            plain = line.plain
            marker = plain[:1] if plain[:1] in ("+", "-", " ") and not plain.startswith(("+++", "---")) else " "
            for i, (a, b) in enumerate(fold(len(line), width, width - indent, plain)):
                if i:  # a folded row reads as a diff row too: its line's marker, then ↪ where the code goes on
                    yield Segment(marker, Style.parse(LINE_STYLES.get(marker, "none")) + Style(dim=True))
                    if indent >= 1 + len(FOLDED):
                        yield Segment(" " * (indent - 1 - len(FOLDED)))
                        yield Segment(FOLDED, Style(dim=True))
                    else:
                        yield Segment(" " * max(0, indent - 1))
                yield from line[a:b].render(console)
                yield Segment.line()
