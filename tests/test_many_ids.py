"""Queries over every losing pair or every benchmark pair stay within SQLite's variable limit (issue 26).

At 100k items `leaderboard` (recording a benchmark's version 1) and `report` (failure attribution) put
one parameter per pair into an ``IN (?, ?, …)`` and exited 1 with "too many SQL variables". Here the
store's connections get a limit of 999 variables (``sqlite3.Connection.setlimit``), under the 1100 items,
11000 pairs and ~4400 losses of the synthetic store, so any query that still carries a parameter per row
fails the test in seconds; the answers are checked against what the rows say, worked out here without the store's code.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from bench.report_store import build_store
from playlisteval.analytics.attribution import NO_VERDICT, NOT_RETRIEVED, NOT_SAMPLED, SERVED_WRONG, UNCITED, attribute
from playlisteval.config import load_settings
from playlisteval.select.export import benchmark_rows
from playlisteval.select.versions import ensure_every
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import Benchmark, BenchmarkVersion

ITEMS = 1100  # 11000 pairs, ~4400 losses: every list of them (items too) is over the limit below
LIMIT = 999  # SQLite's default before 3.32 (bounded IN lists of 500, benchmark/pairs.py, stay within it)
CLIP1, CLIP2 = (30.0, 70.0), (0.0, 20.0)  # the gold answer's citations, on each segment's clock


def _limited(engine: Any) -> None:
    """Every new connection of ``engine`` refuses statements with more than LIMIT variables."""
    @event.listens_for(engine, "connect")
    def _set(dbapi: sqlite3.Connection, _record: Any) -> None:
        dbapi.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, LIMIT)

    engine.dispose()  # pooled connections were opened without the limit


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str]]:
    """The bench's synthetic store with citations, chunks and served evidence; the category each losing
    pair must get, worked out from what was written."""
    root = build_store(tmp_path_factory.mktemp("many") / "p", ITEMS, 1, 50, seed=3)
    con = sqlite3.connect(root / "playlisteval.db")
    con.execute("UPDATE qa SET answer = 'first (clip1 @ 0:30 - 1:10) then (clip2 @ 0:00 - 0:20).'")
    # every video cut into 10-second chunks; segments start at 0 (bench/report_store.py)
    con.executemany("INSERT INTO chunk (id, video_id, idx, start, \"end\", transcript, transcript_source, "
                    "transcript_model, ocr_text) VALUES (?, ?, ?, ?, ?, '', '', '', '')",
                    [(v * 100 + k, v, k, 10.0 * k, 10.0 * k + 10, ) for v in range(1, 5) for k in range(60)])
    segs = {i: v for i, v in con.execute("SELECT id, video_id FROM segment")}
    seeds = {item: (segs[a], segs[b]) for item, a, b in con.execute(
        "SELECT item.id, seed.segment1_id, seed.segment2_id FROM item JOIN seed ON seed.id = item.seed_id")}
    expected: dict[int, str] = {}
    for pair_id, item_id, score, verdict in con.execute(
            "SELECT j.pair_id, p.item_id, j.score, j.verdict FROM judgment j JOIN pair p ON p.id = j.pair_id "
            "WHERE j.score < 1").fetchall():
        v1, v2 = seeds[item_id]
        cited = [v1 * 100 + k for k in range(60) if 10 * k < CLIP1[1] and CLIP1[0] < 10 * k + 10] + \
                [v2 * 100 + k for k in range(60) if 10 * k < CLIP2[1] and CLIP2[0] < 10 * k + 10]
        kind = pair_id % 3
        evidence: dict[str, Any] = ({"chunks": [], "frames": []} if kind == 0 else
                                    {"chunks": cited, "frames": [[v1, 5.0]]} if kind == 1 else
                                    {"chunks": cited, "frames": [[v1, 40.0], [v2, 10.0]]})
        con.execute("UPDATE judgment SET evidence = ?, outcome = ? WHERE pair_id = ?",
                    (json.dumps(evidence), "verdict" if verdict else "no_verdict", pair_id))
        expected[pair_id] = NO_VERDICT if score == 0.5 else (NOT_RETRIEVED, NOT_SAMPLED, SERVED_WRONG)[kind]
    con.commit()
    con.close()
    assert len(expected) > LIMIT
    return root, expected


def test_attribution_over_more_losses_than_the_variable_limit(store: tuple[Path, dict[int, str]]) -> None:
    root, expected = store
    engine = open_store(load_settings(root))
    _limited(engine)
    got = attribute(engine, 1, seed=0)
    assert got.judged == ITEMS * 10
    want = {c: sum(1 for v in expected.values() if v == c) for c in got.counts}
    assert got.counts == want and got.counts[UNCITED] == 0
    assert all(got.counts[c] > 0 for c in (NOT_RETRIEVED, NOT_SAMPLED, SERVED_WRONG, NO_VERDICT))
    for category, examples in got.examples.items():
        for ex in examples:
            assert expected[ex["pair_id"]] == category
            if category != NO_VERDICT:  # cited chunks: 30–70 s is chunks 3..6, 0–20 s chunks 0..1
                assert [len(c) for c in ex["cited_chunks"]] == [4, 2]


def test_benchmark_rows_and_version_1_over_the_variable_limit(store: tuple[Path, dict[int, str]]) -> None:
    root, _ = store
    engine = open_store(load_settings(root))
    _limited(engine)
    with transaction(engine) as s:
        bench = Benchmark.model_validate(s.get(Benchmark, 1).model_dump())  # type: ignore[union-attr]
    rows = benchmark_rows(engine, bench)
    assert len(rows) == ITEMS * 10
    assert all([seg["clip"] for seg in r["segments"]] == [1, 2] for r in rows)
    assert all(r["gold_answer"].startswith("first (clip1") for r in rows)
    ensure_every(engine)  # what leaderboard does first: version 1 of a benchmark drawn before versions
    with transaction(engine) as s:
        version = s.get(BenchmarkVersion, 1)
        assert version is not None and version.pairs == ITEMS * 10


def test_export_statistics_and_annotations_over_the_variable_limit(store: tuple[Path, dict[int, str]]) -> None:
    from playlisteval.select.annotations import annotation_rows
    from playlisteval.select.stats import benchmark_stats

    root, _ = store
    engine = open_store(load_settings(root))
    _limited(engine)
    st = benchmark_stats(engine, 1)
    assert st.pairs == ITEMS * 10 and st.sampled_after == ITEMS
    assert st.gold_words.mean > 0 and st.question_words.mean == 5  # "question {i} about the clips?"
    with transaction(engine) as s:
        bench = Benchmark.model_validate(s.get(Benchmark, 1).model_dump())  # type: ignore[union-attr]
    rows = annotation_rows(engine, bench)
    assert len(rows) == ITEMS


def test_select_pairs_and_pending_gate_over_the_variable_limit(store: tuple[Path, dict[int, str]],
                                                               tmp_path: Path) -> None:
    """`select` at 100k items: the missing pairs made and the gate's pending pairs found for every item."""
    from playlisteval.benchmark.pairs import make_pairs
    from playlisteval.select.difficulty import pending_pairs

    root = tmp_path / "copy"  # pairs deleted below: the other tests' store stays as it was
    shutil.copytree(store[0], root)
    engine = open_store(load_settings(root))
    _limited(engine)
    items = list(range(1, ITEMS + 1))
    assert make_pairs(engine, items) == 0  # every item has its 10 pairs (bench/report_store.py)
    con = sqlite3.connect(root / "playlisteval.db")
    con.execute("DELETE FROM benchmark_pair WHERE pair_id IN (SELECT id FROM pair WHERE item_id = 7 AND gap = 4)")
    con.execute("DELETE FROM judgment WHERE pair_id IN (SELECT id FROM pair WHERE item_id = 7 AND gap = 4)")
    con.execute("DELETE FROM pair WHERE item_id = 7 AND gap = 4")  # the 5 > 1 pair
    con.execute("UPDATE pair SET kept = NULL WHERE item_id IN (3, 1001)")
    con.commit()
    con.close()
    assert make_pairs(engine, items) == 1
    pending = pending_pairs(engine, items)
    assert set(pending) == {3, 7, 1001} and len(pending[3]) == 10 and len(pending[7]) == 1
    assert pending[3] == sorted(pending[3])
