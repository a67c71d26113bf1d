"""Many intervals at once (analytics/interval_batch.py) give exactly the numbers of one call each
(analytics/intervals.interval_from_sums): accuracies, shares and paired differences, with and without a
null value, tiny and large cluster counts, and values that cannot be summed exactly (nDCG)."""

from __future__ import annotations

import numpy as np

from playlisteval.analytics.interval_batch import intervals_from_sums
from playlisteval.analytics.intervals import interval_from_sums


def _requests(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, float | None]]:
    out: list[tuple[np.ndarray, np.ndarray, float | None]] = []
    for k in (2, 3, 4, 5, 8, 17, 40, 300, 1000):
        for null in (None, 0.0, 0.5):
            counts = rng.integers(1, 12, size=k).astype(float)
            halves = np.floor(rng.random(k) * (2 * counts + 1)) / 2  # an accuracy's sums: 0, ½, … count
            out.append((halves, counts, null))
            diffs = rng.integers(-2, 3, size=k) * 0.5 * counts  # a paired difference's sums
            out.append((diffs, counts, null))
            out.append((np.full(k, 5.0), np.full(k, 10.0), null))  # every cluster alike
        out.append((rng.random(k) * 3, np.full(k, 3.0), None))  # nDCG-like: not exact, one at a time
    return out


def test_batched_intervals_are_the_single_ones() -> None:
    rng = np.random.default_rng(4)
    requests = _requests(rng)
    for seed, resamples, level in ((7, 2000, 0.95), (11, 500, 0.9)):
        batched = intervals_from_sums(requests, seed=seed, resamples=resamples, level=level)
        single = [interval_from_sums(s, n, seed=seed, resamples=resamples, level=level, null=null)
                  for s, n, null in requests]
        assert batched == single


def test_order_of_clusters_and_requests_does_not_matter() -> None:
    rng = np.random.default_rng(5)
    requests = _requests(rng)
    shuffled = []
    for s, n, null in requests:
        order = rng.permutation(len(s))
        shuffled.append((s[order], n[order], null))
    forward = intervals_from_sums(requests, seed=3)
    backward = intervals_from_sums(shuffled[::-1], seed=3)[::-1]
    assert forward == backward
