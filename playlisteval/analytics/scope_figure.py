"""Accuracy by corpus scope, one line per evidence protocol (paper Fig. 4; issue 20 deliverable 2).

A protocol is (evidence, scope): retrieved evidence over the full domain, a frozen 24-h or 10-h corpus or
the oracle pair of segments is one line (solid in the figure); uniform evidence over the same scopes is
another (dashed); *oracle evidence* (the two gold segments handed over, no search at all) is its own point,
never merged with retrieved evidence at the oracle scope; an agentic run (options ``agentic = true``, the
judge looks for its own evidence) is its own point too, when there is one.

Steps are paired: the change from one scope to the next larger one on the same line, over the pairs judged
in both runs — each pair once (one main run per judge, evidence, scope and side order), so a 44-pair
benchmark has at most 44 pairs in both — with a cluster-bootstrap interval and a sign-flip p-value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from playlisteval.analytics.rates import Bootstrap, Row, aggregate, bench_filter
from playlisteval.analytics.runner import Analytics

ORACLE_EVIDENCE = "oracle evidence"
AGENTIC = "agentic"
#: the lines of the figure, in the legend's order; the first two are drawn over the scopes
LINES = ("retrieved", "uniform", ORACLE_EVIDENCE, AGENTIC)
DASHED = frozenset({"uniform"})


def _base(bench: dict[str, Any] | None) -> tuple[str, list[Any]]:
    """Every forward judgment of a main run, and of each judge's first agentic run per scope, with its line."""
    b, params = bench_filter(bench)
    agentic = ("SELECT min(r.id) AS run_id FROM judge_run AS r WHERE NOT r.swapped AND "
               "lower(coalesce(json_extract_string(r.settings, '$.agentic'), 'false')) IN ('true', '1') "
               "GROUP BY r.benchmark_id, r.judge, r.scope")
    sql = (f"WITH ag AS ({agentic}) SELECT f.*, CASE WHEN f.run_id IN (SELECT run_id FROM ag) THEN '{AGENTIC}' "
           f"WHEN f.evidence = 'oracle' THEN '{ORACLE_EVIDENCE}' ELSE f.evidence END AS line "
           "FROM judgment_facts AS f WHERE NOT f.swapped AND "
           "(f.run_id IN (SELECT run_id FROM main_run) OR f.run_id IN (SELECT run_id FROM ag)) "
           f"AND {b}")
    return sql, params


def protocol_accuracy(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy per judge, line and scope, with its interval and pair count."""
    base, params = _base(bench)
    groups = sorted(aggregate(an, base, params, ("judge", "line", "scope"), boot).items())
    cis = boot.intervals([(s, 0, None) for _, s in groups])
    return [{"judge": j, "line": line, "scope": scope, "n": s.n, "accuracy_ci": ci}
            for ((j, line, scope), s), ci in zip(groups, cis, strict=True)]


def ordered(scopes: set[str], order: Sequence[str]) -> list[str]:
    return [s for s in order if s in scopes] + sorted(scopes - set(order))


def protocol_steps(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, points: list[Row],
                   order: Sequence[str]) -> list[Row]:
    """Per judge and line, each scope against the next larger one on that line, paired over the pairs judged
    in both runs (each pair once)."""
    present: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in points:
        present[(r["judge"], r["line"])].add(str(r["scope"]))
    wanted = [(judge, line, small, large) for (judge, line), have in sorted(present.items())
              for small, large in zip(ordered(have, order), ordered(have, order)[1:], strict=False)]
    if not wanted:
        return []
    base, params = _base(bench)
    values = ", ".join("(?, ?, ?, ?)" for _ in wanted)
    sql = (f"WITH b AS MATERIALIZED (SELECT benchmark_id, judge, line, scope, pair_id, item_id, score FROM ({base})), "
           f"w(judge, line, small, large) AS (VALUES {values}), "
           # each step's smaller scope first (MATERIALIZED), then the larger one joined on it: left to itself DuckDB
           # joined the two sides on judge, line and pair first, every scope with every other (1.26M rows at 1M
           # judgments), and only then picked the steps (rates.py, JOINS)
           "s AS MATERIALIZED (SELECT w.judge, w.line, w.small, w.large, b.benchmark_id, b.pair_id, b.score FROM w "
           "JOIN b ON b.judge = w.judge AND b.line = w.line AND b.scope = w.small) "
           "SELECT s.judge, s.line, s.small, s.large, l.item_id, l.score - s.score AS d FROM s "
           "JOIN b AS l ON l.judge = s.judge AND l.line = s.line AND l.scope = s.large AND l.pair_id = s.pair_id "
           "AND l.benchmark_id = s.benchmark_id")
    sums = aggregate(an, sql, [*params, *(v for step in wanted for v in step)], ("judge", "line", "small", "large"),
                     boot, ("d",))
    diffs = boot.intervals([(sums.get(step), 0, 0.0) for step in wanted])
    return [{"judge": judge, "line": line, "from": small, "to": large, "n": diff.n, "difference_ci": diff}
            for (judge, line, small, large), diff in zip(wanted, diffs, strict=True) if diff is not None]
