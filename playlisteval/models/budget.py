"""What a purpose may spend and has spent, as `status` and `funnel` show it — read without the runner.

The runner (runner.py) owns reservations and the ledger; these are the reads beside it, kept apart so a
command that only shows money does not import the runner and everything it brings (its providers'
registry, rate limits, response schemas: ~30 ms of every such command's start-up, issue 26). The runner
and the batch lifecycle import these from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.store import spend_totals
from playlisteval.store.direct import Direct
from playlisteval.store.engine import read_core

BUDGET_KEY = "budget_usd"  # the build's budget as `build --budget` set it, for every worker to see
PAUSED_KEY = "paused"  # set while the build is paused by its budget
# store/tables.py KeyValue, read without the ORM, on the driver's cursor: before every paid call (store/direct.py)
_KV_VALUE = Direct(text("SELECT value FROM kv WHERE key = :key"))


@dataclass(frozen=True)
class Spend:
    """Money of one purpose. ``paid``: what finished calls cost (a call marked interrupted that finished
    after all included, at its cost); ``reserved``: open reservations, the calls in flight now at their
    estimate; ``interrupted``: calls cut short (their worker died) whose cost is unknown, at their estimate.
    Shown: paid + reserved. The budget counts all three: a provider may have billed a cut-short call."""

    paid: float = 0.0
    reserved: float = 0.0
    interrupted: float = 0.0

    @property
    def shown(self) -> float:
        return self.paid + self.reserved

    @property
    def committed(self) -> float:
        return self.paid + self.reserved + self.interrupted


def kv(s: Any, key: str) -> str | None:
    """A shared setting of the store (table kv); ``s`` a Connection or a Session (inside its transaction)."""
    row = _KV_VALUE.first(s, {"key": key})
    return None if row is None or row[0] is None else str(row[0])


def spent_usd(engine: Engine, purpose: str = "build") -> float:
    """Money spent or committed by ``purpose``, as the budget counts it (``Spend.committed``)."""
    with read_core(engine) as s:
        return spend_totals.committed(s, purpose)


def spend(engine: Engine, purpose: str = "build") -> Spend:
    """The purpose's ``Spend`` from its running total (one row; ``runner.spend_of`` sums the ledger for the same)."""
    with read_core(engine) as s:
        paid, reserved, interrupted = spend_totals.parts(s, purpose)
    return Spend(paid=paid, reserved=reserved, interrupted=interrupted)


def budget_usd(session: Any, settings: Settings, purpose: str = "build") -> float:
    """The budget of ``purpose`` (0 = none). The build's: `build --budget` (kept in the store so every
    worker sees it), else [build] budget_usd; select's and eval's run in one process: [select] / [eval]
    budget_usd, which their --budget sets; the human study's: [human] budget_usd. Anything else (index) has
    none."""
    if purpose == "build":
        value = kv(session, BUDGET_KEY)
        return float(value) if value is not None else float(settings.build.budget_usd)
    if purpose == "select":
        return float(settings.select.budget_usd)
    if purpose == "eval":
        return float(settings.eval.budget_usd)
    if purpose == "human":  # the human study's evidence grounding (role H)
        return float(settings.human.budget_usd)
    return 0.0
