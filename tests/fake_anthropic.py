"""A real local HTTP server speaking the Anthropic Messages API, scripted per test.

    with FakeAnthropic([overloaded(times=2), tool_use("finish", summary="x")]) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.url)

Each request to POST /v1/messages takes the next step of the script. A step is a `Reply`
(status + JSON body, possibly repeated `times`), or a callable `(request_body) -> Reply` (a
scripted model that looks at what it was sent). Every request body and its headers are kept
in `requests` / `headers` for assertions. When the script runs out the server answers 500 and
records the request in `unexpected`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    times: int = 1
    hang: threading.Event | None = None  # block until set (then answer 500)


Step = Reply | Callable[[dict[str, Any]], Reply]


def message(*blocks: dict[str, Any], stop_reason: str | None = None, usage=(100, 20)) -> Reply:
    """A 200 reply carrying content blocks; stop_reason follows from the blocks by default."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return Reply(
        200,
        {
            "id": f"msg_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": list(blocks),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        },
    )


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_block(name: str, **inputs: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": name, "input": inputs}


def text(content: str) -> Reply:
    return message(text_block(content))


def tool_use(name: str, **inputs: Any) -> Reply:
    return message(tool_block(name, **inputs))


def error(status: int, times: int = 1, kind: str | None = None) -> Reply:
    kinds = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error", 401: "authentication_error"}
    etype = kind or kinds.get(status, "api_error")
    return Reply(status, {"type": "error", "error": {"type": etype, "message": f"fake {etype}"}}, times)


def overloaded(times: int = 1) -> Reply:
    return error(529, times)


def hang(event: threading.Event) -> Reply:
    return Reply(hang=event)


class FakeAnthropic:
    def __init__(self, script: list[Step] | None = None) -> None:
        self.script: list[Step] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.received = threading.Condition()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting --------------------------------------------------------------------
    def add(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def _next_step(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if not self.script:
                self.unexpected.append(body)
                return error(500, kind="script_exhausted")
            step = self.script[0]
            if isinstance(step, Reply):
                if step.times > 1:
                    step.times -= 1
                else:
                    self.script.pop(0)
                return step
        reply = step(body)  # a scripted model: outside the lock, it may be slow
        if reply is None:  # the model declines this request: move on to the next step
            with self._lock:
                if self.script and self.script[0] is step:
                    self.script.pop(0)
            return self._next_step(body)
        return reply

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> bool:
        with self.received:
            return self.received.wait_for(lambda: len(self.requests) >= count, timeout)

    # --- server -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    self._send(error(404, kind="not_found_error"))
                    return
                with fake.received:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fake.received.notify_all()
                reply = fake._next_step(body)
                if reply.hang is not None:
                    reply.hang.wait()
                    reply = error(500)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = json.dumps(reply.body or {}).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_{next(_ids):06d}")
                    if reply.status in (429, 529):
                        self.send_header("retry-after", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- reading what the client sent -------------------------------------------------------
def request_text(body: dict[str, Any]) -> str:
    """All text of a request (system + every message block), for assertions."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts += [b.get("text", "") for b in system if isinstance(b, dict)]
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    parts.append(inner)
                else:
                    parts += [b.get("text", "") for b in inner or [] if isinstance(b, dict)]
            elif block.get("type") == "tool_use":
                parts.append(json.dumps(block.get("input")))
    return "\n".join(parts)


def offered_tools(body: dict[str, Any]) -> list[str]:
    return [tool.get("name") for tool in body.get("tools", [])]


def last_tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages", [])
    if not messages or messages[-1].get("role") != "user":
        return []
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if b.get("type") == "tool_result"]
