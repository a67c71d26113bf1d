"""The report's attribution reads every main run's losses on the store driver's own cursor (issue 43): the
evidence comes back as text from SQLite and decoded from PostgreSQL's JSON, so the same rows in both
stores must give the same attribution — with verdicts whose records are read, and no-verdicts whose are not."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sqlalchemy import text

from bench.report_store import build_store, copy_to_postgres
from playlisteval.analytics.attribution import CATEGORIES, attribute_runs
from playlisteval.config import load_settings
from playlisteval.store import forget_engines, open_store

RECORDS = [{"chunks": [1, 2], "frames": [[1, 40.0]]}, {"mode": "none"}, {}, None]


def _with_verdicts(db: Path) -> None:
    """A third of the judgments get a verdict outcome and one of RECORDS as evidence (the bench's store
    has neither: every loss there is a no-verdict)."""
    con = sqlite3.connect(db)
    for k, record in enumerate(RECORDS):
        con.execute("UPDATE judgment SET outcome = 'verdict', evidence = ? WHERE id % 12 = ?",
                    [json.dumps(record), k])
    con.commit()
    con.close()


def test_the_same_rows_attribute_alike_on_sqlite_and_postgresql(tmp_path: Path, pg_url: str) -> None:
    root = build_store(tmp_path / "store", items=6, runs=8, calls=40, seed=3)
    _with_verdicts(Path(load_settings(root).store_url.removeprefix("sqlite:///")))
    pg_root = copy_to_postgres(root, pg_url)
    runs = list(range(1, 9))
    lite = attribute_runs(open_store(load_settings(root)), runs, seed=5)
    pg_engine = open_store(load_settings(pg_root))
    with pg_engine.connect() as c:  # the copy holds the records as JSON values, not as text
        assert c.execute(text("SELECT count(*) FROM judgment WHERE evidence::text LIKE '%chunks%'")).scalar_one() > 0
    pg = attribute_runs(pg_engine, runs, seed=5)
    forget_engines()
    assert [a.as_json() for a in lite] == [a.as_json() for a in pg]
    seen = {c for a in lite for c in CATEGORIES if a.counts[c]}
    assert {"no_verdict", "no_evidence"} <= seen and len(seen) >= 3, seen  # records read, and not read
