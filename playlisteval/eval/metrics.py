"""Scoring formulas shared by the scorers, the analytics SQL tests and the report (SPEC G4, G8, R2, R3).

Pure functions of plain values: no store, no files. The SQL views in ``playlisteval/analytics`` compute
the same quantities in bulk; the tests hold the two to each other and to closed-form numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

NO_VERDICT_SCORE = 0.5  # SPEC G4: a reply without a parseable verdict counts half


def pair_score(verdict: str | None, a_is_better: bool) -> float:
    """1 when the judge picked the intended (better) answer, 0 when it picked the other, 0.5 for none."""
    if verdict not in ("A", "B"):
        return NO_VERDICT_SCORE
    return 1.0 if (verdict == "A") == a_is_better else 0.0


def accuracy(scores: Iterable[float]) -> float:
    """Mean pairwise score (SPEC G8). An empty list has no accuracy: that is the caller's error."""
    values = list(scores)
    if not values:
        raise ValueError("accuracy of no pairs")
    return sum(values) / len(values)


def _gain(position: int) -> float:
    """The discount of 1-based rank ``position``: 1 / log2(position + 1) (SPEC R2)."""
    return 1.0 / math.log2(position + 1)


def idcg(n_relevant: int, k: int) -> float:
    """Ideal DCG with binary relevance: every relevant document on top, cut at ``k``."""
    return sum(_gain(i) for i in range(1, min(n_relevant, k) + 1))


def ndcg_at_k(ranked: Sequence[str], relevant: set[str] | frozenset[str], k: int) -> float:
    """nDCG@k with binary relevance; IDCG over min(|relevant|, k). 0 when nothing is relevant."""
    ideal = idcg(len(relevant), k)
    if ideal == 0:
        return 0.0
    dcg = sum(_gain(i) for i, doc in enumerate(ranked[:k], start=1) if doc in relevant)
    return dcg / ideal


def hit_all_at_k(ranked: Sequence[str], relevant: set[str] | frozenset[str], k: int) -> float:
    """1 when every relevant document is in the top k (SPEC R2's Hit_both for two gold segments)."""
    return 1.0 if relevant and relevant <= set(ranked[:k]) else 0.0


def hit_any_at_k(ranked: Sequence[str], relevant: set[str] | frozenset[str], k: int) -> float:
    """1 when at least one relevant document is in the top k."""
    return 1.0 if relevant & set(ranked[:k]) else 0.0


def ndcg_from_ranks(ranks: Sequence[int], k: int) -> float:
    """nDCG@k when the relevant documents' 1-based ranks are known (a Ranking row: rank1, rank2)."""
    ideal = idcg(len(ranks), k)
    if ideal == 0:
        return 0.0
    return sum(_gain(r) for r in ranks if 1 <= r <= k) / ideal


def chance_any(n: int, k: int, n_relevant: int = 2) -> float:
    """P(at least one of ``n_relevant`` documents in a random top k of n) = 1 − C(n−g, k)/C(n, k)."""
    if n < n_relevant or n < 1:
        raise ValueError(f"{n} documents cannot hold {n_relevant} relevant ones")
    k = min(k, n)
    return 1.0 - math.comb(n - n_relevant, k) / math.comb(n, k)


def chance_both(n: int, k: int) -> float:
    """P(both of two relevant documents in a random top k of n) = k(k−1) / (n(n−1)) (SPEC R3)."""
    if n < 2:
        raise ValueError(f"{n} documents cannot hold two relevant ones")
    k = min(k, n)
    return k * (k - 1) / (n * (n - 1))


def chance_ndcg(n: int, k: int, n_relevant: int = 2) -> float:
    """Expected nDCG@k of a random ranking: each position holds a relevant document w.p. g/n."""
    if n < 1 or n_relevant < 1:
        raise ValueError("chance nDCG needs documents and at least one relevant one")
    expected_dcg = n_relevant / n * sum(_gain(i) for i in range(1, min(k, n) + 1))
    return expected_dcg / idcg(n_relevant, k)


def mean_over(queries: Iterable[str], per_query: Mapping[str, float]) -> float:
    """Mean of ``per_query`` over ``queries``; a query without a value counts 0."""
    keys = list(queries)
    if not keys:
        raise ValueError("mean over no queries")
    return sum(per_query.get(q, 0.0) for q in keys) / len(keys)
