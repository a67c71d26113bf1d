"""A local HTTP server that speaks just enough of the providers' wire protocols for contract tests.

It answers OpenAI chat completions (also used by Qwen's and vLLM's providers) and model lists, and the
Gemini API: generateContent, the resumable Files upload (start, then upload + finalize), files.get and
model lists; and both batch protocols (OpenAI Files + Batch API, Gemini Batch Mode: tests/batch_wire.py).
Every request is recorded (path, headers, JSON body, arrival time); answers come from a
per-route script of canned replies, else a default success whose content the test sets.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.batch_wire import ROUTES as BATCH_ROUTES
from tests.batch_wire import BatchWire

CHAT = "chat"
GENERATE = "generate"
UPLOAD_START = "upload_start"
UPLOAD = "upload"
FILE_GET = "file_get"
MODELS = "models"


@dataclass
class Canned:
    status: int = 200
    body: Any = None  # dict → JSON; str/bytes → sent as is
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    route: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def chat_body(content: str | None, *, refusal: str | None = None, finish: str = "stop",
              usage: dict[str, Any] | None = None, model: str = "m") -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def gemini_body(text: str, *, finish: str = "STOP", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                            "finishReason": finish, "index": 0}],
                            "modelVersion": "gemini-test"}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


class FakeAPI:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.script: dict[str, list[Canned]] = defaultdict(list)
        self.content = json.dumps({"explanation": "because", "answer": "42"})
        self.usage = {"prompt_tokens": 1000, "completion_tokens": 300, "total_tokens": 1300,
                      "completion_tokens_details": {"reasoning_tokens": 100}}
        self.gemini_usage = {"promptTokenCount": 2000, "candidatesTokenCount": 200, "thoughtsTokenCount": 50,
                             "totalTokenCount": 2250}
        self.processing_polls = 1  # files.get answers PROCESSING this many times before ACTIVE
        self.files: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, bytearray] = {}
        self._polls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.batch = BatchWire(self)  # batch protocols: what they answer is set on it
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- test side ---------------------------------------------------------------------------------
    def start(self) -> FakeAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def queue(self, route: str, *replies: Canned) -> None:
        with self._lock:
            self.script[route].extend(replies)

    def requests(self, route: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.route == route]

    # -- server side -------------------------------------------------------------------------------
    def _route(self, method: str, path: str) -> str:
        bare = path.split("?", 1)[0]
        batch_route = BatchWire.route(method, bare)
        if batch_route is not None:
            return batch_route
        if bare.endswith("/chat/completions"):
            return CHAT
        if ":generateContent" in bare:
            return GENERATE
        if bare.startswith("/upload/") and bare.endswith("/files"):
            return UPLOAD_START
        if bare.startswith("/upload-session/"):
            return UPLOAD
        if "/files/" in bare and method == "GET":
            return FILE_GET
        if bare.endswith("/models"):
            return MODELS
        return "unknown"

    def _answer(self, seen: Seen) -> Canned:
        with self._lock:
            if self.script[seen.route]:
                return self.script[seen.route].pop(0)
        if seen.route in BATCH_ROUTES:
            return self.batch.respond(seen)
        if seen.route == CHAT:
            return Canned(body=chat_body(self.content, usage=self.usage))
        if seen.route == GENERATE:  # a request naming a context cache reads its tokens as cached input
            return self.batch.unknown_cache(seen.json) or Canned(
                body=gemini_body(self.content, usage=self.batch.usage_for(seen.json, self.gemini_usage)))
        if seen.route == UPLOAD_START:
            session = uuid.uuid4().hex[:12]
            with self._lock:
                self.uploads[session] = bytearray()
            return Canned(body={}, headers={"x-goog-upload-url": f"{self.url}/upload-session/{session}",
                                            "x-goog-upload-status": "active"})
        if seen.route == UPLOAD:
            return self._upload(seen)
        if seen.route == FILE_GET:
            name = "files/" + seen.path.split("/files/", 1)[1].split("?", 1)[0]
            with self._lock:
                info = self.files.get(name)
                if info is None:
                    return Canned(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
                self._polls[name] += 1
                if self._polls[name] > self.processing_polls:
                    info["state"] = "ACTIVE"
                return Canned(body=dict(info))
        if seen.route == MODELS:  # one body for both SDKs: OpenAI reads "data", Gemini "models"
            return Canned(body={"object": "list", "models": [{"name": "models/gemini-test"}],
                                "data": [{"id": "m", "object": "model", "created": 1, "owned_by": "x"}]})
        return Canned(404, {"error": {"message": f"no route for {seen.path}"}})

    def _upload(self, seen: Seen) -> Canned:
        session = seen.path.rsplit("/", 1)[1]
        with self._lock:
            self.uploads.setdefault(session, bytearray()).extend(seen.body)
        command = seen.headers.get("x-goog-upload-command", "")
        if "finalize" not in command:
            return Canned(body={}, headers={"x-goog-upload-status": "active"})
        file_id = f"f{session}"
        info = {"name": f"files/{file_id}", "uri": f"{self.url}/v1beta/files/{file_id}", "state": "PROCESSING",
                "mimeType": "video/mp4", "sizeBytes": str(len(self.uploads[session])),
                "expirationTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 48 * 3600))}
        with self._lock:
            self.files[info["name"]] = info
        return Canned(body={"file": dict(info)}, headers={"x-goog-upload-status": "final"})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                at = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(api._route(self.command, self.path), self.command, self.path,
                            {k.lower(): v for k, v in self.headers.items()}, body, at)
                with api._lock:
                    api.seen.append(seen)
                canned = api._answer(seen)
                data = canned.body
                payload = data if isinstance(data, bytes) else (
                    data.encode() if isinstance(data, str) else json.dumps(data if data is not None else {}).encode())
                self.send_response(canned.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _serve
            do_POST = _serve
            do_DELETE = _serve

        return Handler


@contextmanager
def fake_api() -> Iterator[FakeAPI]:
    api = FakeAPI().start()
    try:
        yield api
    finally:
        api.stop()


def make_video(path: Any, seconds: float = 12, size: str = "320x240", audio: bool = True) -> Any:
    """A small H.264 test video (a moving test pattern, a sine tone) made with ffmpeg."""
    import subprocess

    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=25"]
    if audio:
        cmd += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000"]
    cmd += ["-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    cmd += ["-c:a", "aac", "-shortest"] if audio else []
    subprocess.run([*cmd, str(path)], check=True, capture_output=True)
    return path


def runner_for(settings: Any, sleeps: list[float] | None = None) -> Any:
    """A Runner over the project's store whose backoff sleeps are recorded, not slept."""
    from playlisteval.models.runner import Runner
    from playlisteval.store import open_store

    record = sleeps if sleeps is not None else []
    return Runner(settings, open_store(settings), sleep=record.append)


def ledger(engine: Any) -> list[Any]:
    from sqlmodel import select

    from playlisteval.store import transaction
    from playlisteval.store.tables import ModelCall

    with transaction(engine) as s:
        return list(s.exec(select(ModelCall).order_by(ModelCall.id)).all())  # type: ignore[arg-type]


def store_bytes(settings: Any) -> bytes:
    """Every byte of the SQLite store (main file and WAL) — to prove a secret never reached it."""
    from pathlib import Path

    path = Path(settings.store_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())


@contextmanager
def debug_logging() -> Iterator[None]:
    """playlisteval's logging at debug level for one test, then the previous configuration back (the
    configured logger writes to the test's captured stderr, which is closed after the test)."""
    import logging

    import structlog

    from playlisteval import logs

    saved = structlog.get_config()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    logs.configure(2)
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.setLevel(level)
        root.handlers[:] = handlers
