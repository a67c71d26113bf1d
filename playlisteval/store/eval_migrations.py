"""Data migrations of the evaluation tables (issue 9), kept apart from the schema steps in migrations.py.

- Judge calls that failed used to be stored as judgments (outcome "error", scored 0.5): they move to
  ``judge_error``, so they are asked again and never counted as a score.
- Every run gets its options hash, computed from the settings it recorded.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection


def move_error_judgments(conn: Connection) -> None:
    conn.execute(text(
        "INSERT INTO judge_error (run_id, pair_id, item_id, error, attempts, created_at) "
        "SELECT j.run_id, j.pair_id, p.item_id, j.raw, 1, 0 FROM judgment AS j "
        "JOIN pair AS p ON p.id = j.pair_id WHERE j.outcome = 'error' AND NOT EXISTS ("
        "SELECT 1 FROM judge_error AS e WHERE e.run_id = j.run_id AND e.pair_id = j.pair_id)"))
    conn.execute(text("DELETE FROM judgment WHERE outcome = 'error'"))


def _hash(settings: dict[str, Any]) -> str:
    # the same text and digest as playlisteval.eval.runkey.options_hash (a test holds them equal); the
    # store does not import from the evaluation package
    body = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def stamp_options_hash(conn: Connection) -> None:
    rows = conn.execute(text("SELECT id, settings FROM judge_run WHERE options_hash = ''")).all()
    for run_id, raw in rows:
        settings = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
        if isinstance(settings, dict) and settings:
            conn.execute(text("UPDATE judge_run SET options_hash = :h WHERE id = :i"),
                         {"h": _hash(settings), "i": run_id})
