"""Which unfinished items another live process holds now (issue 22).

A second `build` started while the first works on its items used to exit 3, "6 left unfinished …
`resume` continues them": untrue (the first build finishes them) and harmful (a `resume` then races
it). An item is held elsewhere when its lease is unexpired, its holder is not this process, and the
holder is not known dead (``items.owner_is_gone``: gone from this machine).
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.store import identity, transaction
from playlisteval.store.items import owner_is_gone
from playlisteval.store.states import WORKING
from playlisteval.store.tables import Item, now


def this_process() -> str:
    """The lease owner this process writes (actors/app.py's worker id: store/identity.py)."""
    return identity.this_process()


def held_elsewhere(engine: Engine, me: str | None = None) -> dict[str, int]:
    """Holder process (``host:pid:place.nonce``) → how many working items it leases now, for every live holder
    but ``me`` (a lease token is the holder's identity, ``/`` and a counter)."""
    me = me or this_process()
    with transaction(engine) as s:
        rows = s.exec(select(col(Item.lease_owner)).where(
            col(Item.state).in_([st.value for st in WORKING]), col(Item.lease_owner).is_not(None),
            col(Item.lease_expires) >= now())).all()
    held: dict[str, int] = {}
    for owner in rows:
        process = identity.process_of(str(owner))
        if process != me and not owner_is_gone(str(owner)):
            held[process] = held.get(process, 0) + 1
    return held
