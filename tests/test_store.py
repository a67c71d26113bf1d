from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text

from playlisteval.store import items, make_engine, migrate, transaction
from playlisteval.store.migrations import MIGRATIONS, applied
from playlisteval.store.states import Event, Limits, State
from playlisteval.store.tables import Item, ItemEvent
from tests.helpers import project, seeded_store


def test_sqlite_uses_wal_and_busy_timeout(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/s.db", busy_timeout_s=12)
    migrate(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 12000


def test_migrations_are_recorded_and_an_old_store_upgrades_in_place(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/old.db")
    assert migrate(engine) == [name for name, _ in MIGRATIONS]
    assert migrate(engine) == []
    # make it look like a store from before 0002: no `claims` column, migration not recorded
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE item DROP COLUMN claims")
        conn.exec_driver_sql("DELETE FROM schema_migration WHERE name = '0002_item_claims'")
    assert "claims" not in {c["name"] for c in inspect(engine).get_columns("item")}
    assert migrate(engine) == ["0002_item_claims"]
    assert "claims" in {c["name"] for c in inspect(engine).get_columns("item")}
    assert "0002_item_claims" in applied(engine)


def _claim_commit_cycle(engine) -> None:  # type: ignore[no-untyped-def]
    created = items.create_items(engine)
    assert len(created) == 2 and items.create_items(engine) == []  # incremental
    item_id = created[0]
    first = items.claim(engine, item_id, State.PENDING, "w1", lease_s=60)
    assert first is not None
    assert items.claim(engine, item_id, State.PENDING, "w2", lease_s=60) is None  # leased
    assert items.claim(engine, item_id, State.QA_GENERATED, "w2", lease_s=60) is None  # wrong state
    assert items.commit(engine, first, Event.GENERATED, Limits()) is State.QA_GENERATED
    # a duplicate delivery of the same step finds the item moved on: nothing changes
    assert items.commit(engine, first, Event.GENERATED, Limits()) is None
    assert items.claim(engine, item_id, State.PENDING, "w1", lease_s=60) is None
    with transaction(engine) as s:
        item = s.get(Item, item_id)
        assert item is not None and (item.state, item.version, item.phase1_attempts) == ("qa_generated", 1, 1)
        assert len(s.exec(text("SELECT * FROM item_event WHERE item_id = :i"), params={"i": item_id}).all()) == 1
    # an expired lease can be taken over; the old holder's commit is then refused
    stale = items.claim(engine, item_id, State.QA_GENERATED, "w1", lease_s=-1)
    assert stale is not None
    fresh = items.claim(engine, item_id, State.QA_GENERATED, "w2", lease_s=60)
    assert fresh is not None and fresh.claims == 2
    assert items.commit(engine, stale, Event.PASSED, Limits()) is None
    assert items.commit(engine, fresh, Event.PASSED, Limits()) is State.GATED
    assert ItemEvent.__tablename__ == "item_event"


def test_claims_and_commits_are_compare_and_set_on_sqlite(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 2)
    _claim_commit_cycle(engine)




def test_the_same_code_runs_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    settings = project(tmp_path, store__url=pg_url)
    engine = seeded_store(settings, 2)
    assert engine.dialect.name == "postgresql"
    assert "0001_initial" in applied(engine)
    _claim_commit_cycle(engine)


def test_a_video_lease_expiry_keeps_its_seconds_on_postgresql(pg_url: str) -> None:
    """REAL is float4 on PostgreSQL: a Unix time stored there lost up to two minutes."""
    from sqlalchemy import text as sql

    from playlisteval.store import make_engine
    from playlisteval.store.migrations import migrate

    engine = make_engine(pg_url)
    migrate(engine)
    query = sql("SELECT data_type FROM information_schema.columns "
                "WHERE table_name = 'video' AND column_name = 'lease_expires'")
    with engine.begin() as conn:  # a store made before 0023: 0021 added the column as REAL
        conn.execute(sql("ALTER TABLE video ALTER COLUMN lease_expires TYPE REAL"))
        conn.execute(sql("DELETE FROM schema_migration WHERE name = '0023_video_lease_expires_double'"))
        assert conn.execute(query).scalar() == "real"
    assert "0023_video_lease_expires_double" in migrate(engine)
    with engine.begin() as conn:
        assert conn.execute(query).scalar() == "double precision"
