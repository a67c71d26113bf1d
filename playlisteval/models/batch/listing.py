"""The batches not yet ended, as `status` and `models batches` list them — read without the batch machinery.

Kept apart from run.py so that `status` does not import the runner through it (issue 26: start-up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.store import transaction
from playlisteval.store.tables import ModelBatch, ModelBatchRequest

LIVE = ("queued", "submitted")  # a request's states while its answer may still come from a batch
OPEN = ("pending", "submitted")  # a batch's states before it ended


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
    with transaction(engine) as s:
        batches = s.exec(select(ModelBatch).where(col(ModelBatch.state).in_(OPEN)).order_by(col(ModelBatch.id))).all()
        answered = dict(s.exec(select(ModelBatchRequest.batch_id, func.count())
                               .where(col(ModelBatchRequest.batch_id).in_([b.id for b in batches]),
                                      col(ModelBatchRequest.state).not_in(LIVE))
                               .group_by(col(ModelBatchRequest.batch_id))).all())
        queued = int(s.exec(select(func.count()).select_from(ModelBatchRequest)
                            .where(ModelBatchRequest.state == "queued", ModelBatchRequest.batch_id == 0)).one())
    out = [OpenBatch(int(b.id or 0), f"{b.provider}/{b.model}", b.state, b.requests,
                     int(answered.get(int(b.id or 0), 0)), max(0.0, now - b.created_at), b.estimated_usd,
                     b.remote_id, b.error) for b in batches]
    if queued:  # requests waiting to be written into a batch: shown as one line, id 0
        out.append(OpenBatch(0, "(queued)", "queued", queued, 0, 0.0, 0.0, "", ""))
    return out
