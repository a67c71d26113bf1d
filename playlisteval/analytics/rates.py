"""Every rate the analytics show, with its interval (issue 9): leaderboard accuracies and their
retrieved − uniform differences, judge − judge differences, scope steps, retriever Hit@k and nDCG@k.

The views compute the point estimates; here the same observations are summed per group and per unit the
bootstrap resamples (view ``question_cluster``: question, video or playlist) in DuckDB, and each group's
cluster sums get their interval from ``intervals`` — a million judgments never travel to Python one by
one. Paired differences are over the units present in both arms (a pair judged both ways), so an
incomplete run never compares unlike sets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from playlisteval.analytics import intervals, judgment_matrix
from playlisteval.analytics.cluster_sums import Sums, clusters_sql
from playlisteval.analytics.intervals import Interval
from playlisteval.analytics.judgment_matrix import RunFacts
from playlisteval.analytics.multiplicity import adjust_family
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.tabular import interval_label
from playlisteval.config import Settings

Row = dict[str, Any]
Key = tuple[Any, ...]


@dataclass(frozen=True)
class Bootstrap:
    """How every interval is drawn: the project seed, resamples, level and the unit resampled."""

    seed: int
    resamples: int = intervals.RESAMPLES
    level: float = intervals.LEVEL
    unit: str = "question"

    @classmethod
    def of(cls, settings: Settings) -> Bootstrap:
        a = settings.analytics
        return cls(settings.project.seed, a.bootstrap_resamples, a.confidence, a.bootstrap_unit)

    def interval(self, sums: Sums | None, value: int = 0, null: float | None = None) -> Interval | None:
        """The rate of value number ``value``; None for no observations (no rate rather than a made-up one)."""
        return self.intervals([(sums, value, null)])[0]

    def intervals(self, wanted: Sequence[tuple[Sums | None, int, float | None]]) -> list[Interval | None]:
        """``interval(sums, value, null)`` of each (a null of 0.0 marks a paired difference)."""
        present: list[intervals.Request] = [(s.cells[:, 1 + value], s.cells[:, 0], null, s.members)
                                            for s, value, null in wanted if s is not None and len(s.cells)]
        done = iter(intervals.intervals_from_sums(present, seed=self.seed, resamples=self.resamples,
                                                       level=self.level))
        return [next(done) if s is not None and len(s.cells) else None for s, _, _ in wanted]

    def paired(self, wanted: Sequence[Sums | None]) -> list[Interval | None]:
        """a − b of each group against no difference, its cells [count, Σ a, Σ b, Σ odd] (odd: a pair
        with a score other than 0/1 on either side): MOVER from the two sides' intervals where every score
        is 0/1 and the clusters are one-way, else the CR2 t of the differences (intervals.paired_from_sums)."""
        present: list[intervals.PairedRequest] = [
            (s.cells[:, 1], s.cells[:, 2], s.cells[:, 0], s.members) if not s.cells[:, 3].any()
            else (s.cells[:, 1] - s.cells[:, 2], None, s.cells[:, 0], s.members)
            for s in wanted if s is not None and len(s.cells)]
        done = iter(intervals.paired_from_sums(present, seed=self.seed, resamples=self.resamples, level=self.level))
        return [next(done) if s is not None and len(s.cells) else None for s in wanted]

    def difference(self, sums: Sums | None) -> Interval | None:
        """A paired difference summed per cluster (value = a − b), tested against no difference."""
        return self.interval(sums, null=0.0)

    @property
    def label(self) -> str:
        return interval_label(self.seed, self.resamples, self.level, self.unit)


def aggregate(an: Analytics, sql: str, params: Sequence[Any], keys: Sequence[str], boot: Bootstrap,
              values: Sequence[str] = ("score",)) -> dict[Key, Sums]:
    """``sql`` (a SELECT with ``item_id``, the ``keys`` and the ``values``) summed per key and cluster.
    DuckDB sums and orders the rows by group; Python only cuts the arrays at the groups' boundaries."""
    head = "".join(f"u.{k} AS k{i}, " for i, k in enumerate(keys))
    order = ", ".join(f"k{i}" for i in range(len(keys))) or "true"
    # the clusters numbered in DuckDB, over the few rows of question_cluster (any numbering consistent within
    # one aggregate will do: Sums.merge and the intervals' canonical order depend on which rows share a label,
    # not on the labels' order), summed per label rather than per cluster name, and the columns fetched as
    # NumPy arrays: pyarrow's to_numpy would import pandas, and no cluster name is made a Python string
    # (issue 13: the gap curves' sums 0.17 s, against 0.41 s numbering the summed rows' names)
    clusters = clusters_sql(boot.unit)
    got = an.arrays(f"SELECT *, dense_rank() OVER (ORDER BY {order}) AS g FROM ("
                    f"SELECT {head}c.label, c.m1, c.m2, count(*) AS n, "
                    + ", ".join(f"sum(u.{v}) AS v{i}" for i, v in enumerate(values))
                    + f" FROM ({sql}) AS u JOIN {clusters} AS c ON c.item_id = u.item_id GROUP BY ALL"
                    ") ORDER BY g", list(params))
    group = np.asarray(got["g"])
    if len(group) == 0:
        return {}
    cells = np.column_stack([np.asarray(got["n"], dtype=np.float64)]
                            + [np.asarray(got[f"v{i}"], dtype=np.float64) for i in range(len(values))])
    labels = np.asarray(got["label"], dtype=np.int64)
    members = (None if boot.unit == "question"
               else np.column_stack([np.asarray(got["m1"], dtype=np.int64), np.asarray(got["m2"], dtype=np.int64)]))
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1])
    ends = np.append(starts[1:], len(group))
    key_cols = [got[f"k{i}"][starts].tolist() for i in range(len(keys))]  # masked (NULL) → None
    return {tuple(c[g] for c in key_cols): Sums(labels[a:b], cells[a:b], None if members is None else members[a:b])
            for g, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True))}


def pick(sums: dict[Key, Sums], prefix: Key, domain: str, domain_at: int = -1) -> Sums | None:
    """The group ``prefix`` in ``domain`` ('All': merged over every domain, the key's last part)."""
    parts = [s for k, s in sums.items() if k[:len(prefix)] == prefix
             and (domain == "All" or k[domain_at] == domain)]
    return Sums.merge(parts) if parts else None


def bench_filter(bench: dict[str, Any] | None, alias: str = "f.") -> tuple[str, list[Any]]:
    return (f"{alias}benchmark_id = ?", [bench["id"]]) if bench else ("true", [])


# JOINS. A self-join of judgments whose two sides are picked through a third table (the runs, the judge
# pairs, the scope steps) is written as that table joined to one side first (a MATERIALIZED CTE), then
# the other side joined on both its run key and the pair: left to itself DuckDB joined the two sides on
# pair_id alone — every judgment with every other of the same pair, 100 M rows at 1 M judgments —
# before filtering (measured: the position-bias sums 1.7 s of CPU, now a few hundredths).
def narrow(sql: str, columns: str) -> str:
    """The rows of ``sql`` (judgment_facts rows) with only the columns a paired query needs."""
    return f"SELECT {columns}, pair_id, item_id, score FROM ({sql})"


def main_sql(bench: dict[str, Any] | None, where: str = "true") -> tuple[str, list[Any]]:
    """The judgments of the main forward passes (what the leaderboard and the curves show)."""
    b, params = bench_filter(bench)
    return ("SELECT f.* FROM judgment_facts AS f WHERE f.run_id IN (SELECT run_id FROM main_run) "
            f"AND NOT f.swapped AND {b} AND {where}"), params


def leaderboard(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, *, domains: bool = False) -> list[Row]:
    """The leaderboard view's rows (overall, or per domain too) with ``retrieved_ci``, ``uniform_ci`` and
    the paired ``difference_ci`` (retrieved − uniform over the pairs judged both ways, with its p-value)."""
    b, bp = bench_filter(bench, "")
    rows = an.rows(f"SELECT * FROM leaderboard WHERE {b} " + ("" if domains else "AND domain = 'All' ")
                   + "ORDER BY retrieved DESC NULLS LAST, uniform DESC NULLS LAST, judge, domain <> 'All', domain", bp)
    # the main forward full-domain runs' judgments, summed per cluster from the judgment matrix (read once
    # for the report's sections, judgment_matrix.py); retrieved − uniform over the pairs judged both ways
    m = judgment_matrix.of(an, bench, boot.unit)
    runs = main_runs(m, lambda r: r.scope == "domain" and r.evidence in ("retrieved", "uniform"),
                     lambda r: (r.judge, r.evidence))
    single = judgment_matrix.single(m, runs, "domain")
    paired = judgment_matrix.paired(m, {(judge,): [(u, r) for r in retrieved for u in runs.get((judge, "uniform"), [])]
                                        for (judge, evidence), retrieved in runs.items() if evidence == "retrieved"},
                                    judgment_matrix.difference, "domain")
    cis = boot.intervals([want for r in rows for want in (
        (pick(single, (r["judge"], "retrieved"), r["domain"]), 0, None),
        (pick(single, (r["judge"], "uniform"), r["domain"]), 0, None),
        (pick(paired, (r["judge"],), r["domain"]), 0, 0.0))])
    for i, r in enumerate(rows):
        r["retrieved_ci"], r["uniform_ci"], r["difference_ci"] = cis[3 * i:3 * i + 3]
    for overall, family in ((True, "retrieved − uniform, every judge"), (False, "retrieved − uniform by domain")):
        part = [r for r in rows if (r["domain"] == "All") == overall]
        for r, iv in zip(part, adjust_family([r["difference_ci"] for r in part], family), strict=True):
            r["difference_ci"] = iv
    return rows


def main_runs(m: judgment_matrix.Matrix, wanted: Callable[[RunFacts], bool],
              key: Callable[[RunFacts], Any]) -> dict[Any, list[int]]:
    """The main forward runs (what main_sql reads) that are ``wanted``, grouped by ``key``, in id order."""
    out: dict[Any, list[int]] = {}
    for r in m.runs:
        if r.main and not r.swapped and wanted(r):
            out.setdefault(key(r), []).append(r.run_id)
    return out


def _both_sides(a: np.ndarray, b: np.ndarray, _va: np.ndarray, _vb: np.ndarray) -> list[np.ndarray]:
    """Both scores and whether either is other than 0/1 (a no-verdict's 0.5): boot.paired's cells."""
    odd = ~(np.isin(a, (0.0, 1.0)) & np.isin(b, (0.0, 1.0)))
    return [a, b, odd.astype(np.float64)]


def judge_differences(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, order: Sequence[str], *,
                      evidence: str = "retrieved", all_pairs_up_to: int = 8) -> list[Row]:
    """Judge A − judge B (full-domain scope, main forward passes, ``evidence``) over the pairs both
    judged, with the paired p-value: every two judges of a small panel, else each judge against the
    next one down the leaderboard (``order``)."""
    names = list(dict.fromkeys(order))
    wanted = ([(a, b) for i, a in enumerate(names) for b in names[i + 1:]] if len(names) <= all_pairs_up_to
              else list(zip(names, names[1:], strict=False)))
    if not wanted:
        return []
    m = judgment_matrix.of(an, bench, boot.unit)
    runs = main_runs(m, lambda r: r.scope == "domain" and r.evidence == evidence, lambda r: r.judge)
    sums = judgment_matrix.paired(m, {(a, b): [(ra, rb) for ra in runs.get(a, []) for rb in runs.get(b, [])]
                                      for a, b in wanted}, _both_sides)
    out = []
    # both sides' sums: MOVER where the scores are 0/1 (issue 40: a judge near 100 % seen as such)
    tested = adjust_family(boot.paired([sums.get(w) for w in wanted]),
                           "judge − judge" + ("" if len(names) <= all_pairs_up_to else ", each with the next one down"))
    for (a, b), diff in zip(wanted, tested, strict=True):
        if diff is not None:
            out.append({"judge_a": a, "judge_b": b, "evidence": evidence, "n": diff.n, "difference_ci": diff})
    return out


def scope_accuracy(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy per judge and corpus scope (retrieved evidence; oracle evidence as the scope 'oracle')."""
    base, params = main_sql(bench, "f.evidence IN ('retrieved', 'oracle')")
    sql = f"SELECT *, CASE WHEN evidence = 'oracle' THEN 'oracle' ELSE scope END AS x FROM ({base})"
    groups = sorted(aggregate(an, sql, params, ("judge", "x"), boot).items())
    cis = boot.intervals([(s, 0, None) for _, s in groups])
    return [{"judge": j, "x": x, "n": s.n, "accuracy_ci": ci} for ((j, x), s), ci in zip(groups, cis, strict=True)]


def scope_steps(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, scopes: list[Row],
                order: Sequence[str]) -> list[Row]:
    """Per judge, the accuracy change from each scope to the next larger one present (and from the first
    to the last), paired over the pairs judged at both: how much a bigger corpus costs."""
    present: dict[str, list[str]] = defaultdict(list)
    for r in scopes:
        present[r["judge"]].append(r["x"])
    wanted = []
    for judge, have in present.items():
        xs = [x for x in order if x in have] + sorted(set(have) - set(order))
        wanted += [(judge, s, t) for s, t in zip(xs, xs[1:], strict=False)]
        if len(xs) > 2:
            wanted.append((judge, xs[0], xs[-1]))
    if not wanted:
        return []
    base, params = main_sql(bench, "f.evidence IN ('retrieved', 'oracle')")
    values = ", ".join("(?, ?, ?)" for _ in wanted)
    scoped = narrow(base, "judge, CASE WHEN evidence = 'oracle' THEN 'oracle' ELSE scope END AS x")
    sums = aggregate(an, f"WITH b AS MATERIALIZED ({scoped}), w(judge, small, large) AS (VALUES {values}), "
                         "s AS MATERIALIZED (SELECT w.small, w.large, b.* FROM w "
                         "JOIN b ON b.judge = w.judge AND b.x = w.small) "
                         "SELECT s.judge, s.small, s.large, l.item_id, l.score - s.score AS d FROM s "
                         "JOIN b AS l ON l.judge = s.judge AND l.x = s.large AND l.pair_id = s.pair_id",
                     [*params, *(v for step in wanted for v in step)], ("judge", "small", "large"), boot, ("d",))
    out = []
    diffs = adjust_family(boot.intervals([(sums.get(step), 0, 0.0) for step in wanted]), "corpus scope steps")
    for (judge, small, large), diff in zip(wanted, diffs, strict=True):
        if diff is not None:
            out.append({"judge": judge, "from": small, "to": large, "n": diff.n, "difference_ci": diff})
    return out


RETRIEVAL_RATES = ("hit_both", "hit_any", "hit_seg1", "hit_seg2", "ndcg")


def retrieval(an: Analytics, boot: Bootstrap, run_id: int | None = None) -> list[Row]:
    """The retrieval view's rows (every run, or one) with an interval per rate (``<rate>_ci``)."""
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("true", [])
    rows = an.rows(f"SELECT * FROM retrieval WHERE {where} ORDER BY run_id, domain = 'All' DESC, domain", params)
    sums = aggregate(an, f"SELECT * FROM retrieval_question WHERE {where}", params, ("run_id", "domain"), boot,
                     RETRIEVAL_RATES)
    groups = [pick(sums, (r["run_id"],), r["domain"]) for r in rows]
    cis = iter(boot.intervals([(group, i, None) for group in groups for i in range(len(RETRIEVAL_RATES))]))
    for r in rows:
        for rate in RETRIEVAL_RATES:
            r[f"{rate}_ci"] = next(cis)
    return rows


def judge_run(an: Analytics, run_id: int, boot: Bootstrap) -> tuple[Interval | None, dict[str, Interval | None]]:
    """One run's accuracy interval, overall and per domain (what `eval judge` prints)."""
    sums = aggregate(an, "SELECT * FROM judgment_facts WHERE run_id = ?", [run_id], ("domain",), boot)
    return boot.interval(pick(sums, (), "All")), {str(d): boot.interval(s) for (d,), s in sorted(sums.items())}


RunIntervals = tuple[Interval | None, dict[str, Interval | None]]


def judge_run_intervals(settings: Settings, run_ids: Sequence[int]) -> dict[int, RunIntervals]:
    """What `eval judge` prints beside each run's accuracy: its interval overall and per domain."""
    from playlisteval.store import open_store

    boot = Bootstrap.of(settings)
    with Analytics(open_store(settings), settings) as an:
        return {run_id: judge_run(an, run_id, boot) for run_id in run_ids}


def retrieval_run_intervals(settings: Settings, run_id: int) -> dict[str, Interval | None]:
    """What `eval retrieve` prints beside each rate of a run (over all its questions)."""
    from playlisteval.store import open_store

    boot = Bootstrap.of(settings)
    with Analytics(open_store(settings), settings) as an:
        rows = [r for r in retrieval(an, boot, run_id) if r["domain"] == "All"]
    return {rate: rows[0][f"{rate}_ci"] if rows else None for rate in RETRIEVAL_RATES}


def is_simulated(engine: Engine) -> bool:
    """Whether anything in the store came from the sim: the one place the analytics ask (the answer is
    models/simulated.py's, which also labels the CLI and the export)."""
    from playlisteval.models.simulated import is_simulated as store_is_simulated

    return store_is_simulated(engine)


def shown_name(name: str) -> str:
    """A judge or model name as tables and figures show it: the sim's marked as simulated."""
    return f"{name} (simulated)" if name.split("/", 1)[0] == "sim" else name


def json_ready(row: Row) -> Row:
    """A row for --json: intervals as objects."""
    return {k: (v.as_dict() if isinstance(v, Interval) else v) for k, v in row.items()}
