"""The batch protocols of the local fake server (tests/provider_fakes.py), as the real SDKs speak them.

OpenAI: ``POST /v1/files`` (multipart, purpose "batch"), ``GET /v1/files`` (list), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list). Gemini: ``POST
/v1beta/models/{m}:batchGenerateContent`` (inline requests), ``GET /v1beta/batches/{id}``, ``GET /v1beta/batches``.

A batch answers "in progress" for ``polls`` polls, then ends: every request is answered (its text from
``answer(request_body)``, else the server's ``content``) except those whose key is in ``failing`` (a
per-request error) and, when ``expire_after`` is set, all after the first ``expire_after`` (the batch
then *expires* with partial results). Every request key of every batch created is recorded in ``keys``
so that tests can prove no request was ever sent twice. A 429 on submit is a canned reply queued on the
create route (``api.queue(OAI_BATCH_CREATE, Canned(429, …))``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import default as email_policy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.provider_fakes import Canned, FakeAPI, Seen

OAI_FILE_CREATE = "oai_file_create"
OAI_FILE_LIST = "oai_file_list"
OAI_FILE_CONTENT = "oai_file_content"
OAI_BATCH_CREATE = "oai_batch_create"
OAI_BATCH_GET = "oai_batch_get"
OAI_BATCH_LIST = "oai_batch_list"
GEM_BATCH_CREATE = "gem_batch_create"
GEM_BATCH_GET = "gem_batch_get"
GEM_BATCH_LIST = "gem_batch_list"
CACHE_CREATE = "cache_create"  # Gemini context caches (issue 15, item 4)
CACHE_GET = "cache_get"
ROUTES = {OAI_FILE_CREATE, OAI_FILE_LIST, OAI_FILE_CONTENT, OAI_BATCH_CREATE, OAI_BATCH_GET, OAI_BATCH_LIST,
          GEM_BATCH_CREATE, GEM_BATCH_GET, GEM_BATCH_LIST, CACHE_CREATE, CACHE_GET}
TOKENS_PER_PART = 258  # what a cached part counts (an image at Gemini's default resolution)
GEMINI_KEY = "playlisteval_key"


class BatchWire:
    def __init__(self, api: FakeAPI) -> None:
        self.api = api
        self.polls = 1  # polls that see a batch in progress before it ends
        self.failing: set[str] = set()
        self.expire_after: int | None = None
        self.answer: Callable[[dict[str, Any]], str] | None = None
        self.cached_tokens = 0  # reported as cached input of every batched answer
        self.keys: list[str] = []  # every request key of every batch created, in order
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.caches: dict[str, dict[str, Any]] = {}  # context caches by name; deleting one makes it unknown
        self._lock = threading.Lock()
        self._n = 0

    def _id(self, prefix: str) -> str:
        with self._lock:
            self._n += 1
            return f"{prefix}{self._n}"

    # -- routing -----------------------------------------------------------------------------------
    @staticmethod
    def route(method: str, bare: str) -> str | None:
        if bare.endswith(":batchGenerateContent"):
            return GEM_BATCH_CREATE
        if bare.startswith("/v1beta/cachedContents"):
            return CACHE_CREATE if method == "POST" else CACHE_GET
        if bare.startswith("/v1beta/batches"):
            return GEM_BATCH_GET if bare.count("/") >= 3 else GEM_BATCH_LIST
        if bare.startswith("/v1/files"):
            if bare.endswith("/content"):
                return OAI_FILE_CONTENT
            return OAI_FILE_CREATE if method == "POST" else OAI_FILE_LIST
        if bare.startswith("/v1/batches"):
            if method == "POST":
                return OAI_BATCH_CREATE
            return OAI_BATCH_GET if bare.count("/") >= 3 else OAI_BATCH_LIST
        return None

    def respond(self, seen: Seen) -> Canned:
        from tests.provider_fakes import Canned

        bare = seen.path.split("?", 1)[0]
        handler = {OAI_FILE_CREATE: self._file_create, OAI_FILE_LIST: self._file_list,
                   OAI_FILE_CONTENT: self._file_content, OAI_BATCH_CREATE: self._batch_create,
                   OAI_BATCH_GET: self._batch_get, OAI_BATCH_LIST: self._batch_list,
                   GEM_BATCH_CREATE: self._job_create, GEM_BATCH_GET: self._job_get,
                   GEM_BATCH_LIST: self._job_list, CACHE_CREATE: self._cache_create,
                   CACHE_GET: self._cache_get}[seen.route]
        status, body = handler(seen, bare)
        return Canned(status, body)

    def _text(self, body: dict[str, Any]) -> str:
        return self.answer(body) if self.answer is not None else self.api.content

    def _ends(self, record: dict[str, Any]) -> bool:
        record["_polls"] += 1
        return record["_polls"] > self.polls

    # -- OpenAI ------------------------------------------------------------------------------------
    def _file_create(self, seen: Seen, bare: str) -> tuple[int, Any]:
        message = BytesParser(policy=email_policy).parsebytes(
            b"Content-Type: " + seen.headers["content-type"].encode() + b"\r\n\r\n" + seen.body)
        fields: dict[str, Any] = {}
        for part in message.iter_parts():  # type: ignore[attr-defined]
            name = part.get_param("name", header="content-disposition")
            fields[name] = (part.get_filename(), part.get_payload(decode=True))
        filename, data = fields["file"]
        info = self._file(filename, data, fields["purpose"][1].decode())
        return 200, info

    def _file(self, filename: str, data: bytes, purpose: str) -> dict[str, Any]:
        file_id = self._id("file-")
        info = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}
        with self._lock:
            self.files[file_id] = {**info, "_data": data}
        return info

    def _file_list(self, seen: Seen, bare: str) -> tuple[int, Any]:
        with self._lock:
            data = [{k: v for k, v in f.items() if not k.startswith("_")} for f in reversed(self.files.values())]
        return 200, {"object": "list", "data": data, "has_more": False}

    def _file_content(self, seen: Seen, bare: str) -> tuple[int, Any]:
        file_id = bare.split("/")[3]
        with self._lock:
            info = self.files.get(file_id)
        if info is None:
            return 404, {"error": {"message": f"no file {file_id}", "type": "invalid_request_error"}}
        return 200, info["_data"]

    def _batch_create(self, seen: Seen, bare: str) -> tuple[int, Any]:
        body = seen.json
        with self._lock:
            source = self.files.get(body["input_file_id"])
        if source is None:
            return 400, {"error": {"message": "unknown input file", "type": "invalid_request_error"}}
        lines = [json.loads(line) for line in source["_data"].decode().splitlines() if line.strip()]
        batch_id = self._id("batch_")
        record = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                  "input_file_id": body["input_file_id"],
                  "completion_window": body["completion_window"], "status": "validating",
                  "created_at": int(time.time()), "metadata": body.get("metadata"),
                  "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "_lines": lines, "_polls": 0}
        with self._lock:
            self.batches[batch_id] = record
            self.keys += [line["custom_id"] for line in lines]
        return 200, _public(record)

    def _batch_get(self, seen: Seen, bare: str) -> tuple[int, Any]:
        batch_id = bare.rsplit("/", 1)[1]
        with self._lock:
            record = self.batches.get(batch_id)
        if record is None:
            return 404, {"error": {"message": f"no batch {batch_id}", "type": "invalid_request_error"}}
        if record["status"] in ("validating", "in_progress"):
            if self._ends(record):
                self._finish_openai(record)
            else:
                record["status"] = "in_progress"
        return 200, _public(record)

    def _finish_openai(self, record: dict[str, Any]) -> None:
        from tests.provider_fakes import chat_body

        out, errors = [], []
        for i, line in enumerate(record["_lines"]):
            key = line["custom_id"]
            if key in self.failing:
                errors.append({"id": f"req_{i}", "custom_id": key, "response": {"status_code": 400, "body": {
                    "error": {"message": "bad image", "type": "invalid_request_error", "code": "invalid_image"}}},
                    "error": None})
            elif self.expire_after is None or i < self.expire_after:
                usage = dict(self.api.usage)
                if self.cached_tokens:
                    usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
                body = chat_body(self._text(line["body"]), usage=usage)
                out.append({"id": f"req_{i}", "custom_id": key, "error": None,
                            "response": {"status_code": 200, "request_id": f"r{i}", "body": body}})
        expired = self.expire_after is not None and self.expire_after < len(record["_lines"])
        record["status"] = "expired" if expired else "completed"
        record["request_counts"] = {"total": len(record["_lines"]), "completed": len(out), "failed": len(errors)}
        if out:
            record["output_file_id"] = self._file("output.jsonl", _jsonl(out), "batch_output")["id"]
        if errors:
            record["error_file_id"] = self._file("errors.jsonl", _jsonl(errors), "batch_output")["id"]

    def _batch_list(self, seen: Seen, bare: str) -> tuple[int, Any]:
        with self._lock:
            data = [_public(r) for r in reversed(self.batches.values())]
        return 200, {"object": "list", "data": data, "has_more": False}

    # -- Gemini ------------------------------------------------------------------------------------
    def _job_create(self, seen: Seen, bare: str) -> tuple[int, Any]:
        batch = seen.json["batch"]
        requests = batch["inputConfig"]["requests"]["requests"]
        name = f"batches/{self._id('b')}"
        model = bare.split("/models/", 1)[1].split(":", 1)[0]
        record = {"name": name, "metadata": {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch", "name": name,
            "displayName": batch.get("displayName", ""), "model": f"models/{model}", "state": "BATCH_STATE_PENDING",
            "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, "_requests": requests, "_polls": 0}
        with self._lock:
            self.jobs[name] = record
            self.keys += [(r.get("metadata") or {}).get(GEMINI_KEY, "") for r in requests]
        return 200, _public(record)

    def _job_get(self, seen: Seen, bare: str) -> tuple[int, Any]:
        name = "batches/" + bare.rsplit("/", 1)[1]
        with self._lock:
            record = self.jobs.get(name)
        if record is None:
            return 404, {"error": {"code": 404, "message": f"{name} not found", "status": "NOT_FOUND"}}
        meta = record["metadata"]
        if meta["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            if self._ends(record):
                self._finish_gemini(record)
            else:
                meta["state"] = "BATCH_STATE_RUNNING"
        return 200, _public(record)

    def _finish_gemini(self, record: dict[str, Any]) -> None:
        from tests.provider_fakes import gemini_body

        answers = []
        for i, request in enumerate(record["_requests"]):
            metadata = request.get("metadata") or {}
            if metadata.get(GEMINI_KEY) in self.failing:
                answers.append({"error": {"code": 400, "message": "Request contains an invalid argument."},
                                "metadata": metadata})
            elif self.expire_after is None or i < self.expire_after:
                usage = dict(self.api.gemini_usage)
                if self.cached_tokens:
                    usage["cachedContentTokenCount"] = self.cached_tokens
                answers.append({"response": gemini_body(self._text(request["request"]), usage=usage),
                                "metadata": metadata})
        expired = self.expire_after is not None and self.expire_after < len(record["_requests"])
        meta = record["metadata"]
        meta["state"] = "BATCH_STATE_EXPIRED" if expired else "BATCH_STATE_SUCCEEDED"
        meta["output"] = {"inlinedResponses": {"inlinedResponses": answers}}
        record["done"] = True

    def _job_list(self, seen: Seen, bare: str) -> tuple[int, Any]:
        with self._lock:
            return 200, {"operations": [_public(r) for r in reversed(self.jobs.values())]}


    # -- Gemini context caches ---------------------------------------------------------------------
    def _cache_create(self, seen: Seen, bare: str) -> tuple[int, Any]:
        body = seen.json
        parts = sum(len(c.get("parts", [])) for c in body.get("contents", []))
        ttl = float(str(body.get("ttl", "3600s")).rstrip("s"))
        name = f"cachedContents/{self._id('c')}"
        record = {"name": name, "model": body.get("model"), "displayName": body.get("displayName", ""),
                  "expireTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + ttl)),
                  "usageMetadata": {"totalTokenCount": parts * TOKENS_PER_PART}}
        with self._lock:
            self.caches[name] = record
        return 200, record

    def _cache_get(self, seen: Seen, bare: str) -> tuple[int, Any]:
        name = bare.split("/v1beta/", 1)[1]
        with self._lock:
            record = self.caches.get(name)
        if record is None:
            return 404, {"error": {"code": 404, "message": f"CachedContent {name} not found", "status": "NOT_FOUND"}}
        return 200, record

    def usage_for(self, body: dict[str, Any] | None, usage: dict[str, Any]) -> dict[str, Any]:
        """A generateContent usage: a request that names a context cache reads its tokens as cached input."""
        name = (body or {}).get("cachedContent")
        if not name:
            return usage
        with self._lock:
            record = self.caches.get(name)
        if record is None:
            return usage
        cached = int(record["usageMetadata"]["totalTokenCount"])
        return {**usage, "promptTokenCount": int(usage.get("promptTokenCount", 0)) + cached,
                "cachedContentTokenCount": cached}

    def unknown_cache(self, body: dict[str, Any] | None) -> Canned | None:
        """The API's answer to a request naming a context cache it does not know (deleted, expired)."""
        from tests.provider_fakes import Canned

        name = (body or {}).get("cachedContent")
        with self._lock:
            known = name in self.caches
        if name and not known:
            return Canned(404, {"error": {"code": 404, "message": f"CachedContent {name} not found",
                                          "status": "NOT_FOUND"}})
        return None


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)
