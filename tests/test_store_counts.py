"""The store's running counts (store/counts.py, issue 26): after any mix of inserts, moves and deletes —
through the ORM, the step loop's Core statements or raw SQL — every counter equals the scan it replaces,
on SQLite and PostgreSQL; an older store's counts are backfilled by the migration."""

from __future__ import annotations

import random
from collections import Counter as Tally
from pathlib import Path

from sqlalchemy import insert, text
from sqlalchemy.engine import Engine

from playlisteval.commands.funnel import fault_kind, reason_kind
from playlisteval.store import make_engine, migrate, transaction
from playlisteval.store.counts import by_key
from playlisteval.store.tables import Domain, GateResult, Item, ModelCall, Playlist, Segment, Video

STATES = ("pending", "generating", "verifying", "accepted", "failed")
REASONS = ("too short: 3 words", "no citation", "", "checker reply unusable: D3_first: ValueError: x",
           "checker reply unusable: : odd", "grounding: clip1: off by 5 s")


def _parents(engine: Engine) -> None:
    """A domain, a video and 200 segments: the rows seeds refer to (foreign keys hold on both dialects)."""
    with transaction(engine) as s:
        for parent in (Domain(id=1, name="Education"), Playlist(id=1, domain_id=1, name="P1"),
                       Video(id=1, playlist_id=1, path="/v.mp4", title="v", position=0, duration=60.0)):
            s.add(parent)
            s.flush()
        for k in range(1, 201):
            s.add(Segment(id=k, video_id=1, idx=k, embedder="minilm", start=0.0, end=60.0, first_chunk=0,
                          last_chunk=1, vector=b"\0" * 16))


def _random_store(engine: Engine, rng: random.Random, n: int, first: int) -> None:
    """Seeds, items, gate results and ledger rows written, moved and deleted at random, by raw SQL. An item
    comes with a seed of its own; gate results belong to item ``first`` (never deleted)."""
    with engine.begin() as conn:
        ids = {"seed": [], "item": [], "gate_result": [], "model_call": []}  # type: dict[str, list[int]]
        next_id = {t: first + 10_000 * k for k, t in enumerate(ids)}
        free_seeds: list[int] = []

        def add_seed() -> int:
            i = new_id("seed")
            conn.execute(text("INSERT INTO seed (id, domain_id, segment1_id, segment2_id, similarity) "
                              "VALUES (:i, 1, :a, :b, 0.5)"), {"i": i, "a": 1 + i % 200, "b": 1 + (i // 200) % 200})
            return i

        def new_id(table: str) -> int:
            next_id[table] += rng.randrange(1, 5)  # ids with gaps, over every shard
            ids[table].append(next_id[table])
            return next_id[table]

        for _ in range(n):
            table = rng.choice(list(ids))
            op = rng.random()
            if not ids["item"]:
                table, op = "item", 0.0
            if op < 0.55 or (table != "item" and not ids[table]) or len(ids[table]) < 2:
                if table == "seed":
                    free_seeds.append(add_seed())
                elif table == "item":
                    conn.execute(insert(Item.__table__).values(  # type: ignore[attr-defined]
                        id=new_id("item"), seed_id=add_seed(), state=rng.choice(STATES),
                        phase1_attempts=rng.randrange(3), phase2_attempts=rng.randrange(3)))
                elif table == "gate_result":
                    conn.execute(insert(GateResult.__table__).values(  # type: ignore[attr-defined]
                        id=new_id("gate_result"), item_id=ids["item"][0], phase=1, attempt=1,
                        gate=rng.choice(("C1", "D3")), verdict=rng.choice(("pass", "reject", "fault")),
                        reason=rng.choice(REASONS)))
                else:
                    conn.execute(insert(ModelCall.__table__).values(  # type: ignore[attr-defined]
                        id=new_id("model_call"), request_hash="h", role=rng.choice(("B", "G")),
                        provider=rng.choice(("sim", "gemini")),
                        model=rng.choice("xy"), purpose=rng.choice(("build", "eval")), status="ok",
                        cache_hit=rng.random() < 0.3, input_tokens=rng.randrange(100), output_tokens=7,
                        thinking_tokens=1))
            elif op < 0.85 and table != "seed":
                row = rng.choice(ids[table])
                change = {"item": "state = :a, phase1_attempts = phase1_attempts + 1",
                          "gate_result": "verdict = :a, reason = :r",
                          "model_call": "cache_hit = NOT cache_hit, provider = :a, input_tokens = 5, role = :r"}[table]
                value = {"item": rng.choice(STATES), "gate_result": rng.choice(("pass", "reject", "fault")),
                         "model_call": rng.choice(("sim", "openai"))}[table]
                conn.execute(text(f"UPDATE {table} SET {change} WHERE id = :i"),
                             {"a": value, "r": rng.choice(REASONS), "i": row})
            elif table == "seed":
                if free_seeds:
                    row = free_seeds.pop(rng.randrange(len(free_seeds)))
                    conn.execute(text("DELETE FROM seed WHERE id = :i"), {"i": row})
            else:  # never the first item: the gate results refer to it
                row = ids[table].pop(rng.randrange(1 if table == "item" else 0, len(ids[table])))
                conn.execute(text(f"DELETE FROM {table} WHERE id = :i"), {"i": row})


def _scanned(engine: Engine) -> dict[str, dict[str, int]]:
    """What each counter stands for, computed the old way: scans, and the funnel's kinds in Python."""
    with engine.connect() as conn:
        q = lambda sql: conn.execute(text(sql)).all()  # noqa: E731
        out: dict[str, dict[str, int]] = {
            "item_state": dict(q("SELECT state, COUNT(*) FROM item GROUP BY state")),
            "item_attempts": dict(zip(("phase1", "phase2"), q(
                "SELECT SUM(phase1_attempts), SUM(phase2_attempts) FROM item")[0], strict=True)),
            "calls": dict(q("SELECT purpose, COUNT(*) FROM model_call GROUP BY purpose")),
            "call_cache_hits": dict(q("SELECT purpose, SUM(CASE WHEN cache_hit THEN 1 ELSE 0 END) FROM model_call "
                                      "GROUP BY purpose")),
            "call_tokens": dict(q("SELECT purpose, SUM(input_tokens + output_tokens + thinking_tokens) "
                                  "FROM model_call GROUP BY purpose")),
            "role_model": dict(q("SELECT role || ' ' || provider || ' ' || model, COUNT(*) FROM model_call "
                                 "GROUP BY role || ' ' || provider || ' ' || model")),
            "sim_model": dict(q("SELECT purpose || ' ' || model, COUNT(*) FROM model_call WHERE provider = 'sim' "
                                "GROUP BY purpose || ' ' || model")),
            "gate_verdict": dict(q("SELECT gate || ' ' || verdict, COUNT(*) FROM gate_result "
                                   "GROUP BY gate || ' ' || verdict")),
            "seeds": {"": int(q("SELECT COUNT(*) FROM seed")[0][0])},
        }
        rows = q("SELECT gate, verdict, reason FROM gate_result WHERE verdict IN ('reject', 'fault')")
    out["gate_reject_kind"] = dict(Tally(f"{g} {reason_kind(r)}" for g, v, r in rows if v == "reject"))
    out["gate_fault_kind"] = dict(Tally(f"{g} {fault_kind(r)}" for g, v, r in rows if v == "fault"))
    return {kind: {str(k): int(n or 0) for k, n in keys.items() if int(n or 0)} for kind, keys in out.items()}


def _check(engine: Engine) -> None:
    expected = _scanned(engine)
    with engine.connect() as conn:
        got = {kind: by_key(conn, kind) for kind in expected}
    assert got == expected
    assert expected["gate_reject_kind"] and expected["gate_fault_kind"] and expected["item_state"]


def _counts_follow_the_store(engine: Engine) -> None:
    migrate(engine)
    _parents(engine)
    _random_store(engine, random.Random(3), 400, first=1)
    _check(engine)
    # an older store: the counts gone and the migration not recorded; it backfills them
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM store_count")
        conn.exec_driver_sql("DELETE FROM schema_migration WHERE name IN ('2600_store_count', "
                             "'2603_store_count_role_model')")
    assert migrate(engine) == ["2600_store_count", "2603_store_count_role_model"]
    _check(engine)
    _random_store(engine, random.Random(4), 200, first=5_000)
    _check(engine)


def test_the_counts_follow_every_change_sqlite(tmp_path: Path) -> None:
    _counts_follow_the_store(make_engine(f"sqlite:///{tmp_path}/s.db"))


def test_the_counts_follow_every_change_postgres(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        _counts_follow_the_store(engine)
    finally:
        engine.dispose()
