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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from playlisteval.analytics import intervals
from playlisteval.analytics.intervals import Interval
from playlisteval.analytics.runner import Analytics
from playlisteval.config import Settings

UNITS = ("question", "video", "playlist")  # columns of the view question_cluster
Row = dict[str, Any]
Key = tuple[Any, ...]


@dataclass
class Sums:
    """One group's observations summed per cluster: label → [count, Σ value₁, Σ value₂, …]."""

    cells: dict[Any, np.ndarray]

    @staticmethod
    def merge(parts: Iterable[Sums]) -> Sums:
        out: dict[Any, np.ndarray] = {}
        for part in parts:
            for label, cell in part.cells.items():
                out[label] = out[label] + cell if label in out else cell.copy()
        return Sums(out)

    @property
    def n(self) -> int:
        return int(sum(cell[0] for cell in self.cells.values()))


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
        if sums is None or not sums.cells:
            return None
        cells = np.array(list(sums.cells.values()))
        return intervals.interval_from_sums(cells[:, 1 + value], cells[:, 0], seed=self.seed,
                                            resamples=self.resamples, level=self.level, null=null)

    def difference(self, sums: Sums | None) -> Interval | None:
        """A paired difference summed per cluster (value = a − b), tested against no difference."""
        return self.interval(sums, null=0.0)

    @property
    def label(self) -> str:
        return (f"{round(100 * self.level)} % intervals from a bootstrap over {self.unit}s ({self.resamples} "
                f"resamples, seed {self.seed}); p-values from a sign-flip test over {self.unit}s")


def aggregate(an: Analytics, sql: str, params: Sequence[Any], keys: Sequence[str], boot: Bootstrap,
              values: Sequence[str] = ("score",)) -> dict[Key, Sums]:
    """``sql`` (a SELECT with ``item_id``, the ``keys`` and the ``values``) summed per key and cluster."""
    if boot.unit not in UNITS:
        raise ValueError(f"unknown bootstrap unit {boot.unit!r}; one of {', '.join(UNITS)}")
    head = "".join(f"u.{k} AS k{i}, " for i, k in enumerate(keys))
    table = an.table(f"SELECT {head}c.{boot.unit} AS cluster, count(*) AS n, "
                     + ", ".join(f"sum(u.{v}) AS v{i}" for i, v in enumerate(values))
                     + f" FROM ({sql}) AS u JOIN question_cluster AS c ON c.item_id = u.item_id GROUP BY ALL",
                     list(params))
    cols = table.to_pydict()
    cells = np.column_stack([np.asarray(cols["n"], dtype=np.float64)]
                            + [np.asarray(cols[f"v{i}"], dtype=np.float64) for i in range(len(values))])
    out: dict[Key, dict[Any, np.ndarray]] = defaultdict(dict)
    key_cols = [cols[f"k{i}"] for i in range(len(keys))]
    for r, label in enumerate(cols["cluster"]):
        out[tuple(c[r] for c in key_cols)][label] = cells[r]
    return {k: Sums(v) for k, v in out.items()}


def pick(sums: dict[Key, Sums], prefix: Key, domain: str, domain_at: int = -1) -> Sums | None:
    """The group ``prefix`` in ``domain`` ('All': merged over every domain, the key's last part)."""
    parts = [s for k, s in sums.items() if k[:len(prefix)] == prefix
             and (domain == "All" or k[domain_at] == domain)]
    return Sums.merge(parts) if parts else None


def bench_filter(bench: dict[str, Any] | None, alias: str = "f.") -> tuple[str, list[Any]]:
    return (f"{alias}benchmark_id = ?", [bench["id"]]) if bench else ("true", [])


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
    base, params = main_sql(bench, "f.scope = 'domain' AND f.evidence IN ('retrieved', 'uniform')")
    single = aggregate(an, base, params, ("judge", "evidence", "domain"), boot)
    paired = aggregate(an, f"WITH b AS ({base}) SELECT r.judge, r.domain, r.item_id, r.score - u.score AS d "
                           "FROM b AS r JOIN b AS u ON u.judge = r.judge AND u.pair_id = r.pair_id "
                           "WHERE r.evidence = 'retrieved' AND u.evidence = 'uniform'",
                       params, ("judge", "domain"), boot, ("d",))
    for r in rows:
        r["retrieved_ci"] = boot.interval(pick(single, (r["judge"], "retrieved"), r["domain"]))
        r["uniform_ci"] = boot.interval(pick(single, (r["judge"], "uniform"), r["domain"]))
        r["difference_ci"] = boot.difference(pick(paired, (r["judge"],), r["domain"]))
    return rows


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
    base, params = main_sql(bench, "f.scope = 'domain' AND f.evidence = ?")
    pairs_sql = ", ".join("(?, ?)" for _ in wanted)
    sums = aggregate(an, f"WITH b AS ({base}), w(a, b) AS (VALUES {pairs_sql}) "
                         "SELECT x.judge AS judge_a, y.judge AS judge_b, x.item_id, x.score - y.score AS d "
                         "FROM b AS x JOIN b AS y ON y.pair_id = x.pair_id JOIN w ON w.a = x.judge AND w.b = y.judge",
                     [*params, evidence, *(name for pair in wanted for name in pair)], ("judge_a", "judge_b"), boot,
                     ("d",))
    out = []
    for a, b in wanted:
        diff = boot.difference(sums.get((a, b)))
        if diff is not None:
            out.append({"judge_a": a, "judge_b": b, "evidence": evidence, "n": diff.n, "difference_ci": diff})
    return out


def scope_accuracy(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy per judge and corpus scope (retrieved evidence; oracle evidence as the scope 'oracle')."""
    base, params = main_sql(bench, "f.evidence IN ('retrieved', 'oracle')")
    sql = f"SELECT *, CASE WHEN evidence = 'oracle' THEN 'oracle' ELSE scope END AS x FROM ({base})"
    sums = aggregate(an, sql, params, ("judge", "x"), boot)
    return [{"judge": j, "x": x, "n": s.n, "accuracy_ci": boot.interval(s)} for (j, x), s in sorted(sums.items())]


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
    sums = aggregate(an, f"WITH b AS (SELECT *, CASE WHEN evidence = 'oracle' THEN 'oracle' ELSE scope END AS x "
                         f"FROM ({base})), w(judge, small, large) AS (VALUES {values}) "
                         "SELECT w.judge, w.small, w.large, l.item_id, l.score - s.score AS d FROM w "
                         "JOIN b AS s ON s.judge = w.judge AND s.x = w.small "
                         "JOIN b AS l ON l.judge = w.judge AND l.x = w.large AND l.pair_id = s.pair_id",
                     [*params, *(v for step in wanted for v in step)], ("judge", "small", "large"), boot, ("d",))
    out = []
    for judge, small, large in wanted:
        diff = boot.difference(sums.get((judge, small, large)))
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
    for r in rows:
        group = pick(sums, (r["run_id"],), r["domain"])
        for i, rate in enumerate(RETRIEVAL_RATES):
            r[f"{rate}_ci"] = boot.interval(group, i)
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
