"""Gemini's Batch Mode through google-genai (issue 15): inline requests, ``batches.create`` over a model.

Each inline request is exactly what ``GeminiProvider.complete`` would send — the same parts (video clips
as Files API uploads, reused while valid; images inline) and the same generation config — with the
request hash as its metadata, which the answers carry back. The batch's display name is the client-side
marker, so a send that was interrupted is found again by listing batches. Inline batches hold at most
20 MB, which bounds how many frame-heavy requests go in one ([batch] gemini_inline_mb). Answers arrive
when the batch job has ended and are read with the provider's own ``_reply``.
"""

from __future__ import annotations

from pathlib import Path

from google.genai import errors as genai_errors
from google.genai import types

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
from playlisteval.models.providers.gemini import GeminiProvider
from playlisteval.models.providers.gemini_errors import http, map_error
from playlisteval.models.request import ModelRequest
from playlisteval.prompts.schemas import SCHEMAS

KEY = "playlisteval_key"
_LISTED = 1000
_STATES = {"JOB_STATE_PENDING": RUNNING, "JOB_STATE_QUEUED": RUNNING, "JOB_STATE_RUNNING": RUNNING,
           "JOB_STATE_CANCELLING": RUNNING, "JOB_STATE_SUCCEEDED": COMPLETED,
           "JOB_STATE_PARTIALLY_SUCCEEDED": COMPLETED, "JOB_STATE_FAILED": FAILED,
           "JOB_STATE_CANCELLED": CANCELLED, "JOB_STATE_EXPIRED": EXPIRED}
_ERRORS = (genai_errors.APIError, http.TransportError, ValueError)


class GeminiBatch:
    name = "gemini"

    def __init__(self, settings: Settings, provider: GeminiProvider) -> None:
        self.settings = settings
        self.provider = provider

    def limits(self) -> tuple[int, int]:
        return self.settings.batch.max_requests, int(self.settings.batch.gemini_inline_mb * 1e6)

    def encode(self, model: str, key: str, request: ModelRequest) -> Encoded:
        schema = SCHEMAS[request.response_schema] if request.response_schema else None
        uploaded: list[Path] = []
        try:
            parts = self.provider._parts(self.provider.client(), request, uploaded)  # uploads clips once
        except _ERRORS as exc:
            raise map_error(exc, f"gemini/{model} batch") from exc
        config = self.provider._config(request, schema, self.settings.runner.timeout_s)
        config.http_options = None  # a per-call timeout means nothing inside a batch
        inlined = types.InlinedRequest(contents=[types.Content(role="user", parts=parts)], config=config,
                                       metadata={KEY: key})
        return Encoded(key, inlined, len(inlined.model_dump_json(exclude_none=True)))

    # -- the API -----------------------------------------------------------------------------------
    def find(self, marker: str) -> str | None:
        try:
            for i, job in enumerate(self.provider.client().batches.list(
                    config=types.ListBatchJobsConfig(page_size=100))):
                if job.display_name == marker:
                    return job.name
                if i >= _LISTED:
                    break
        except _ERRORS as exc:
            raise map_error(exc, "gemini batch") from exc
        return None

    def submit(self, model: str, marker: str, batch: list[Encoded]) -> str:
        try:
            job = self.provider.client().batches.create(
                model=model, src=[e.payload for e in batch], config=types.CreateBatchJobConfig(display_name=marker))
        except _ERRORS as exc:
            raise map_error(exc, f"gemini/{model} batch") from exc
        if not job.name:
            raise PermanentModelError(f"gemini/{model} batch: the API returned no batch name")
        return job.name

    def poll(self, remote_id: str, requests: dict[str, ModelRequest]) -> Polled:
        try:
            job = self.provider.client().batches.get(name=remote_id)
        except _ERRORS as exc:
            raise map_error(exc, f"gemini batch {remote_id}") from exc
        raw_state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
        state = _STATES.get(raw_state)
        if state is None:
            raise PermanentModelError(f"gemini batch {remote_id}: unknown state {raw_state}")
        if state == RUNNING:
            return Polled(RUNNING)
        keys = list(requests)  # the batch's requests in the order they were sent
        results: list[Result] = []
        for i, answer in enumerate((job.dest.inlined_responses if job.dest else None) or []):
            key = (answer.metadata or {}).get(KEY) or (keys[i] if i < len(keys) else "")
            if key not in requests:
                continue
            if answer.error is not None or answer.response is None:
                error = answer.error
                text = f"{error.code} {error.message}" if error is not None else "no response"
                results.append(Result(key, error=text[:500]))
            else:
                results.append(Result(key, reply=self.provider._reply(answer.response, requests[key])))
        detail = job.error.message if job.error is not None and job.error.message else ""
        return Polled(state, results, detail)
