"""Statements on the driver's cursor (store/direct.py, issue 26): the same rows, values, errors and redaction as
through SQLAlchemy's ``Connection.execute``, on SQLite and PostgreSQL; what it cannot do is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy.exc
from sqlalchemy import JSON, Column, Float, Integer, MetaData, String, Table, bindparam, insert, select, text, update
from sqlalchemy.engine import Engine

from playlisteval.logs.redaction import MASK
from playlisteval.models import ledger
from playlisteval.store import make_engine
from playlisteval.store.direct import Direct
from playlisteval.store.tables import Domain, Playlist, ResponseCache, Video
from tests.test_redaction import PLAIN_KEY

_CACHE = ResponseCache.__table__  # type: ignore[attr-defined]
_CACHED = select(_CACHE.c.response, _CACHE.c.created_at).where(_CACHE.c.request_hash == bindparam("key"))


@pytest.fixture
def engine(store_engine: Engine) -> Engine:
    return store_engine  # conftest: a migrated store, on SQLite and on PostgreSQL


def test_rows_and_values_are_those_sqlalchemy_gives(engine: Engine) -> None:
    response = {"text": "é ✓", "parsed": {"order": [4, 3, 2, 1]}, "usage": {"input_tokens": 7}}
    with engine.begin() as conn:
        ledger.keep_response(conn, "k1", "sim", "m", response)  # JSON bound by its type's processor
        ledger.keep_response(conn, "k1", "sim", "other", {"text": "later"})  # on conflict: the first kept
        direct = Direct(_CACHED).rows(conn, {"key": "k1"})
        through_sqlalchemy = [tuple(r) for r in conn.execute(_CACHED, {"key": "k1"})]
        assert direct == through_sqlalchemy and direct[0][0] == response and isinstance(direct[0][1], float)
        assert Direct(_CACHED).first(conn, {"key": "absent"}) is None
        call = ledger.add_call(conn, request_hash="k1", role="B", provider="sim", model="m", purpose="build",
                               status="in_flight", estimated_usd=0.5)
        again = ledger.add_call(conn, request_hash="k1", role="B", provider="sim", model="m", purpose="build",
                                status="in_flight", estimated_usd=0.5)
        assert again == call + 1  # RETURNING: the ids the database gave
        assert ledger.usd_of(conn, call) == 0.0
        assert ledger.keys_between(conn, "k0", "k2") == {"k1"}


def test_an_error_text_is_redacted_on_the_way_in(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
    with engine.begin() as conn:
        call = ledger.add_call(conn, request_hash="k", role="B", provider="sim", model="m", purpose="build",
                               status="in_flight")
        from playlisteval.models.request import Usage

        ledger.finish(conn, call, "error", Usage(), 0.0, 0.0, error=f"401: key {PLAIN_KEY} refused")
        stored = conn.execute(text("SELECT error FROM model_call WHERE id = :i"), {"i": call}).scalar()
    assert stored == f"401: key {MASK} refused"


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(engine: Engine) -> None:
    add = Direct(insert(_CACHE))
    values = {"request_hash": "dup", "provider": "p", "model": "m", "response": {}, "created_at": 1.0}
    with engine.begin() as conn:
        add.count(conn, values)
    with pytest.raises(sqlalchemy.exc.IntegrityError), engine.begin() as conn:
        add.count(conn, values)
    with engine.begin() as conn:  # the failed transaction rolled back; the store goes on
        assert Direct(_CACHED).first(conn, {"key": "dup"}) == ({}, 1.0)


def test_a_count_is_the_rows_touched_and_a_literal_in_the_statement_is_bound(tmp_path: Path) -> None:
    metadata = MetaData()
    t = Table("t", metadata, Column("id", Integer, primary_key=True), Column("state", String),
              Column("x", Float))
    engine = make_engine(f"sqlite:///{tmp_path}/t.db")
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(t), [{"id": i, "state": "a", "x": 0.0} for i in range(5)])
        move = Direct(update(t).where(t.c.id < bindparam("below"), t.c.state == "a").values(state="b"))
        assert move.count(conn, {"below": 3}) == 3 and move.count(conn, {"below": 3}) == 0
        assert conn.execute(text("SELECT count(*) FROM t WHERE state = 'b'")).scalar() == 3


def test_what_it_cannot_do_is_refused(tmp_path: Path) -> None:
    metadata = MetaData()
    t = Table("t", metadata, Column("id", Integer, primary_key=True), Column("at", Float, default=lambda: 1.0),
              Column("name", String))
    engine = make_engine(f"sqlite:///{tmp_path}/t.db")
    metadata.create_all(engine)
    with engine.begin() as conn:
        with pytest.raises(ValueError, match="Python-side defaults"):
            Direct(insert(t)).count(conn, {"name": "a"})  # `at` would be left NULL, not its default
        assert Direct(insert(t)).count(conn, {"name": "a", "at": 2.0}) == 1
        with pytest.raises(ValueError, match="expand"):
            Direct(select(t.c.id).where(t.c.name.in_(bindparam("names", expanding=True)))).rows(conn, {"names": ["a"]})
        with pytest.raises(sqlalchemy.exc.InvalidRequestError, match="bind parameter .name."):  # left out
            Direct(select(t.c.id).where(t.c.name == bindparam("name"))).rows(conn, {})


def test_a_text_statement_decodes_only_the_columns_it_names(engine: Engine) -> None:
    with engine.begin() as conn:
        ledger.keep_response(conn, "k", "sim", "m", {"a": [1, 2]})
        statement = text("SELECT request_hash, response, provider FROM response_cache WHERE request_hash = :k")
        assert Direct(statement.columns(response=JSON)).rows(conn, {"k": "k"}) == [("k", {"a": [1, 2]}, "sim")]


def test_a_row_got_by_its_key_holds_what_the_orm_reads(engine: Engine) -> None:
    from playlisteval.store import direct as direct_module
    from playlisteval.store import transaction

    with transaction(engine) as s:
        s.add(Domain(name="d"))
        s.flush()
        playlist = Playlist(domain_id=1, name="p", source="s")
        s.add(playlist)
        s.flush()
        video = Video(playlist_id=playlist.id or 0, path="/v.mp4", title="v", duration=12.5, index_report='{"r": 1}')
        s.add(video)
        s.flush()
        key = video.id
    with transaction(engine) as s:
        orm = s.get(Video, key)
        assert orm is not None
        expected = orm.model_dump()
    with engine.connect() as conn:
        got = direct_module.get(conn, Video, key)
        assert got is not None and got.model_dump() == expected and got.duration == 12.5
        assert direct_module.get(conn, Video, 999) is None
