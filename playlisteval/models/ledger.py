"""The runner's ledger and cache statements, as SQL statements rather than ORM objects (issue 13).

Every model call writes a ledger row, looks up and fills the response cache and keeps its prompt; through
the ORM each of those cost a unit-of-work flush or an identity-map get (~0.5 ms of CPU apiece, a third of
a step's CPU with a zero-latency model). The same rows and the same guarantees, one statement each, in
the caller's transaction (the runner's two per call: look-up + reservation, close + cache).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Table, and_, bindparam, case, insert, or_, select, update
from sqlalchemy.engine import Connection

from playlisteval.models.request import Usage
from playlisteval.store.direct import Direct
from playlisteval.store.tables import ModelCall, ModelPrompt, ResponseCache, now

#: a ledger row's columns with the defaults the ORM model would give them (no SQL defaults exist)
_LEDGER_DEFAULTS: dict[str, Any] = {
    name: field.default for name, field in ModelCall.model_fields.items()
    if name not in ("id", "created_at") and field.default_factory is None and repr(field.default) != "PydanticUndefined"
}
# the statements, built once on the tables themselves (no ORM unit of work); values travel as parameters; each
# runs on the driver's cursor (store/direct.py): a call runs eight of them (issue 26)
_CALL: Table = ModelCall.__table__  # type: ignore[attr-defined]
_CACHE: Table = ResponseCache.__table__  # type: ignore[attr-defined]
_PROMPT: Table = ModelPrompt.__table__  # type: ignore[attr-defined]
_ADD_CALL = Direct(insert(_CALL).returning(_CALL.c.id))
_CACHED = Direct(select(_CACHE.c.response).where(_CACHE.c.request_hash == bindparam("key")))
_IS_CACHED = Direct(select(_CACHE.c.request_hash).where(_CACHE.c.request_hash == bindparam("key")))
_USD = Direct(select(_CALL.c.usd).where(_CALL.c.id == bindparam("call_id")))
_INTERRUPT = Direct(update(_CALL).where(_CALL.c.request_hash == bindparam("key"), _CALL.c.status == "in_flight")
                    .values(status="interrupted", finished_at=bindparam("at")))
_WAS_CUT = _CALL.c.status == "interrupted"
_FINISH = Direct(update(_CALL).where(_CALL.c.id == bindparam("call_id")).values(
    status=case((_WAS_CUT, "interrupted"), else_=bindparam("new_status")),
    error=case((_WAS_CUT, bindparam("late_error")), else_=bindparam("new_error")),
    estimated_usd=case((_WAS_CUT, bindparam("cost")), else_=_CALL.c.estimated_usd),
    usd=bindparam("cost"), input_tokens=bindparam("input_tokens"), output_tokens=bindparam("output_tokens"),
    thinking_tokens=bindparam("thinking_tokens"), gpu_seconds=bindparam("gpu_seconds"),
    cached_input_tokens=bindparam("cached_input_tokens"), latency_s=bindparam("latency"),
    finished_at=bindparam("at"),
).returning(_CALL.c.usd))
_KEYS_BETWEEN = Direct(select(_CACHE.c.request_hash).where(_CACHE.c.request_hash > bindparam("low"),
                                                           _CACHE.c.request_hash < bindparam("high")))
# a request's cached answer and the keys of its repaired tries (``<key>:try<n>``), in one statement
_LOOKUP = Direct(select(_CACHE.c.request_hash, _CACHE.c.response).where(or_(
    _CACHE.c.request_hash == bindparam("key"),
    and_(_CACHE.c.request_hash > bindparam("low"), _CACHE.c.request_hash < bindparam("high")))))
_INSERT_NEW: dict[tuple[str, str], Direct] = {}


def _conn(s: Any) -> Connection:
    """The connection of ``s`` (a Connection, or a Session: its connection, inside its transaction)."""
    return s if isinstance(s, Connection) else s.connection()


def dialect(s: Any) -> str:
    return str(_conn(s).dialect.name)


def lookup(s: Any, key: str) -> tuple[dict[str, Any] | None, set[str]]:
    """The cached answer to ``key`` (None: not cached) and the cache keys of its repaired tries."""
    answer: dict[str, Any] | None = None
    tries: set[str] = set()
    for found, response in _LOOKUP.rows(_conn(s), {"key": key, "low": f"{key}:try", "high": f"{key}:tryz"}):
        if found == key:
            answer = response
        else:
            tries.add(str(found))
    return answer, tries


def keys_between(s: Any, low: str, high: str) -> set[str]:
    """The cache keys strictly between ``low`` and ``high`` (a request's repaired tries)."""
    return {str(k) for k, in _KEYS_BETWEEN.rows(_conn(s), {"low": low, "high": high})}


def add_call(s: Any, **values: Any) -> int:
    """Insert a ledger row (``ModelCall``'s defaults for what is not given); its id."""
    row = _ADD_CALL.first(_conn(s), {**_LEDGER_DEFAULTS, "created_at": now(), **values})
    assert row is not None  # an INSERT … RETURNING returns its row
    return int(row[0])


def cached_response(s: Any, key: str) -> dict[str, Any] | None:
    row = _CACHED.first(_conn(s), {"key": key})
    found: dict[str, Any] | None = None if row is None else row[0]
    return found


def is_cached(s: Any, key: str) -> bool:
    return _IS_CACHED.first(_conn(s), {"key": key}) is not None


def _insert_new(s: Any, table: Table, values: dict[str, Any]) -> None:
    """INSERT … ON CONFLICT DO NOTHING on the primary key: a row another worker wrote first is kept."""
    conn = _conn(s)
    dialect = conn.dialect.name
    direct = _INSERT_NEW.get((dialect, table.name))
    if direct is None:
        key = [c.name for c in table.primary_key.columns]
        # the dialects' insert forms load on a first write: a command that only reads (status) needs
        # neither, and PostgreSQL's dialect alone costs ~17 ms to import (issue 26)
        from sqlalchemy.dialects import postgresql, sqlite

        stmt: Any
        if dialect == "postgresql":
            stmt = postgresql.insert(table).on_conflict_do_nothing(index_elements=key)
        elif dialect == "sqlite":
            stmt = sqlite.insert(table).on_conflict_do_nothing(index_elements=key)
        else:  # another database: look, then insert
            column = table.c[key[0]]
            if conn.execute(select(column).where(column == values[key[0]])).first() is None:
                conn.execute(insert(table), values)
            return
        direct = _INSERT_NEW[(dialect, table.name)] = Direct(stmt)
    direct.count(conn, values)


def keep_prompt(s: Any, key: str, role: str, text: str) -> None:
    """What was asked, kept once per request hash (`show ITEM`)."""
    _insert_new(s, _PROMPT, {"request_hash": key, "role": role, "text": text, "created_at": now()})


def keep_response(s: Any, key: str, provider: str, model: str, response: dict[str, Any]) -> None:
    _insert_new(s, _CACHE, {"request_hash": key, "provider": provider, "model": model, "response": response,
                            "created_at": now()})


def mark_interrupted(s: Any, key: str) -> None:
    """An in-flight row of this very request belongs to a worker that died mid-call."""
    _INTERRUPT.count(_conn(s), {"key": key, "at": now()})


def usd_of(s: Any, call_id: int) -> float | None:
    row = _USD.first(_conn(s), {"call_id": call_id})
    return None if row is None or row[0] is None else float(row[0])


def finish(s: Any, call_id: int, status: str, usage: Usage, cost: float, started: float,
           error: str | None = None) -> float | None:
    """Close a ledger row with what the try cost; the row's USD (None: the row is gone). A row another
    worker marked interrupted (it took the step over) stays marked, with what the call cost: the call was
    paid twice, and the ledger says so."""
    late = f"finished after it was marked interrupted ({status})" + (f": {error}" if error else "")
    row = _FINISH.first(_conn(s), {
        "call_id": call_id, "new_status": status, "new_error": error, "late_error": late, "cost": cost,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "thinking_tokens": usage.thinking_tokens, "gpu_seconds": usage.gpu_seconds,
        "cached_input_tokens": usage.cached_input_tokens, "latency": time.monotonic() - started, "at": now(),
    })
    return None if row is None else float(row[0])
