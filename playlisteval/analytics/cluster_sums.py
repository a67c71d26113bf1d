"""Observations summed per cluster (``Sums``), what every interval of the analytics is drawn from, and the
clusters themselves: the unit the bootstrap resamples (``[analytics] bootstrap_unit``) numbered once per query.

Both ``rates.aggregate`` (sums made by a query) and ``judgment_matrix`` (sums made from the judgments held as
a matrix) number the clusters with ``clusters_sql``, so the two give the very same Sums.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

UNITS = ("question", "video", "playlist")  # columns of the view question_cluster


@dataclass
class Sums:
    """One group's observations summed per cluster: ``labels`` (the clusters' codes, unique within one
    ``aggregate``) and ``cells``, one row per cluster: [count, Σ value₁, Σ value₂, …]; ``members``, for
    clusters by video or playlist, each cluster's two units (the pair of videos its questions cite:
    dyadic clusters, intervals.interval_from_sums), None for questions."""

    labels: np.ndarray
    cells: np.ndarray
    members: np.ndarray | None = None

    @staticmethod
    def merge(parts: Iterable[Sums]) -> Sums:
        """The parts' cells added up per cluster (in the parts' order)."""
        parts = list(parts)
        if len(parts) == 1:
            return Sums(parts[0].labels, parts[0].cells.copy(), parts[0].members)
        labels = np.concatenate([p.labels for p in parts])
        cells = np.concatenate([p.cells for p in parts])
        members = (None if any(p.members is None for p in parts)
                   else np.concatenate([p.members for p in parts if p.members is not None]))
        unique, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
        if len(unique) == len(labels):  # no cluster in two parts (a question is in one domain)
            return Sums(labels, cells, members)
        out = np.zeros((len(unique), cells.shape[1]))
        np.add.at(out, inverse, cells)  # unbuffered, in row order: the same additions as one by one
        return Sums(unique, out, None if members is None else members[first])

    @property
    def n(self) -> int:
        return int(self.cells[:, 0].sum())


def clusters_sql(unit: str) -> str:
    """A subquery, one row per item: its cluster's ``label`` (1, 2, …) and, for clusters by video or playlist,
    the cluster's two units' codes ``m1``, ``m2`` (0 for questions). Any numbering consistent within one
    query would do: Sums.merge and the intervals' canonical order depend on which rows share a label, not on
    the labels' order."""
    if unit not in UNITS:
        raise ValueError(f"unknown bootstrap unit {unit!r}; one of {', '.join(UNITS)}")
    if unit == "question":
        return ("(SELECT item_id, dense_rank() OVER (ORDER BY question) AS label, 0 AS m1, 0 AS m2 "
                "FROM question_cluster)")
    # issue 40: a question belongs to both its videos (or playlists): one cluster per unordered pair of
    # units, numbered with the two units' own codes (small_sample.dyadic_variance)
    return (f"(WITH q AS (SELECT item_id, least({unit}, {unit}_b) AS u1, greatest({unit}, {unit}_b) AS u2 "
            "FROM question_cluster), n AS (SELECT name, dense_rank() OVER (ORDER BY name) - 1 AS code "
            "FROM (SELECT u1 AS name FROM q UNION SELECT u2 FROM q)) "
            "SELECT q.item_id, dense_rank() OVER (ORDER BY q.u1, q.u2) AS label, a.code AS m1, b.code AS m2 "
            "FROM q JOIN n AS a ON a.name = q.u1 JOIN n AS b ON b.name = q.u2)")
