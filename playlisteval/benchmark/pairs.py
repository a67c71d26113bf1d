"""SPEC F1: the ten preference pairs of every accepted item, and what a judge needs to see of a pair.

Pairs are rows of the store, one per (item, better rating, worse rating); making them again adds only
what is missing. Which answer a judge sees as Model A is drawn once per pair from the project seed
(SPEC G5), so every judge and every run see a given pair the same way round. Every draw is keyed by the
pair's content key (benchmark/keys.py), never by its row id: the same seed gives the same sides on any store.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.keys import pair_key, question_keys
from playlisteval.errors import ConfigError
from playlisteval.store.engine import transaction
from playlisteval.store.states import FINISHED as FINISHED_STATES
from playlisteval.store.tables import QA, Answer, Benchmark, DistractorSet, Domain, Item, Pair, Seed

RATINGS = (5, 4, 3, 2, 1)  # gold first
#: Items that passed every gate: accepted, and those a selection already moved on.
FINISHED = tuple(s.value for s in FINISHED_STATES)


def rating_pairs() -> list[tuple[int, int]]:
    """(better, worse) for every two of the five answers: 4 pairs of gap 1, 3 of gap 2, 2 of 3, 1 of 4."""
    return [(b, w) for b in RATINGS for w in RATINGS if b > w]


def side_of(seed: int, pair: str | int, draw: str = "side") -> bool:
    """Whether the better answer is shown as Model A: one seeded coin per pair (SPEC G5), keyed by the
    pair's content key (``PairText.key``).

    The difficulty gate draws its own coin (``draw="F2"``): were it to share the benchmark's, the pairs
    it keeps would lean to the side its position-biased weak judges get wrong, and the benchmark's
    sides would no longer be a fair coin (always-A would score below 50 %).
    """
    return random.Random(f"{seed}:{draw}:{pair}").random() < 0.5


def find_benchmark(engine: Engine, name: str) -> Benchmark:
    with transaction(engine) as s:
        bench = s.exec(select(Benchmark).where(Benchmark.name == name)).first()
    if bench is None:
        raise ConfigError(f"no benchmark named {name!r}: run `playlisteval select` first")
    return bench


def finished_items(engine: Engine) -> dict[int, list[int]]:
    """Domain id → ids of its finished items (those with a question and a full answer set)."""
    with transaction(engine) as s:
        rows = s.exec(
            select(col(Item.id), col(Seed.domain_id))
            .join(Seed, col(Seed.id) == col(Item.seed_id))
            .where(col(Item.state).in_(FINISHED), col(Item.current_set_id).is_not(None))
            .order_by(col(Item.id))
        ).all()
    out: dict[int, list[int]] = {}
    for item_id, domain_id in rows:
        out.setdefault(int(domain_id), []).append(int(item_id or 0))
    return out


def make_pairs(engine: Engine, item_ids: Iterable[int]) -> int:
    """Create the missing pairs of ``item_ids`` from each item's current answer set; returns how many."""
    wanted = sorted(set(item_ids))
    created = 0
    with transaction(engine) as s:
        # in id order: the new pairs' ids are then the same on every store (draws never use them, but
        # the ids show in the store and the analytics)
        items: list[Item] = []
        have: set[tuple[int, int, int]] = set()
        for start in range(0, len(wanted), 500):  # bounded IN lists: 100k items are over SQLite's limit
            chunk = wanted[start:start + 500]
            items += s.exec(select(Item).where(col(Item.id).in_(chunk)).order_by(col(Item.id))).all()
            have |= {(p.item_id, p.better_rating, p.worse_rating)
                     for p in s.exec(select(Pair).where(col(Pair.item_id).in_(chunk))).all()}
        for item in items:
            if item.current_set_id is None or item.id is None:
                continue
            ratings = set(s.exec(select(Answer.rating).where(Answer.set_id == item.current_set_id)).all())
            if not set(RATINGS) <= ratings:
                continue  # an incomplete set cannot have been accepted; never pair half of one
            for better, worse in rating_pairs():
                if (item.id, better, worse) not in have:
                    s.add(Pair(item_id=item.id, set_id=item.current_set_id, better_rating=better,
                               worse_rating=worse, gap=better - worse))
                    created += 1
    return created


@dataclass(frozen=True)
class PairText:
    """One pair as a judge sees it, before sides are assigned."""

    pair_id: int
    item_id: int
    question_key: str  # the question's content key (benchmark/keys.py)
    domain_id: int
    domain: str
    question: str
    better: str
    worse: str
    better_rating: int
    worse_rating: int

    @property
    def key(self) -> str:
        """The pair's content key: what its draws (sides, sampling) are keyed by."""
        return pair_key(self.question_key, self.better_rating, self.worse_rating)

    @property
    def gap(self) -> int:
        return self.better_rating - self.worse_rating

    def shown(self, a_is_better: bool) -> tuple[str, str]:
        """(Model A's answer, Model B's answer)."""
        return (self.better, self.worse) if a_is_better else (self.worse, self.better)


def pair_texts(engine: Engine, pair_ids: Iterable[int]) -> dict[int, PairText]:
    """The question and both answers of each pair (texts as stored: citations are stripped later)."""
    wanted = sorted(set(pair_ids))
    out: dict[int, PairText] = {}
    with transaction(engine) as s:
        for start in range(0, len(wanted), 500):  # bounded IN lists
            chunk = wanted[start:start + 500]
            rows = s.exec(
                select(Pair, QA.question, Seed.domain_id, Domain.name)
                .join(DistractorSet, col(DistractorSet.id) == col(Pair.set_id))
                .join(QA, col(QA.id) == col(DistractorSet.qa_id))
                .join(Item, col(Item.id) == col(Pair.item_id))
                .join(Seed, col(Seed.id) == col(Item.seed_id))
                .join(Domain, col(Domain.id) == col(Seed.domain_id))
                .where(col(Pair.id).in_(chunk))
            ).all()
            set_ids = {p.set_id for p, *_ in rows}
            qkeys = question_keys(s, {p.item_id for p, *_ in rows})
            texts = {(a.set_id, a.rating): a.text
                     for a in s.exec(select(Answer).where(col(Answer.set_id).in_(set_ids))).all()}
            for pair, question, domain_id, domain in rows:
                assert pair.id is not None
                out[pair.id] = PairText(
                    pair_id=pair.id, item_id=pair.item_id, question_key=qkeys.get(pair.item_id, ""),
                    domain_id=int(domain_id), domain=str(domain),
                    question=str(question), better=texts[(pair.set_id, pair.better_rating)],
                    worse=texts[(pair.set_id, pair.worse_rating)], better_rating=pair.better_rating,
                    worse_rating=pair.worse_rating,
                )
    return out
