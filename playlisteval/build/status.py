"""What `playlisteval status` reads (``Status``): items per state, attempts, calls, rejections, spend.

Its own module below the actors (issue 26): the command reads the store's running counts and needs
neither the engine nor the broker, and importing ``playlisteval.actors`` (dramatiq, the stages, the
workers) was about a third of the whole command's time. ``actors.build_run`` re-exports both names.
It reads through SQLAlchemy Core (``read_core``, SQL text): the ORM and the 44 table classes were another third.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import text

from playlisteval.config import Settings
from playlisteval.models.batch.listing import open_batches
from playlisteval.models.budget import PAUSED_KEY, budget_usd, kv, spend
from playlisteval.models.simulated import is_simulated
from playlisteval.store import cancels, counts, open_store
from playlisteval.store.engine import read_core
from playlisteval.store.states import State

_CANCELS = text("SELECT key FROM kv WHERE key LIKE :prefix ORDER BY key")  # store/cancels.py
_FAILED = text("SELECT id, error FROM item WHERE state = :state ORDER BY id")  # by the index on state


@dataclass
class Status:
    seeds: int
    states: dict[str, int]
    phase1_attempts: int
    phase2_attempts: int
    spent_usd: float  # shown: paid + open reservations (the two below)
    budget_usd: float
    paused: str | None
    calls: int
    cache_hits: int
    tokens: int
    failures: list[tuple[int, str]] = field(default_factory=list)
    rejections: dict[str, int] = field(default_factory=dict)
    simulated: bool = False  # built by the sim world: its numbers exercise the machinery only
    batches: list[dict[str, object]] = field(default_factory=list)  # open batches (issue 15): models/batch_run.py
    paid_usd: float = 0.0  # what finished calls cost
    reserved_usd: float = 0.0  # open reservations: calls in flight now, at their estimate
    interrupted_usd: float = 0.0  # calls cut short by a dead worker, cost unknown: at their estimate
    cancellations: list[str] = field(default_factory=list)  # pending `playlisteval cancel`s, by what (issue 44)

    @property
    def cancelled(self) -> bool:
        """`playlisteval cancel build` is pending: no step starts until `build` or `resume`."""
        return "build" in self.cancellations

    @property
    def items(self) -> int:
        return sum(self.states.values())


def status(settings: Settings) -> Status:
    engine = open_store(settings)
    # the store's running counts (store/counts.py): the same figures at any size, no scan of the ledger
    with read_core(engine) as s:
        seeds = counts.total(s, "seeds")
        attempts = counts.by_key(s, "item_attempts")
        p1, p2 = attempts.get("phase1", 0), attempts.get("phase2", 0)
        calls, hits, tokens = (sum(counts.by_key(s, kind).values()) for kind in ("calls", "call_cache_hits",
                                                                                   "call_tokens"))
        failures = [(int(i or 0), e or "") for i, e in s.execute(_FAILED, {"state": State.FAILED.value}).all()]
        rejections: dict[str, int] = {}
        for key, n in counts.by_key(s, "gate_verdict").items():
            gate, _, verdict = key.rpartition(" ")
            if verdict == "reject":
                rejections[gate] = n
        states = counts.by_key(s, "item_state")
        budget = budget_usd(s, settings)
        paused = kv(s, PAUSED_KEY)
        cancellations = [cancels.what_of(str(k)) for (k,) in s.execute(_CANCELS, {"prefix": cancels.PREFIX + "%"})]
    money = spend(engine)
    return Status(
        seeds=int(seeds), states=states, phase1_attempts=int(p1), phase2_attempts=int(p2),
        spent_usd=money.shown, paid_usd=money.paid, reserved_usd=money.reserved,
        interrupted_usd=money.interrupted, budget_usd=budget, paused=paused, calls=int(calls),
        cache_hits=int(hits), tokens=int(tokens), failures=failures, rejections=rejections,
        simulated=is_simulated(engine, "build"),
        batches=[vars(b) for b in open_batches(engine)], cancellations=cancellations,
    )
