"""Items in the store: creation, lease claims (compare-and-set) and step commits (DESIGN 1–2).

A claim is one UPDATE that succeeds only if the item is still in the expected state and nobody holds
an unexpired lease. A commit writes the stage's outputs and the next state in one transaction, and
only if the committing worker still holds the lease it claimed: a duplicate or late delivery changes
nothing. Every commit bumps ``version`` and appends an ``item_event`` row unique on (item, version).

Leases are short and renewed (``renew``) by the holder's heartbeat while its step runs, so a dead
holder's lease lapses soon; ``reclaim_dead`` ends at once a lease whose holder is known dead (a process
of this machine that is gone) or whose heartbeat stopped. ``stranded`` finds working items that nobody
holds and nothing touched for a while: their next message was lost (a Redis stall, an empty restart).
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, func, insert, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.store import identity, kept, outbox
from playlisteval.store.direct import Direct, Inserts
from playlisteval.store.engine import transaction
from playlisteval.store.states import TERMINAL, WORKING, Event, Limits, Progress, State, advance
from playlisteval.store.tables import Item, ItemEvent, Seed, now


@dataclass(slots=True)
class HeldItem:
    """The item as a step's writer sees it inside its commit: the two pointers it may move (stored with the
    move). Not the table class: building an ``Item`` (SQLAlchemy's instance state) for every commit was ~2 %
    of a step's CPU (issue 26)."""

    current_qa_id: int | None
    current_set_id: int | None


Writer = Callable[[Inserts, HeldItem], None]  # adds the step's rows; may set the item's current question/set


@dataclass(frozen=True)
class Claim:
    item_id: int
    state: State
    token: str
    progress: Progress
    claims: int


def progress_of(item: Item) -> Progress:
    return Progress(
        state=State(item.state),
        phase1_attempts=item.phase1_attempts,
        phase2_attempts=item.phase2_attempts,
        phase2_on_question=item.phase2_on_question,
        failed_from=State(item.failed_from) if item.failed_from else None,
    )


def _apply(item: Item, p: Progress) -> None:
    item.state = p.state.value
    item.phase1_attempts = p.phase1_attempts
    item.phase2_attempts = p.phase2_attempts
    item.phase2_on_question = p.phase2_on_question
    item.failed_from = p.failed_from.value if p.failed_from else None


def create_items(engine: Engine) -> list[int]:
    """An item for every seed that has none (new playlists are picked up incrementally)."""
    with transaction(engine) as s:
        have = select(Item.seed_id)
        seeds = s.exec(select(Seed.id).where(col(Seed.id).not_in(have)).order_by(col(Seed.id))).all()
        items = [Item(seed_id=seed_id) for seed_id in seeds if seed_id is not None]
        s.add_all(items)
        s.flush()
        return [i.id for i in items if i.id is not None]


_ITEM = Item.__table__  # type: ignore[attr-defined]
#: the claim, built once: compare-and-set on state and lease, and the progress it took, in one statement; on the
#: driver's cursor, as the commit's statements (store/direct.py, issue 26)
_CLAIM = Direct(update(_ITEM)
          .where(_ITEM.c.id == bindparam("item_id"), _ITEM.c.state == bindparam("in_state"),
                 or_(_ITEM.c.lease_expires.is_(None), _ITEM.c.lease_expires < bindparam("t")))
          .values(lease_owner=bindparam("token"), lease_expires=bindparam("until"), lease_renewed_at=bindparam("t"),
                  claims=_ITEM.c.claims + 1, updated_at=bindparam("t"))
          .returning(_ITEM.c.phase1_attempts, _ITEM.c.phase2_attempts, _ITEM.c.phase2_on_question,
                     _ITEM.c.failed_from, _ITEM.c.claims))


class _Tokens:
    """Lease tokens: this process's random part (48 bits, as a uuid4's first twelve hex digits were; new in a
    forked child) and a counter, so no two claims of a process share one and the claim reads no randomness
    from the kernel (``uuid4`` was ~1.5 % of a zero-latency step's CPU, issue 26)."""

    def __init__(self) -> None:
        self.renew()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.prefix, self.count = secrets.token_hex(6), itertools.count()  # count(): atomic under the GIL

    def next(self) -> str:
        return f"{self.prefix}{next(self.count):x}"


_TOKENS = _Tokens()


def claim(engine: Engine, item_id: int, state: State, owner: str, lease_s: float) -> Claim | None:
    """Take the item for one step, or return None when it moved on or someone else holds it. One
    ``UPDATE … RETURNING`` (SQLite ≥ 3.35, PostgreSQL): the compare-and-set and the read of what it took."""
    token = f"{owner}/{_TOKENS.next()}"
    t = now()
    with kept.begin(engine) as conn:
        row = _CLAIM.first(conn, {"item_id": item_id, "in_state": state.value, "t": t, "token": token,
                                         "until": t + lease_s})
    if row is None:
        return None
    p1, p2, on_question, failed_from, claims = row
    progress = Progress(state=state, phase1_attempts=p1, phase2_attempts=p2, phase2_on_question=on_question,
                        failed_from=State(failed_from) if failed_from else None)
    return Claim(item_id, state, token, progress, claims)


_EVENT = ItemEvent.__table__  # type: ignore[attr-defined]
#: the commit's statements, built once (issue 13: through the ORM, loading the item, flushing it and its event
#: and the outbox row's autoflush cost about a third of a step's CPU with a zero-latency model; issue 26: through
#: SQLAlchemy's per-statement path, the commit was still the step's largest share of it)
_HELD = Direct(sa_select(_ITEM.c.state, _ITEM.c.lease_owner, _ITEM.c.phase1_attempts, _ITEM.c.phase2_attempts,
                _ITEM.c.phase2_on_question, _ITEM.c.failed_from, _ITEM.c.version,
                _ITEM.c.current_qa_id, _ITEM.c.current_set_id)
         .where(_ITEM.c.id == bindparam("item_id")).with_for_update())
_MOVE = Direct(update(_ITEM).where(_ITEM.c.id == bindparam("item_id"))
         .values(state=bindparam("new_state"), phase1_attempts=bindparam("p1"), phase2_attempts=bindparam("p2"),
                 phase2_on_question=bindparam("on_question"), failed_from=bindparam("new_failed_from"),
                 current_qa_id=bindparam("qa_id"), current_set_id=bindparam("set_id"),
                 version=bindparam("new_version"), lease_owner=None, lease_expires=None, claims=0,
                 error=bindparam("new_error"), updated_at=bindparam("t")))
_ADD_EVENT = Direct(insert(_EVENT))


def commit(
    engine: Engine,
    c: Claim,
    event: Event,
    limits: Limits,
    write: Writer | None = None,
    *,
    error: str | None = None,
) -> State | None:
    """Write the step's outputs and move the item; None if the lease was lost (nothing written).

    One transaction on a plain connection: the item read under its lock (compare-and-set on state and lease
    token), the stage's rows inserted in that transaction (``write`` gets a ``direct.Inserts`` and the item
    as a ``HeldItem``: the pointers it sets on it are stored with the move), the move, its ``item_event`` row and,
    into a working state, its outbox row; every statement on the driver's cursor (store/direct.py)."""
    with kept.begin(engine) as conn:
        row = _HELD.first(conn, {"item_id": c.item_id})
        if row is None:
            return None
        state, lease_owner, p1, p2, on_question, failed_from, held_version, qa_id, set_id = row
        if state != c.state.value or lease_owner != c.token:
            return None
        before = Progress(state=State(state), phase1_attempts=p1, phase2_attempts=p2, phase2_on_question=on_question,
                          failed_from=State(failed_from) if failed_from else None)
        after = advance(before, event, limits)
        if write is not None:
            item = HeldItem(current_qa_id=qa_id, current_set_id=set_id)
            rows = Inserts(conn)  # in this transaction, on the driver's cursor (store/direct.py)
            write(rows, item)
            rows.flush()
            qa_id, set_id = item.current_qa_id, item.current_set_id
        t, version = now(), held_version + 1
        _MOVE.count(conn, {
            "item_id": c.item_id, "new_state": after.state.value, "p1": after.phase1_attempts,
            "p2": after.phase2_attempts, "on_question": after.phase2_on_question,
            "new_failed_from": after.failed_from.value if after.failed_from else None, "qa_id": qa_id,
            "set_id": set_id, "new_version": version, "new_error": error if after.state is State.FAILED else None,
            "t": t})
        _ADD_EVENT.count(conn, {"item_id": c.item_id, "version": version, "from_state": before.state.value,
                                       "event": event.value, "to_state": after.state.value,
                                       "worker": c.token.split("/")[0], "at": now()})
        if after.state in WORKING:  # its next message, committed with the move: sent after (store/outbox.py)
            outbox.put(conn, c.item_id, after.state)
        return after.state


def release(engine: Engine, c: Claim) -> None:
    """Give the lease back without moving the item (a transient failure or a paused budget)."""
    with transaction(engine) as s:
        s.execute(
            update(Item)
            .where(col(Item.id) == c.item_id, col(Item.lease_owner) == c.token)
            # a graceful release is not a worker death: it does not count towards poison
            .values(lease_owner=None, lease_expires=None, claims=Item.claims - 1, updated_at=now())
        )


def release_held(engine: Engine, held: dict[str, int]) -> list[int]:
    """Give back the leases ``held`` (token → item) by a worker that stops mid-step: one UPDATE, compare-and-set
    on the tokens (a lease taken over meanwhile is not ours to free); the items freed. Not counted as a
    death towards poison, as ``release``."""
    wanted = sorted(held)
    if not wanted:
        return []
    with transaction(engine) as s:
        mine = [int(i or 0) for i in s.exec(select(Item.id).where(col(Item.lease_owner).in_(wanted))).all()]
        s.execute(update(Item).where(col(Item.lease_owner).in_(wanted))
                  .values(lease_owner=None, lease_expires=None, claims=Item.claims - 1, updated_at=now()))
    return sorted(mine)


def renew(engine: Engine, tokens: Iterable[str], lease_s: float) -> set[str]:
    """Extend the leases held under ``tokens`` (a holder's heartbeat); the tokens still held."""
    wanted = sorted(set(tokens))
    if not wanted:
        return set()
    t = now()
    with transaction(engine) as s:
        s.execute(update(Item).where(col(Item.lease_owner).in_(wanted))
                  .values(lease_expires=t + lease_s, lease_renewed_at=t))
        held = s.exec(select(Item.lease_owner).where(col(Item.lease_owner).in_(wanted))).all()
    return {str(h) for h in held}


def owner_is_gone(token: str) -> bool:
    """Whether the process named in a lease token (``host:pid:place.nonce/…``) is known dead: only a process of
    this PID namespace and boot can be checked (store/identity.py); any other holder is judged by its heartbeat."""
    return identity.is_gone(token)


def reclaim_dead(engine: Engine, stale_s: float | None = None) -> list[int]:
    """End the unexpired leases of working items whose holder is dead: gone from this machine, or (with
    ``stale_s``) silent — no renewal — for that long. Compare-and-set on the holder and its last renewal:
    a lease renewed meanwhile is kept."""
    t = now()
    with transaction(engine) as s:
        rows = s.exec(select(col(Item.id), col(Item.lease_owner), col(Item.lease_renewed_at)).where(
            col(Item.state).in_([st.value for st in WORKING]), col(Item.lease_owner).is_not(None),
            col(Item.lease_expires) >= t).order_by(col(Item.id))).all()
    reclaimed: list[int] = []
    for item_id, owner, renewed in rows:
        silent = stale_s is not None and float(renewed or 0) < t - stale_s
        if not (silent or owner_is_gone(str(owner))):
            continue
        with transaction(engine) as s:
            result = s.execute(update(Item).where(col(Item.id) == item_id, col(Item.lease_owner) == owner,
                                                  col(Item.lease_renewed_at) == renewed)
                               .values(lease_expires=t - 1e-3))
            if result.rowcount == 1:  # type: ignore[attr-defined]
                reclaimed.append(int(item_id or 0))
    return reclaimed


def take_back_expired(engine: Engine) -> list[tuple[int, State]]:
    """Free the working items whose lease lapsed (their holder died or stalled), and return them: the
    sweeper sends each a new message. Freed, not just re-sent: a freed item is sent again only if it
    is then stranded, however slowly the queue drains (an expired lease would be re-sent every sweep).
    The claim stays counted, so an item that keeps killing its worker still becomes poison."""
    t = now()
    with transaction(engine) as s:
        rows = s.exec(select(col(Item.id), col(Item.state), col(Item.lease_owner)).where(
            col(Item.state).in_([st.value for st in WORKING]), col(Item.lease_owner).is_not(None),
            col(Item.lease_expires) < t).order_by(col(Item.id))).all()
    freed: list[tuple[int, State]] = []
    for item_id, state, owner in rows:
        with transaction(engine) as s:
            result = s.execute(update(Item).where(col(Item.id) == item_id, col(Item.lease_owner) == owner,
                                                  col(Item.lease_expires) < t)
                               .values(lease_owner=None, lease_expires=None, updated_at=now()))
            if result.rowcount == 1:  # type: ignore[attr-defined]
                freed.append((int(item_id or 0), State(state)))
    return freed


def stranded(engine: Engine, grace_s: float) -> list[tuple[int, State]]:
    """Working items with no live lease that nothing touched for ``grace_s``: each either waits in the
    queue or lost its message (the caller tells which by asking the broker)."""
    t = now()
    with transaction(engine) as s:
        rows = s.exec(select(col(Item.id), col(Item.state)).where(
            col(Item.state).in_([st.value for st in WORKING]),
            or_(col(Item.lease_expires).is_(None), col(Item.lease_expires) < t),
            col(Item.updated_at) < t - grace_s).order_by(col(Item.id))).all()
    return [(int(i or 0), State(st)) for i, st in rows]


def retry_failed(engine: Engine, limits: Limits) -> list[int]:
    """Put every failed item back where it failed; returns their ids."""
    moved: list[int] = []
    with transaction(engine) as s:
        for item in s.exec(select(Item).where(col(Item.state) == State.FAILED.value)).all():
            assert item.id is not None
            before = progress_of(item)
            after = advance(before, Event.RETRY, limits)
            _apply(item, after)
            item.version += 1
            item.error, item.claims, item.lease_owner, item.lease_expires = None, 0, None, None
            s.add(item)
            s.add(ItemEvent(item_id=item.id, version=item.version, from_state=before.state.value,
                            event=Event.RETRY.value, to_state=after.state.value))
            moved.append(item.id)
    return moved


def resumable(engine: Engine, *, expired_only: bool = False, stale_s: float | None = None) -> list[tuple[int, State]]:
    """Working items whose lease is free or expired: what `resume` re-enqueues. ``expired_only``
    leaves out free ones (they may be queued already): what the periodic sweeper re-enqueues.

    Leases of dead holders are ended first (``reclaim_dead``) and so count as expired: holders gone from
    this machine (unless ``expired_only``), and, with ``stale_s``, silent ones. `resume` after a kill
    waits for no lease."""
    if not expired_only or stale_s is not None:
        reclaim_dead(engine, stale_s)
    t = now()
    expired = col(Item.lease_expires) < t
    with transaction(engine) as s:
        query = select(col(Item.id), col(Item.state)).where(col(Item.state).in_([st.value for st in WORKING]))
        query = query.where(expired if expired_only else or_(col(Item.lease_expires).is_(None), expired))
        rows = s.exec(query.order_by(col(Item.id))).all()
    return [(int(i or 0), State(st)) for i, st in rows]


def counts(engine: Engine) -> dict[str, int]:
    with transaction(engine) as s:
        rows = s.exec(select(Item.state, func.count()).group_by(Item.state)).all()
    return {str(state): int(n) for state, n in rows}


def is_done(engine: Engine) -> bool:
    c = counts(engine)
    return all(c.get(st.value, 0) == 0 for st in WORKING)


__all__: Sequence[str] = [
    "Claim", "claim", "commit", "release", "renew", "reclaim_dead", "stranded", "take_back_expired",
    "owner_is_gone", "create_items", "retry_failed", "resumable", "counts", "is_done", "progress_of", "TERMINAL",
]
