"""The batches not yet ended, as `status` and `models batches` list them — read without the batch machinery.

Kept apart from run.py so that `status` does not import the runner through it (issue 26: start-up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine

from playlisteval.store.engine import read_core

LIVE = ("queued", "submitted")  # a request's states while its answer may still come from a batch
OPEN = ("pending", "submitted")  # a batch's states before it ended
# store/tables.py ModelBatch / ModelBatchRequest as SQL text: `status` shows the open batches without the ORM
_OPEN_BATCHES = text("SELECT id, provider, model, state, requests, created_at, estimated_usd, remote_id, error "
                     "FROM model_batch WHERE state IN :open ORDER BY id").bindparams(bindparam("open", expanding=True))
_ANSWERED = text("SELECT batch_id, count(*) FROM model_batch_request WHERE batch_id IN :ids AND state NOT IN :live "
                 "GROUP BY batch_id").bindparams(bindparam("ids", expanding=True), bindparam("live", expanding=True))
_QUEUED = text("SELECT count(*) FROM model_batch_request WHERE state = 'queued' AND batch_id = 0")


@dataclass(frozen=True)
class OpenBatch:
    id: int
    spec: str
    state: str  # pending (written, not yet acknowledged) / submitted
    requests: int
    answered: int
    age_s: float
    expected_usd: float
    remote_id: str
    error: str


def open_batches(engine: Engine, now: float | None = None) -> list[OpenBatch]:
    """Batches not yet ended, oldest first, with how many of their requests are answered (`status`)."""
    now = time.time() if now is None else now
    with read_core(engine) as s:
        batches = s.execute(_OPEN_BATCHES, {"open": list(OPEN)}).all()
        answered = {int(i): int(n) for i, n in s.execute(_ANSWERED, {"ids": [b.id for b in batches],
                                                                     "live": list(LIVE)}).all()} if batches else {}
        queued = int(s.execute(_QUEUED).scalar() or 0)
    out = [OpenBatch(int(b.id or 0), f"{b.provider}/{b.model}", str(b.state), int(b.requests),
                     answered.get(int(b.id or 0), 0), max(0.0, now - float(b.created_at)), float(b.estimated_usd),
                     str(b.remote_id), str(b.error)) for b in batches]
    if queued:  # requests waiting to be written into a batch: shown as one line, id 0
        out.append(OpenBatch(0, "(queued)", "queued", queued, 0, 0.0, 0.0, "", ""))
    return out
