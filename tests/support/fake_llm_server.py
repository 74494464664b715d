"""A scripted OpenAI-compatible chat.completions server on 127.0.0.1, for tests without network or key.

Each request to POST /v1/chat/completions takes the next entry of the script: a reply (a chat.completion
with tool calls or text) or an HTTP error (429, 500, ...). Every request body and its headers are kept, in
order, so a test can check what the client sent (the tool results, the extra body, the key's header).
A request past the end of the script gets an HTTP 400 "script exhausted", which a client does not retry.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


def tool_call(name: str, arguments: dict | str, call_id: str | None = None) -> dict[str, Any]:
    """One tool call; a str `arguments` is sent as is (to script malformed JSON)."""
    return {
        "id": call_id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
    }


def reply(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    """A 200 chat.completion whose one choice carries `calls` (or only `content`)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    body = {
        "id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 1700000000, "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return {"status": 200, "body": body}


def error(status: int, message: str = "scripted error") -> dict[str, Any]:
    kind = "rate_limit_error" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return {"status": status, "body": {"error": {"message": message, "type": kind, "code": str(status)}}}


class FakeLLMServer:
    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.script = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    if not self.path.rstrip("/").endswith("/chat/completions"):
                        entry = error(404, f"no route {self.path}")
                    elif server.script:
                        entry = server.script.pop(0)
                    else:
                        entry = error(400, "fake server: script exhausted")
                data = json.dumps(entry["body"]).encode()
                self.send_response(entry["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *entries: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(entries)

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
