"""One benchmark's judgments as a runs × pairs matrix, read once per report and summed per cluster in NumPy
(issue 43: a cold report at 1M judgments in 3 s).

Why: the leaderboard, the judge − judge differences, the scope figure, the gap curves and position bias
each summed the same million judgments per cluster in a query of their own, most of them joining the
judgments to themselves on the pair: ~1.3 CPU-s of DuckDB in every cold report at 1M judgments, one query
at a time on the connection. A run judges a pair at most once (judgment's unique run_id, pair_id), so one
read of the scores makes a matrix — a row per run, a column per pair, NaN where the run did not judge the
pair — and a group's or a couple's sums per cluster are then a few ``bincount`` calls.

The same numbers as the queries: every score is 0, 0.5 or 1, so every sum and count is exact in any order;
the clusters are numbered by ``cluster_sums.clusters_sql``, as ``rates.aggregate`` numbers them; a group's
Sums hold exactly the clusters it observed, as a GROUP BY gives them; and rows of several runs (a group, or
both sides of a couple, with several runs) count as the join counted them — every run's row, every
combination of a couple's runs on a pair. The matrix holds judgment_facts' rows (a judgment with its run
and its pair's facts) of the benchmark, or of every benchmark when none is chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from playlisteval.analytics.cluster_sums import Sums, clusters_sql
from playlisteval.analytics.columns import AnalyticsError
from playlisteval.analytics.runner import Analytics

Key = tuple[Any, ...]
#: each judge's first agentic forward run per benchmark and scope (options ``agentic = true``: the judge
#: looks for its own evidence), a point of its own in the scope figure (scope_figure.py)
AGENTIC_RUNS = ("SELECT min(r.id) AS run_id FROM judge_run AS r WHERE NOT r.swapped AND "
                "lower(coalesce(json_extract_string(r.settings, '$.agentic'), 'false')) IN ('true', '1') "
                "GROUP BY r.benchmark_id, r.judge, r.scope")
VERDICT_A, VERDICT_B = 1, 2  # the verdict codes (0: no verdict, or not judged)


@dataclass(frozen=True)
class RunFacts:
    """A judge run as the sections group it."""

    run_id: int
    benchmark_id: int | None
    judge: str
    evidence: str
    scope: str
    swapped: bool
    main: bool  # the main run of its judge, benchmark, evidence, scope and sides (view main_run)
    agentic: bool  # its judge's first agentic forward run at its scope (AGENTIC_RUNS)
    judged: bool  # it has judgments (of pairs with facts)


@dataclass(frozen=True)
class Matrix:
    """``score[row, column]`` (NaN: not judged) and ``verdict`` (VERDICT_A / VERDICT_B, 0 none) of run
    ``runs[row]`` (``row``: a run id's row) on pair ``pairs[column]``; each pair's cluster (an index into
    ``labels`` and ``members``) and, in ``split``, its domain's and its gap's code into that column's values
    (None: NULL)."""

    runs: list[RunFacts]
    row: dict[int, int]
    pairs: np.ndarray
    score: np.ndarray
    verdict: np.ndarray
    cluster: np.ndarray
    labels: np.ndarray
    members: np.ndarray | None
    split: dict[str, tuple[np.ndarray, list[Any]]]  # "domain" / "gap" → (each pair's code, the values)


def of(an: Analytics, bench: dict[str, Any] | None, unit: str) -> Matrix:
    """The benchmark's matrix (every benchmark's when ``bench`` is None), clustered by ``unit``: read once
    per Analytics, whichever section asks first."""
    bench_id = None if bench is None else int(bench["id"])
    return an.shared(("judgment_matrix", bench_id, unit), lambda: _read(an, bench_id, unit))


def _read(an: Analytics, bench_id: int | None, unit: str) -> Matrix:
    def where(alias: str) -> str:
        return "true" if bench_id is None else f"{alias}.benchmark_id = ?"

    params = [] if bench_id is None else [bench_id]
    got = an.arrays("SELECT f.run_id, f.pair_id, f.score, CAST(CASE f.verdict WHEN 'A' THEN 1 WHEN 'B' THEN 2 "
                    f"ELSE 0 END AS TINYINT) AS verdict FROM judgment_facts AS f WHERE {where('f')}", params)
    run_col = np.asarray(got["run_id"], dtype=np.int64)
    pair_col = np.asarray(got["pair_id"], dtype=np.int64)
    judged = set(np.unique(run_col).tolist())
    runs = [RunFacts(int(r["id"]), None if r["benchmark_id"] is None else int(r["benchmark_id"]), str(r["judge"]),
                     str(r["evidence"]), str(r["scope"]), bool(r["swapped"]), bool(r["main"]), bool(r["agentic"]),
                     int(r["id"]) in judged)
            for r in an.rows("SELECT r.id, r.benchmark_id, r.judge, r.evidence, r.scope, r.swapped, "
                             "r.id IN (SELECT run_id FROM main_run) AS main, "
                             f"r.id IN ({AGENTIC_RUNS}) AS agentic FROM judge_run AS r WHERE {where('r')} "
                             "ORDER BY r.id", params)]
    row = {r.run_id: i for i, r in enumerate(runs)}
    facts = an.arrays("SELECT p.pair_id, c.label, c.m1, c.m2, p.domain, p.gap, "
                      "dense_rank() OVER (ORDER BY p.domain) - 1 AS domain_code, "
                      "dense_rank() OVER (ORDER BY p.gap) - 1 AS gap_code FROM pair_facts AS p "
                      f"JOIN {clusters_sql(unit)} AS c ON c.item_id = p.item_id ORDER BY p.pair_id")
    pairs = np.unique(pair_col)
    fact_ids = np.asarray(facts["pair_id"], dtype=np.int64)
    at = np.minimum(np.searchsorted(fact_ids, pairs), max(len(fact_ids) - 1, 0))
    if len(pairs) and (not len(fact_ids) or np.any(fact_ids[at] != pairs)):  # judgment_facts joins pair_facts
        raise AnalyticsError("a judged pair without its facts")
    label = np.asarray(facts["label"], dtype=np.int64)[at]
    labels, first, cluster = np.unique(label, return_index=True, return_inverse=True)
    members = (None if unit == "question" else
               np.column_stack([np.asarray(facts["m1"], dtype=np.int64)[at][first],
                                np.asarray(facts["m2"], dtype=np.int64)[at][first]]))
    score = np.full((len(runs), len(pairs)), np.nan)
    verdict = np.zeros((len(runs), len(pairs)), dtype=np.int8)
    rows = np.searchsorted(np.array([r.run_id for r in runs], dtype=np.int64), run_col)  # runs in id order
    columns = np.searchsorted(pairs, pair_col)
    score[rows, columns] = np.asarray(got["score"], dtype=np.float64)
    verdict[rows, columns] = np.asarray(got["verdict"], dtype=np.int8)
    return Matrix(runs, row, pairs, score, verdict, cluster.reshape(-1), labels, members,
                  {name: _codes(facts, name, at) for name in ("domain", "gap")})


def _codes(facts: dict[str, Any], name: str, at: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Each judged pair's code of column ``name`` (0, 1, … in the column's order, NULL last) and the values."""
    code = np.asarray(facts[f"{name}_code"], dtype=np.int64)
    values: list[Any] = [None] * (int(code.max()) + 1 if len(code) else 0)
    _, first = np.unique(code, return_index=True)
    for c, value in zip(code[first].tolist(), np.ma.asarray(facts[name])[first].tolist(), strict=True):
        values[c] = value  # a masked (NULL) value reads as None
    return code[at], values


def single(m: Matrix, groups: Mapping[Key, Sequence[int]], split: str | None = None) -> dict[Key, Sums]:
    """Each group's runs' scores summed per cluster (and per pair domain or gap, the key's last part, with
    ``split``): what ``rates.aggregate`` gives for the rows of those runs."""
    out: dict[Key, Sums] = {}
    for key, run_ids in groups.items():
        rows = [m.row[r] for r in run_ids if r in m.row]
        scores = m.score[rows]
        present_rows, columns = np.nonzero(~np.isnan(scores))
        out.update(_by_cluster(m, key, columns, [scores[present_rows, columns]], split))
    return out


#: a couple's values on the pairs both runs judged, from (score a, score b, verdict a, verdict b)
Values = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], list[np.ndarray]]


def difference(a: np.ndarray, b: np.ndarray, _va: np.ndarray, _vb: np.ndarray) -> list[np.ndarray]:
    """b − a: a couple (earlier, later) gives the change from its first run to its second."""
    return [b - a]


def paired(m: Matrix, couples: Mapping[Key, Sequence[tuple[int, int]]], values: Values,
           split: str | None = None) -> dict[Key, Sums]:
    """Each key's couples of runs (a, b), on the pairs both judged, their ``values`` summed per cluster
    (and per pair domain or gap with ``split``): what ``rates.aggregate`` gives for the rows of a join of
    the two runs' judgments on the pair. A key without a pair judged by both is left out."""
    out: dict[Key, Sums] = {}
    for key, wanted in couples.items():
        columns, parts = [], []
        for a, b in wanted:
            if a not in m.row or b not in m.row:
                continue
            sa, sb = m.score[m.row[a]], m.score[m.row[b]]
            both = np.flatnonzero(~np.isnan(sa) & ~np.isnan(sb))
            columns.append(both)
            parts.append(values(sa[both], sb[both], m.verdict[m.row[a], both], m.verdict[m.row[b], both]))
        if columns:
            out.update(_by_cluster(m, key, np.concatenate(columns),
                                   [np.concatenate(column) for column in zip(*parts, strict=True)], split))
    return out


def _by_cluster(m: Matrix, key: Key, columns: np.ndarray, values: list[np.ndarray],
                split: str | None) -> dict[Key, Sums]:
    """The observations at pair ``columns`` summed per cluster (and per ``split`` code): [count, Σ each value]."""
    width = len(m.labels)
    parts: list[tuple[Any, ...]]
    if split is None:
        index, parts = m.cluster[columns], [()]
    else:
        code, names = m.split[split]
        index, parts = code[columns] * width + m.cluster[columns], [(name,) for name in names]
    size = width * len(parts)
    counts = np.bincount(index, minlength=size).astype(np.float64)
    sums = [np.bincount(index, weights=np.asarray(v, dtype=np.float64), minlength=size) for v in values]
    out: dict[Key, Sums] = {}
    for j, part in enumerate(parts):
        window = slice(j * width, (j + 1) * width)
        seen = np.flatnonzero(counts[window] > 0)
        if len(seen):
            cells = np.column_stack([counts[window][seen], *(s[window][seen] for s in sums)])
            out[(*key, *part)] = Sums(m.labels[seen], cells, None if m.members is None else m.members[seen])
    return out
