"""`eval judge --max-pairs N` (issue 42, item 6): a judge run bounded to the benchmark's first N pairs.

"First" is by the pairs' content keys (benchmark/keys.py: the question's key and the two ratings), never
by row id nor by the order rows come back in: the same collection, build and selection give the same N
pairs on any store, SQLite or PostgreSQL. The bound is not part of the run's identity: the pass judges
the first N pairs the run has not judged yet and the run stays ``incomplete`` ("k of n pairs not
judged"); asking again without the bound (or with a larger one) continues the same run.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.keys import pair_key, question_keys
from playlisteval.store.engine import transaction
from playlisteval.store.tables import BenchmarkPair, JudgeRun, Judgment, Pair

_CHUNK = 500  # bounded IN lists


def pair_keys(engine: Engine, pair_ids: Iterable[int]) -> dict[int, str]:
    """Pair id → its content key (pairs whose question has no key are left out)."""
    wanted = sorted(set(pair_ids))
    rows: list[tuple[int, int, int, int]] = []
    with transaction(engine) as s:
        for start in range(0, len(wanted), _CHUNK):
            rows += [(int(p or 0), int(i), int(b), int(w)) for p, i, b, w in s.exec(
                select(Pair.id, Pair.item_id, Pair.better_rating, Pair.worse_rating)
                .where(col(Pair.id).in_(wanted[start:start + _CHUNK]))).all()]
        qkeys = question_keys(s, {item for _, item, _, _ in rows})
    return {p: pair_key(qkeys[i], b, w) for p, i, b, w in rows if i in qkeys}


def first_pairs(engine: Engine, pair_ids: Iterable[int], n: int) -> list[int]:
    """The first ``n`` of ``pair_ids`` in content-key order (ties — identical content — by id)."""
    keys = pair_keys(engine, pair_ids)
    return sorted(keys, key=lambda p: (keys[p], p))[:max(0, n)]


def pending_within(engine: Engine, run_id: int, n: int) -> int:
    """How many of the run's benchmark's first ``n`` pairs the run has not judged yet."""
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        if run is None:
            return 0
        pairs = [int(p) for p in s.exec(select(BenchmarkPair.pair_id)
                                        .where(BenchmarkPair.benchmark_id == run.benchmark_id)).all()]
        done = {int(p) for p in s.exec(select(Judgment.pair_id).where(Judgment.run_id == run_id)).all()}
    return sum(1 for p in first_pairs(engine, pairs, n) if p not in done)
