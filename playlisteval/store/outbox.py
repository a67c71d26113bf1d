"""The outbox of item messages (issue 10): a commit and the message it calls for cannot come apart.

A step's commit that moves an item into a working state writes the item's next message here, in the same
transaction (``put``, called from ``items.commit``). The worker then sends the message and deletes the row
(``sent``). If the send fails — Redis down or stalled, the worker killed between commit and send — the row
stays, and once it is older than the grace period a sweeper takes it (``take``: compare-and-set, so of
many sweepers one sends it) and sends it. A message sent twice is harmless: a step claims its item by
compare-and-set, and a duplicate finds the item claimed or moved on.

A row is per item, not per message: an item waits for one step at a time, and a later commit's row
replaces an earlier one's.
"""

from __future__ import annotations

from sqlalchemy import Table, bindparam, delete, insert, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from playlisteval.store import kept
from playlisteval.store.direct import Direct
from playlisteval.store.engine import transaction
from playlisteval.store.states import State
from playlisteval.store.tables import ItemOutbox, now

_OUTBOX: Table = ItemOutbox.__table__  # type: ignore[attr-defined]
#: the statements, built once (issue 13): no ORM unit of work in a step's commit or after its send; on the
#: driver's cursor (store/direct.py): one of each per transition (issue 26)
_UPSERT: dict[str, Direct] = {}
for _dialect, _insert in (("sqlite", sqlite_insert), ("postgresql", postgresql_insert)):
    _stmt = _insert(_OUTBOX)
    _UPSERT[_dialect] = Direct(_stmt.on_conflict_do_update(
        index_elements=["item_id"], set_={"state": _stmt.excluded.state, "created_at": _stmt.excluded.created_at}))
_SENT = Direct(delete(_OUTBOX).where(_OUTBOX.c.item_id == bindparam("item_id"),
                                     _OUTBOX.c.state == bindparam("state")))


def put(s: Session | Connection, item_id: int, state: State) -> None:
    """Record, in the caller's transaction (the commit's: a session or its connection), that ``item_id``
    needs a message for ``state``: one upsert (a later commit's row replaces an earlier one's)."""
    conn = s if isinstance(s, Connection) else s.connection()
    values = {"item_id": item_id, "state": state.value, "created_at": now()}
    upsert = _UPSERT.get(conn.dialect.name)
    if upsert is None:  # another database: replace the row in two statements
        conn.execute(delete(_OUTBOX).where(_OUTBOX.c.item_id == item_id))
        conn.execute(insert(_OUTBOX), values)
        return
    upsert.count(conn, values)


def sent(engine: Engine, item_id: int, state: State) -> None:
    """The message for ``state`` is with the broker: forget it (a row a later commit wrote is kept)."""
    with kept.begin(engine) as conn:
        _SENT.count(conn, {"item_id": item_id, "state": state.value})


def due(engine: Engine, grace_s: float) -> list[tuple[int, State, float]]:
    """(item, state, written at) of the messages still unsent ``grace_s`` after their commit, oldest first."""
    with transaction(engine) as s:
        rows = s.exec(select(ItemOutbox.item_id, ItemOutbox.state, ItemOutbox.created_at)
                      .where(col(ItemOutbox.created_at) < now() - grace_s)
                      .order_by(col(ItemOutbox.created_at), col(ItemOutbox.item_id))).all()
    return [(int(i), State(st), float(t)) for i, st, t in rows]


def take(engine: Engine, item_id: int, written_at: float) -> bool:
    """Take a due row for sending (compare-and-set on its time, which restarts its grace): True for one
    sweeper only. If the send then fails, the row is due again a grace period later."""
    with transaction(engine) as s:
        result = s.execute(update(ItemOutbox).where(col(ItemOutbox.item_id) == item_id,
                                                    col(ItemOutbox.created_at) == written_at)
                           .values(created_at=now()))
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]


def pending(engine: Engine) -> dict[int, State]:
    """Every unsent message: item → state (status, tests)."""
    with transaction(engine) as s:
        rows = s.exec(select(ItemOutbox.item_id, ItemOutbox.state)).all()
    return {int(i): State(st) for i, st in rows}
