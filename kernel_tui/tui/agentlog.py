"""Follows the agent's records as they grow: model-messages.jsonl and tool-calls.jsonl, one line each.

Runs in a thread worker; every complete new line becomes one short log line. A line still being written
(no newline yet) waits for the next look; lines already there when the follower starts are not repeated.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

MESSAGES_FILE, TOOL_CALLS_FILE = "model-messages.jsonl", "tool-calls.jsonl"  # as the agent proposer writes them


def clip(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def message_text(msg: dict) -> str:
    role = msg.get("role", "?")
    if role == "tool":
        return ""  # shown from tool-calls.jsonl, with its name
    parts = []
    if msg.get("content"):
        parts.append(clip(msg["content"]))
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(f"→ {fn.get('name', '?')}({clip(fn.get('arguments', ''), 60)})")
    return f"{role}: " + " ".join(parts) if parts else ""


def tool_text(rec: dict) -> str:
    mark = "✗" if rec.get("error") else "✓"
    result = str(rec.get("result", "")).strip().splitlines()
    return f"tool {rec.get('name', '?')} {mark} {clip(result[0] if result else '', 100)}"


def follow(root: Path, emit: Callable[[str], None], stop: threading.Event, interval: float = 0.5,
           names: tuple[str, str] = (MESSAGES_FILE, TOOL_CALLS_FILE)) -> None:
    """Until `stop` is set: every `interval` seconds, emit the new complete lines of both files."""
    files = {root / names[0]: message_text, root / names[1]: tool_text}
    offsets = {p: (p.stat().st_size if p.exists() else 0) for p in files}
    while not stop.wait(interval):
        for path, fmt in files.items():
            try:
                if not path.exists() or path.stat().st_size <= offsets[path]:
                    continue
                with open(path, "rb") as f:
                    f.seek(offsets[path])
                    chunk = f.read()
            except OSError:
                continue
            complete = chunk[: chunk.rfind(b"\n") + 1]
            offsets[path] += len(complete)
            for raw in complete.splitlines():
                try:
                    text = fmt(json.loads(raw))
                except (ValueError, TypeError, AttributeError):
                    continue
                if text:
                    emit(text)
