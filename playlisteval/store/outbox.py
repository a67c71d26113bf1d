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

from sqlalchemy import delete, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.state import State
from playlisteval.store.engine import transaction
from playlisteval.store.tables import ItemOutbox, now


def put(s: Session, item_id: int, state: State) -> None:
    """Record, in the caller's transaction (the commit's), that ``item_id`` needs a message for ``state``:
    one upsert (a later commit's row replaces an earlier one's)."""
    row = ItemOutbox(item_id=item_id, state=state.value, created_at=now())
    dialect = s.get_bind().dialect.name
    if dialect not in ("sqlite", "postgresql"):
        s.merge(row)
        return
    insert = sqlite_insert if dialect == "sqlite" else postgresql_insert
    stmt = insert(ItemOutbox).values(item_id=row.item_id, state=row.state, created_at=row.created_at)
    s.execute(stmt.on_conflict_do_update(index_elements=["item_id"],
                                         set_={"state": stmt.excluded.state, "created_at": stmt.excluded.created_at}))


def sent(engine: Engine, item_id: int, state: State) -> None:
    """The message for ``state`` is with the broker: forget it (a row a later commit wrote is kept)."""
    with transaction(engine) as s:
        s.execute(delete(ItemOutbox).where(col(ItemOutbox.item_id) == item_id, col(ItemOutbox.state) == state.value))


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
