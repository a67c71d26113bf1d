"""OpenAI's Batch API through the openai SDK (issue 15): a JSONL file of chat-completion requests uploaded
through the Files API (purpose "batch"), then ``POST /v1/batches`` over it.

Each line's ``custom_id`` is the request hash; its body is exactly what ``OpenAIProvider.complete`` would
send (the same content, frames, options and strict schema). The batch carries the client-side marker
in its metadata and the input file is named after it, so a send that was interrupted is found again
(``find``) and an input file already uploaded is reused rather than uploaded twice. Answers come back
in the output file (and failures in the error file) once the batch has ended — completed, or expired
or cancelled with whatever it finished — and are read with the provider's own ``reply``.
"""

from __future__ import annotations

import json
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletion

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError
from playlisteval.models.batch.api import (
    CANCELLED,
    COMPLETED,
    EXPIRED,
    FAILED,
    RUNNING,
    Encoded,
    Polled,
    Result,
)
from playlisteval.models.providers.openai_compat import OpenAIProvider, map_error
from playlisteval.models.request import ModelRequest
from playlisteval.prompts.schemas import SCHEMAS

ENDPOINT: Final = "/v1/chat/completions"
MARKER_KEY = "playlisteval_marker"
MAX_REQUESTS = 50_000  # per batch (OpenAI's limit)
MAX_BYTES = {"openai": 200_000_000, "qwen": 100_000_000}  # per input file (DashScope: 100 MB)
_LISTED = 1000  # batches or files looked through for a marker (newest first)
_STATES = {"validating": RUNNING, "in_progress": RUNNING, "finalizing": RUNNING, "cancelling": RUNNING,
           "completed": COMPLETED, "failed": FAILED, "expired": EXPIRED, "cancelled": CANCELLED}


class OpenAIBatch:
    name = "openai"

    def __init__(self, settings: Settings, provider: OpenAIProvider) -> None:
        self.settings = settings
        self.provider = provider

    def limits(self) -> tuple[int, int]:
        return MAX_REQUESTS, MAX_BYTES.get(self.provider.name, MAX_BYTES["qwen"])

    def encode(self, model: str, key: str, request: ModelRequest) -> Encoded:
        schema = SCHEMAS[request.response_schema] if request.response_schema else None
        content = self.provider.content(model, request)
        options = self.provider.options(request)
        if schema is not None:
            response_format, note = self.provider.response_format(schema)
            options["response_format"] = response_format
            if note:
                content.append({"type": "text", "text": note})
        extra = options.pop("extra_body", None) or {}  # online it is merged into the body by the SDK
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": content}], **options, **extra}
        line = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body},
                          separators=(",", ":"), ensure_ascii=False).encode()
        return Encoded(key, line, len(line) + 1)

    # -- the API -----------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"{self.provider.name} batch"

    def find(self, marker: str) -> str | None:
        try:
            for i, batch in enumerate(self.provider.client().batches.list(limit=100)):
                if (batch.metadata or {}).get(MARKER_KEY) == marker:
                    return batch.id
                if i >= _LISTED:
                    break
        except openai.OpenAIError as exc:
            raise map_error(exc, self._where()) from exc
        return None

    def _uploaded(self, marker: str) -> str | None:
        for i, item in enumerate(self.provider.client().files.list(purpose="batch")):
            if item.filename == f"{marker}.jsonl":
                return item.id
            if i >= _LISTED:
                break
        return None

    def submit(self, model: str, marker: str, batch: list[Encoded]) -> str:
        client = self.provider.client()
        data = b"".join(e.payload + b"\n" for e in batch)
        try:
            file_id = self._uploaded(marker)
            if file_id is None:
                file_id = client.files.create(file=(f"{marker}.jsonl", data, "application/jsonl"), purpose="batch").id
            created = client.batches.create(input_file_id=file_id, endpoint=ENDPOINT,
                                            completion_window="24h", metadata={MARKER_KEY: marker})
        except openai.OpenAIError as exc:
            raise map_error(exc, self._where()) from exc
        return created.id

    def poll(self, remote_id: str, requests: dict[str, ModelRequest]) -> Polled:
        client = self.provider.client()
        try:
            batch = client.batches.retrieve(remote_id)
            state = _STATES.get(batch.status)
            if state is None:
                raise PermanentModelError(f"{self._where()} {remote_id}: unknown status {batch.status!r}")
            if state == RUNNING:
                return Polled(RUNNING)
            results: list[Result] = []
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    results += self._results(client.files.content(file_id).text, requests)
        except openai.OpenAIError as exc:
            raise map_error(exc, self._where()) from exc
        errors = [f"{e.code}: {e.message}" for e in (batch.errors.data or [])] if batch.errors else []
        return Polled(state, results, "; ".join(errors)[:500])

    def _results(self, text: str, requests: dict[str, ModelRequest]) -> list[Result]:
        out: list[Result] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = str(row["custom_id"])
            except (ValueError, KeyError, TypeError):
                continue  # unreadable: its request stays unanswered and is released when the batch ends
            if key not in requests:
                continue
            response = row.get("response") or {}
            status = int(response.get("status_code") or 0)
            if row.get("error") or status != 200:
                error = row.get("error") or (response.get("body") or {}).get("error") or {}
                out.append(Result(key, error=f"HTTP {status}: {error.get('code', '')} {error.get('message', '')}"
                                  .strip()[:500]))
                continue
            try:
                completion = ChatCompletion.model_validate(response.get("body"))
            except ValueError as exc:
                out.append(Result(key, error=f"unreadable answer: {str(exc)[:300]}"))
                continue
            out.append(Result(key, reply=self.provider.reply(completion, requests[key], 0.0)))
        return out
