"""Money for `playlisteval status` (issue 14): spend per purpose (build / select / eval / …) against its
budget, and what finishing the build is projected to cost.

Spend is what the ledger says (paid + open reservations, as `status` shows it everywhere). Money of a
purpose the sim world played is *notional*: the sim's calls are priced like any other, but no provider
was paid. The projection to finish the build is the mean cost of the items that settled (accepted,
discarded, …) times the items still to settle — unfinished ones and seeds with no item yet (within
``--max-items`` / [build] max_items) — or, while none has settled, the `cost estimate` projection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.models.budget import budget_usd
from playlisteval.models.simulated import is_simulated
from playlisteval.store import counts, spend_totals
from playlisteval.store.engine import read_core
from playlisteval.store.states import TERMINAL, WORKING

#: purposes always shown, in this order; others (index, human) when the ledger has calls of them
PURPOSES = ("build", "select", "eval")
# the build's money by whether its item has settled (SQL text: `status` loads no table class, issue 26)
_BUILD_USD_BY_SETTLED = text(
    "SELECT CASE WHEN item.state IN :settled THEN 1 ELSE 0 END AS settled, SUM(model_call.usd) "
    "FROM model_call JOIN item ON item.id = model_call.item_id WHERE model_call.purpose = 'build' GROUP BY 1"
).bindparams(bindparam("settled", expanding=True))


@dataclass(frozen=True)
class PurposeSpend:
    purpose: str
    calls: int
    paid_usd: float
    reserved_usd: float
    interrupted_usd: float  # calls cut short, at their estimate (the budget counts them)
    budget_usd: float  # 0 = none
    notional: bool  # played by the sim: no provider was paid

    @property
    def shown_usd(self) -> float:
        return self.paid_usd + self.reserved_usd


@dataclass(frozen=True)
class BuildProjection:
    to_settle: int  # items still to finish, seeds without an item included
    usd: float | None  # more money expected to finish the build (None: nothing to base it on)
    basis: str  # how it was projected


def spend_by_purpose(settings: Settings, engine: Engine) -> list[PurposeSpend]:
    with read_core(engine) as s:  # running counts and totals (store/counts.py, spend_totals.py): no scan
        calls = counts.by_key(s, "calls")
        purposes = [*PURPOSES, *sorted(p for p in calls if p not in PURPOSES)]
        out = []
        for purpose in purposes:
            paid, reserved, interrupted = spend_totals.parts(s, purpose)
            out.append(PurposeSpend(purpose, calls.get(purpose, 0), paid, reserved, interrupted,
                                    budget_usd(s, settings, purpose), False))
    return [PurposeSpend(**{**asdict(p), "notional": is_simulated(engine, p.purpose)}) for p in out]


def project_build(settings: Settings, engine: Engine) -> BuildProjection:
    """What finishing the build should cost on top of what it spent."""
    with read_core(engine) as s:
        states, seeds = counts.by_key(s, "item_state"), counts.total(s, "seeds")
    items = sum(states.values())
    settled = sum(states.get(st.value, 0) for st in TERMINAL)
    working = sum(states.get(st.value, 0) for st in WORKING)
    room = seeds - items
    if settings.build.max_items:
        room = min(room, max(0, settings.build.max_items - items))
    to_settle = working + max(0, room)
    if not to_settle:
        return BuildProjection(0, 0.0, "nothing left to build")
    if settled:
        with read_core(engine) as s:
            rows = s.execute(_BUILD_USD_BY_SETTLED, {"settled": [st.value for st in TERMINAL]}).all()
        by_done = {bool(done): float(usd or 0.0) for done, usd in rows}
        # the unfinished items have spent part of their share already
        usd = max(0.0, by_done.get(True, 0.0) / settled * to_settle - by_done.get(False, 0.0))
        return BuildProjection(to_settle, usd, f"mean cost of the {settled} settled item(s)")
    from playlisteval.models.estimate import project_cost, store_facts

    _, segment_s = store_facts(engine)
    projection = project_cost(settings, to_settle, segment_s, engine)
    return BuildProjection(to_settle, projection.total_usd, "`playlisteval cost estimate` (no item settled yet)")


def spend_json(spends: list[PurposeSpend], projection: BuildProjection) -> dict[str, Any]:
    return {
        "by_purpose": {p.purpose: {"calls": p.calls, "paid_usd": p.paid_usd, "reserved_usd": p.reserved_usd,
                                   "interrupted_usd": p.interrupted_usd, "budget_usd": p.budget_usd,
                                   "notional": p.notional} for p in spends},
        "build_to_finish": {"items": projection.to_settle, "usd": projection.usd, "basis": projection.basis},
    }
