"""A batch API for the offline `sim` provider (issue 15), so that batched runs work without keys.

SIMULATED, like everything `sim` does: a "batch" is a JSON file under the project's ``.sim_batches/``
named by its marker (so ``find`` works as a provider's would after a crash), and polling it answers
every request with ``SimProvider.complete`` — the same answer an online call gets, since sim answers are
a function of the request. A drawn 429 is drawn again (a batch service retries its own rate limits);
any other sim error becomes that request's failure, which sends it back to the online path as a real
batch's failure would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from playlisteval.config import Settings
from playlisteval.errors import ModelError, PermanentModelError, TransientModelError
from playlisteval.models.batch.api import COMPLETED, Encoded, Polled, Result
from playlisteval.models.request import ModelRequest, ProviderReply
from playlisteval.prompts.schemas import SCHEMAS
from playlisteval.world.sim.provider import SimProvider

FOLDER = ".sim_batches"


class SimBatch:
    name = "sim"

    def __init__(self, settings: Settings, provider: SimProvider) -> None:
        self.settings = settings
        self.provider = provider

    @property
    def folder(self) -> Path:
        return self.settings.root / FOLDER

    def limits(self) -> tuple[int, int]:
        return self.settings.batch.max_requests, int(self.settings.batch.max_mb * 1e6)

    def encode(self, model: str, key: str, request: ModelRequest) -> Encoded:
        payload = {"key": key, "request": request.model_dump(mode="json")}
        return Encoded(key, payload, len(json.dumps(payload)))

    def find(self, marker: str) -> str | None:
        return marker if (self.folder / f"{marker}.json").is_file() else None

    def submit(self, model: str, marker: str, batch: list[Encoded]) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{marker}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"model": model, "requests": [e.payload for e in batch]}))
        tmp.replace(path)  # whole or absent: a crash mid-write leaves no half batch to find
        return marker

    def poll(self, remote_id: str, requests: dict[str, ModelRequest]) -> Polled:
        path = self.folder / f"{remote_id}.json"
        try:
            sent = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise PermanentModelError(f"sim batch {remote_id}: cannot read {path}: {exc}") from exc
        results: list[Result] = []
        for entry in sent["requests"]:
            key = entry["key"]
            if key not in requests:
                continue
            request = requests[key]
            schema = SCHEMAS[request.response_schema] if request.response_schema else None
            try:
                reply = self._answer(sent["model"], request, schema)
            except ModelError as exc:
                results.append(Result(key, error=str(exc)))
                continue
            results.append(Result(key, reply=reply))
        return Polled(COMPLETED, results)

    def _answer(self, model: str, request: ModelRequest, schema: Any) -> ProviderReply:
        """A batch service absorbs its own rate limits: a drawn 429 is drawn again, as many times as the
        runner would try online; anything else is this request's failure."""
        for tries in range(1, self.settings.runner.max_attempts + 1):
            try:
                return self.provider.complete(model, request, schema, self.settings.runner.timeout_s)
            except TransientModelError:
                if tries == self.settings.runner.max_attempts:
                    raise
        raise AssertionError("unreachable")
