"""An OpenAI-compatible chat server of known capacity, for `python -m bench capacity` and its test (issue 43).

It answers ``POST …/chat/completions`` after ``latency_s`` when fewer than ``capacity`` requests are being
answered, else at once with 429 and a Retry-After (``retry-after-ms`` and whole seconds) of one latency:
the longest a client waits for a place to free. It counts what a provider would see: answered and refused
requests, the most in flight at once, and when the first arrived and the last was answered, so a run's
time on calls can be set against the least time the server needs, ``ceil(answered / capacity) × latency``.
Real HTTP (the standard library's threading server), so the real openai SDK is the client.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERDICT = "Model A answers the question and cites the right scene.\n\n[[A]]"


@dataclass
class Served:
    answered: int
    refused: int
    peak: int
    first_s: float  # monotonic time of the first request
    last_s: float  # monotonic time the last request was answered

    @property
    def requests(self) -> int:
        return self.answered + self.refused

    @property
    def refused_share(self) -> float:
        return self.refused / self.requests if self.requests else 0.0

    @property
    def span_s(self) -> float:
        return max(0.0, self.last_s - self.first_s)


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # a burst of connections must queue, not be reset (the default is 5)


class CapacityServer:
    def __init__(self, capacity: int, latency_s: float, content: str = VERDICT) -> None:
        self.capacity, self.latency_s, self.content = capacity, latency_s, content
        self._lock = threading.Lock()
        self._in_flight = 0
        self._answered = self._refused = self._peak = 0
        self._first = self._last = 0.0
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="capacity-server")

    def __enter__(self) -> CapacityServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def served(self) -> Served:
        with self._lock:
            return Served(self._answered, self._refused, self._peak, self._first, self._last)

    def min_time_s(self, calls: int) -> float:
        """The least time ``calls`` answered calls take on this server: full waves of ``capacity``."""
        return math.ceil(calls / self.capacity) * self.latency_s

    # -- server side -------------------------------------------------------------------------------
    def _enter(self) -> bool:
        with self._lock:
            if not self._first:
                self._first = time.monotonic()
            if self._in_flight >= self.capacity:
                self._refused += 1
                return False
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return True

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._answered += 1
            self._last = time.monotonic()

    def _reply(self) -> dict[str, Any]:
        return {"id": "chatcmpl-capacity", "object": "chat.completion", "created": int(time.time()),
                "model": "capacity", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": self.content}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                self._send(200, {"object": "list", "data": [{"id": "capacity", "object": "model", "created": 1,
                                                              "owned_by": "bench"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if not self.path.split("?", 1)[0].endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route for {self.path}"}})
                    return
                if not api._enter():
                    wait_ms = int(api.latency_s * 1000)
                    self._send(429, {"error": {"message": f"at most {api.capacity} requests at once",
                                               "type": "rate_limit_error", "code": "rate_limit_exceeded"}},
                               {"retry-after-ms": str(wait_ms), "retry-after": str(max(1, math.ceil(api.latency_s)))})
                    return
                try:
                    time.sleep(api.latency_s)
                    reply = api._reply()
                finally:
                    # the slot is free once the answer is made, before its bytes go out (as a real server frees
                    # it when generation ends): leaving after the write let the client's next call, sent on
                    # the answer, find the slot still taken on a busy host, a 429 no provider would send
                    api._leave()
                self._send(200, reply)

        return Handler
