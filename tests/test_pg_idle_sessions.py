"""A PostgreSQL session that goes silent inside a transaction is ended by the server (``[store]
idle_in_transaction_s``, store/engine.py): a worker cut off while it held the budget's advisory lock would
otherwise stall every other worker's reservation until the server's TCP gave up on it (a netns fault run
waited past its 37 s for that). Here a session takes the lock and then says nothing, as a cut-off host
does; the other takes the lock once the server ends the first, and without the setting it cannot."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError

from playlisteval.config import Settings
from playlisteval.errors import as_infrastructure
from playlisteval.store import make_engine, open_store

LOCK = 4_343_001  # an advisory lock key of this test's own


def _holder_goes_silent(pg_url: str, idle_s: float) -> tuple[float, object]:
    """The seconds another session waited for the lock a silent holder took, and the holder's connection."""
    holder = make_engine(pg_url, idle_in_transaction_s=idle_s).connect()
    holder.begin()
    holder.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK})  # then silence: the host is gone
    other = make_engine(pg_url).connect()
    started = time.monotonic()
    try:
        with other.begin():
            other.execute(text("SET LOCAL lock_timeout = '6s'"))  # a test that fails, not one that hangs
            other.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK})
    except BaseException:
        holder.close()
        raise
    finally:
        other.close()
    return time.monotonic() - started, holder


def test_a_silent_holder_is_ended_and_its_lock_freed(pg_url: str) -> None:
    waited, holder = _holder_goes_silent(pg_url, idle_s=1.0)
    assert waited < 5.0
    with pytest.raises(DBAPIError, match="idle-in-transaction") as ended:  # it finds out when it speaks again
        holder.execute(text("SELECT 1"))  # type: ignore[attr-defined]
    assert as_infrastructure(ended.value) is not None  # the store's doing, not the item's: tried again
    holder.invalidate()  # type: ignore[attr-defined]


def test_without_the_timeout_the_lock_stays_held(pg_url: str) -> None:
    with pytest.raises(OperationalError, match="lock timeout"):
        _holder_goes_silent(pg_url, idle_s=0.0)


def test_the_store_setting_reaches_the_sessions(pg_url: str) -> None:
    settings = Settings.model_validate({"store": {"url": pg_url, "idle_in_transaction_s": 42}})
    with open_store(settings).connect() as conn:
        assert conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar() == "42s"
    default = Settings.model_validate({"store": {"url": pg_url}})
    assert default.store.idle_in_transaction_s == 300
