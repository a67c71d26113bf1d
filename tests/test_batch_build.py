"""A build whose roles go by batch (issue 15): rounds around batches give the very items an online build
gives, malformed replies and 429s included, at the batch price — a batch's malformed reply, or one a
ranking check must pass, comes back as the request's first try, checked and repaired as an online one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.actors.batch_rounds import BUILD_ROLES
from playlisteval.actors.build_run import build, resume
from playlisteval.store import forget_engines
from playlisteval.world.sim.batch import FOLDER
from tests.builder_helpers import app_with, fixed_worlds
from tests.helpers import project, seeded_store

FAULTS = {"sim__malformed_json": 0.15, "sim__rate_limited": 0.05, "sim__refusal": 0.03}


def rows(engine: Engine, sql: str) -> list[Any]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def built(tmp_path: Path, name: str, batched: bool) -> tuple[Engine, Any]:
    settings = project(tmp_path / name, **FAULTS, batch__poll_s=0.01, batch__poll_max_s=0.02)
    if batched:
        settings.batch.roles = sorted(BUILD_ROLES)
    seeded_store(settings, 3, world_dir=fixed_worlds("batch-build"))
    app, _ = app_with(settings)
    build(settings, app=app)
    return app.engine, settings


CONTENT = ["SELECT i.id, i.state, i.phase1_attempts, i.phase2_attempts FROM item i ORDER BY i.id",
           "SELECT item_id, attempt, question, answer FROM qa ORDER BY item_id, attempt",
           "SELECT d.item_id, d.attempt, a.rating, a.text FROM answer a JOIN distractor_set d ON d.id = a.set_id "
           "ORDER BY 1, 2, 3",
           "SELECT item_id, phase, attempt, gate, verdict, reason FROM gate_result ORDER BY 1, 2, 3, 4"]


def test_a_batched_build_gives_the_same_items_as_an_online_one_for_less(tmp_path: Path) -> None:
    online, _ = built(tmp_path, "online", batched=False)
    batched, settings = built(tmp_path, "batched", batched=True)
    for sql in CONTENT:
        assert rows(online, sql) == rows(batched, sql)
    assert rows(batched, "SELECT COUNT(*) FROM item WHERE state = 'accepted'")[0][0] > 0
    # every batched role's first asking went by batch, the rankings (checked by the runner) too
    by_batch = dict(rows(batched, "SELECT role, COUNT(*) FROM model_call WHERE batch_id > 0 GROUP BY role"))
    assert {"B", "C3", "D1", "C2_transcript_answer", "D3_first", "D4"} <= set(by_batch)
    # batched replies that were malformed, or that a ranking check must pass, wait as first tries: the
    # runner replayed them (checked, repaired online where needed) exactly as it handles online replies
    first_tries = rows(batched, "SELECT COUNT(*) FROM response_cache WHERE request_hash LIKE '%try0'")[0][0]
    checked = rows(batched, "SELECT COUNT(*) FROM model_batch_request WHERE checked AND "
                            "request_hash NOT LIKE '%try%'")[0][0]
    assert checked > 0 and first_tries >= checked
    # and the repairs went by batch as well, each as its own try
    repairs = rows(batched, "SELECT COUNT(*) FROM model_batch_request WHERE request_hash LIKE '%try%'")[0][0]
    assert repairs > 0
    assert rows(batched, "SELECT COUNT(*) FROM model_call WHERE purpose = 'build' AND batch_id = 0 AND "
                         "status IN ('ok', 'malformed')") == [(0,)]  # nothing at the online price
    spent = "SELECT SUM(usd) FROM model_call WHERE purpose = 'build' AND status IN ('ok', 'malformed', 'error')"
    assert rows(batched, spent)[0][0] < 0.8 * rows(online, spent)[0][0]
    assert rows(batched, "SELECT COUNT(*) FROM model_batch_request WHERE live_hash IS NOT NULL") == [(0,)]
    sent = [e["key"] for f in sorted((settings.root / FOLDER).glob("*.json"))
            for e in json.loads(f.read_text())["requests"]]
    assert sent and len(sent) == len(set(sent))  # no request was ever in two batches


def test_an_interrupted_batched_build_resumes_from_its_open_batches(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    settings = project(tmp_path / "p", batch__poll_s=0.01, batch__poll_max_s=0.02, batch__wait_s=0,
                       sim__malformed_json=0, sim__rate_limited=0, sim__refusal=0)
    settings.batch.roles = sorted(BUILD_ROLES)
    seeded_store(settings, 2, world_dir=fixed_worlds("batch-build-resume"))
    app, _ = app_with(settings)
    build(settings, app=app)  # wait_s = 0: the first batch is sent, then the build stops waiting
    waiting = rows(app.engine, "SELECT COUNT(*) FROM model_batch_request WHERE live_hash IS NOT NULL")[0][0]
    assert waiting > 0 and rows(app.engine, "SELECT COUNT(*) FROM item WHERE state = 'accepted'") == [(0,)]
    forget_engines()
    settings.batch.wait_s = 3600
    app, _ = app_with(settings)
    resume(settings, app=app)
    assert rows(app.engine, "SELECT COUNT(*) FROM item WHERE state = 'accepted'") == [(2,)]
    assert rows(app.engine, "SELECT COUNT(*) FROM model_batch_request WHERE live_hash IS NOT NULL") == [(0,)]
    paid = rows(app.engine, "SELECT request_hash, COUNT(*) FROM model_call WHERE status = 'ok' AND batch_id > 0 "
                            "GROUP BY request_hash HAVING COUNT(*) > 1")
    assert paid == []  # nothing answered twice
