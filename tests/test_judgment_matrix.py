"""The judgment matrix (analytics/judgment_matrix.py) gives the very Sums the queries it replaced gave.

The store is the report bench's synthetic one (bench/report_store.py), made harder: runs that skipped
pairs, replies without a verdict, a second benchmark (for "no benchmark chosen"), an agentic run, oracle
evidence, and questions citing two different videos (dyadic clusters by video and playlist). Each section's
former query (kept here as the reference, summed by ``rates.aggregate``) and the matrix must agree cluster
by cluster, for every bootstrap unit, with a benchmark chosen and without.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.report_store import build_store
from playlisteval.analytics import Analytics, judgment_matrix, rates, run_rates, scope_figure
from playlisteval.analytics.cluster_sums import Sums
from playlisteval.analytics.rates import Bootstrap, aggregate, main_sql, narrow
from playlisteval.config import load_settings
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.runkey import options_hash
from playlisteval.store import open_store

ITEMS = 24


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_store(tmp_path_factory.mktemp("matrix") / "p", ITEMS, 12, 0, seed=11)
    rng = np.random.default_rng(3)
    con = sqlite3.connect(root / "playlisteval.db")
    ids = [r[0] for r in con.execute("SELECT id FROM judgment ORDER BY id")]
    gone = [i for i in ids if rng.random() < 0.15]  # runs that skipped pairs, each its own
    con.executemany("DELETE FROM judgment WHERE id = ?", [(i,) for i in gone])
    con.execute("UPDATE judgment SET verdict = NULL, score = 0.5 WHERE id % 17 = 0 OR pair_id % 13 = 0")
    # four videos over two playlists; a question's two segments often in different videos
    con.execute("UPDATE video SET playlist_id = 1 + (id % 2)")
    con.executemany("UPDATE segment SET video_id = ? WHERE id = ?",
                    [(int(rng.integers(1, 5)), s) for s in range(1, 2 * ITEMS + 1)])
    cols = [r[1] for r in con.execute("PRAGMA table_info(judge_run)")]
    settings = json.loads(con.execute("SELECT settings FROM judge_run WHERE id = 1").fetchone()[0])
    oracle = JudgeOptions.from_settings(load_settings(root), evidence="oracle", scope="oracle",
                                        swap=False).as_settings()
    extra = {101: ("judge-00", "retrieved", "10h", json.dumps({**settings, "agentic": True}), 1),
             102: ("judge-01", "oracle", "oracle", json.dumps(oracle), 1),
             103: ("judge-00", "retrieved", "domain", None, 2)}
    for run_id, (judge, evidence, scope, options, bench) in extra.items():
        given = {"id": str(run_id), "judge": f"'{judge}'", "evidence": f"'{evidence}'", "scope": f"'{scope}'",
                 "benchmark_id": str(bench), **({"settings": "?", "options_hash": "?"} if options else {})}
        con.execute(f"INSERT INTO judge_run ({', '.join(cols)}) SELECT {', '.join(given.get(c, c) for c in cols)} "
                    "FROM judge_run WHERE id = 1", [options, options_hash(json.loads(options))] if options else [])
        copied = {"run_id": str(run_id), "verdict": "CASE WHEN pair_id % 3 = 0 THEN 'A' ELSE 'B' END"}
        names = [r[1] for r in con.execute("PRAGMA table_info(judgment)") if r[1] != "id"]
        con.execute(f"INSERT INTO judgment ({', '.join(names)}) SELECT {', '.join(copied.get(c, c) for c in names)} "
                    "FROM judgment WHERE run_id = 2 AND pair_id % 4 <> 1")
    con.execute("INSERT INTO benchmark (id, name, seed, created_at, drawn_at) VALUES (2, 'bench-two', 1, 0, 0)")
    con.commit()
    con.close()
    return root


@pytest.fixture(scope="module", params=["question", "video", "playlist"])
def an(project_dir: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Analytics, Bootstrap]]:
    settings = load_settings(project_dir)
    with Analytics(open_store(settings), settings, file=False) as analytics:
        yield analytics, Bootstrap(seed=7, unit=request.param)


BENCHES = [{"id": 1, "name": "bench-big"}, None]


def same(got: dict[Any, Sums], want: dict[Any, Sums]) -> None:
    assert sorted(got, key=repr) == sorted(want, key=repr)
    for key, w in want.items():
        g = got[key]
        order_g, order_w = np.lexsort(g.cells.T[::-1]), np.lexsort(w.cells.T[::-1])
        assert np.array_equal(g.cells[order_g], w.cells[order_w]), key
        by_label_g = dict(zip(g.labels.tolist(), g.cells.tolist(), strict=True))
        by_label_w = dict(zip(w.labels.tolist(), w.cells.tolist(), strict=True))
        assert by_label_g == by_label_w, key  # the same clusters, numbered alike
        if w.members is not None:
            assert g.members is not None
            assert dict(zip(g.labels.tolist(), g.members.tolist(), strict=True)) == dict(
                zip(w.labels.tolist(), w.members.tolist(), strict=True)), key


@pytest.mark.parametrize("bench", BENCHES, ids=["bench", "every-bench"])
def test_leaderboard_sums(an: tuple[Analytics, Bootstrap], bench: dict[str, Any] | None) -> None:
    analytics, boot = an
    base, params = main_sql(bench, "f.scope = 'domain' AND f.evidence IN ('retrieved', 'uniform')")
    m = judgment_matrix.of(analytics, bench, boot.unit)
    runs = rates.main_runs(m, lambda r: r.scope == "domain" and r.evidence in ("retrieved", "uniform"),
                           lambda r: (r.judge, r.evidence))
    same(judgment_matrix.single(m, runs, "domain"),
         aggregate(analytics, base, params, ("judge", "evidence", "domain"), boot))
    want = aggregate(analytics, f"WITH b AS MATERIALIZED ({narrow(base, 'judge, evidence, domain')}) "
                                "SELECT r.judge, r.domain, r.item_id, r.score - u.score AS d "
                                "FROM b AS r JOIN b AS u ON u.judge = r.judge AND u.pair_id = r.pair_id "
                                "WHERE r.evidence = 'retrieved' AND u.evidence = 'uniform'",
                     params, ("judge", "domain"), boot, ("d",))
    got = judgment_matrix.paired(m, {(j,): [(u, r) for r in rs for u in runs.get((j, "uniform"), [])]
                                     for (j, e), rs in runs.items() if e == "retrieved"},
                                 judgment_matrix.difference, "domain")
    same(got, want)
    assert want  # the comparison compared something


@pytest.mark.parametrize("bench", BENCHES, ids=["bench", "every-bench"])
def test_judge_difference_sums(an: tuple[Analytics, Bootstrap], bench: dict[str, Any] | None) -> None:
    analytics, boot = an
    wanted = [("judge-00", "judge-01"), ("judge-01", "judge-02"), ("judge-00", "judge-02")]
    base, params = main_sql(bench, "f.scope = 'domain' AND f.evidence = ?")
    pairs_sql = ", ".join("(?, ?)" for _ in wanted)
    want = aggregate(analytics, f"WITH b AS MATERIALIZED ({narrow(base, 'judge')}), w(a, b) AS (VALUES {pairs_sql}), "
                                "x AS MATERIALIZED (SELECT b.*, w.b AS other FROM b JOIN w ON w.a = b.judge) "
                                "SELECT x.judge AS judge_a, y.judge AS judge_b, x.item_id, x.score AS a, y.score AS b, "
                                "CASE WHEN x.score IN (0, 1) AND y.score IN (0, 1) THEN 0 ELSE 1 END AS odd "
                                "FROM x JOIN b AS y ON y.judge = x.other AND y.pair_id = x.pair_id",
                     [*params, "retrieved", *(n for w in wanted for n in w)], ("judge_a", "judge_b"), boot,
                     ("a", "b", "odd"))
    m = judgment_matrix.of(analytics, bench, boot.unit)
    runs = rates.main_runs(m, lambda r: r.scope == "domain" and r.evidence == "retrieved", lambda r: r.judge)
    got = judgment_matrix.paired(m, {(a, b): [(x, y) for x in runs.get(a, []) for y in runs.get(b, [])]
                                     for a, b in wanted}, rates._both_sides)
    same(got, want)
    assert any(s.cells[:, 3].any() for s in want.values())  # no-verdicts among them


def _protocol_base(bench: dict[str, Any] | None) -> tuple[str, list[Any]]:
    b, params = rates.bench_filter(bench)
    sql = (f"WITH ag AS ({judgment_matrix.AGENTIC_RUNS}) SELECT f.*, CASE WHEN f.run_id IN (SELECT run_id FROM ag) "
           "THEN 'agentic' WHEN f.evidence = 'oracle' THEN 'oracle evidence' ELSE f.evidence END AS line "
           "FROM judgment_facts AS f WHERE NOT f.swapped AND "
           f"(f.run_id IN (SELECT run_id FROM main_run) OR f.run_id IN (SELECT run_id FROM ag)) AND {b}")
    return sql, params


@pytest.mark.parametrize("bench", BENCHES, ids=["bench", "every-bench"])
def test_scope_figure_sums(an: tuple[Analytics, Bootstrap], bench: dict[str, Any] | None) -> None:
    analytics, boot = an
    base, params = _protocol_base(bench)
    points = aggregate(analytics, base, params, ("judge", "line", "scope"), boot)
    got_points = scope_figure.protocol_accuracy(analytics, bench, boot)
    assert [(r["judge"], r["line"], r["scope"], r["n"]) for r in got_points] == [
        (*k, s.n) for k, s in sorted(points.items())]
    assert ("judge-00", "agentic", "10h") in points and ("judge-01", "oracle evidence", "oracle") in points
    wanted = [("judge-00", "retrieved", "10h", "domain"), ("judge-01", "retrieved", "10h", "domain"),
              ("judge-00", "agentic", "10h", "domain")]
    values = ", ".join("(?, ?, ?, ?)" for _ in wanted)
    want = aggregate(analytics, f"WITH b AS MATERIALIZED (SELECT benchmark_id, judge, line, scope, pair_id, item_id, "
                                f"score FROM ({base})), w(judge, line, small, large) AS (VALUES {values}), "
                                "s AS MATERIALIZED (SELECT w.judge, w.line, w.small, w.large, b.benchmark_id, "
                                "b.pair_id, b.score FROM w JOIN b ON b.judge = w.judge AND b.line = w.line "
                                "AND b.scope = w.small) SELECT s.judge, s.line, s.small, s.large, l.item_id, "
                                "l.score - s.score AS d FROM s JOIN b AS l ON l.judge = s.judge AND l.line = s.line "
                                "AND l.scope = s.large AND l.pair_id = s.pair_id AND l.benchmark_id = s.benchmark_id",
                     [*params, *(v for step in wanted for v in step)], ("judge", "line", "small", "large"), boot,
                     ("d",))
    m = judgment_matrix.of(analytics, bench, boot.unit)
    runs = scope_figure._runs(m)
    got = judgment_matrix.paired(m, {step: [(s.run_id, t.run_id) for s in runs[step[:3]]
                                            for t in runs[(step[0], step[1], step[3])]
                                            if s.benchmark_id == t.benchmark_id]
                                     for step in wanted}, judgment_matrix.difference)
    same(got, want)
    assert len(want) == 2  # the agentic run has no full-domain twin on its line


@pytest.mark.parametrize("bench", BENCHES, ids=["bench", "every-bench"])
def test_gap_curve_and_position_bias_sums(an: tuple[Analytics, Bootstrap], bench: dict[str, Any] | None) -> None:
    analytics, boot = an
    where, params = rates.bench_filter(bench)
    m = judgment_matrix.of(analytics, bench, boot.unit)
    want = aggregate(analytics, f"SELECT f.* FROM judgment_facts AS f WHERE {where}", params, ("run_id", "gap"), boot)
    same(judgment_matrix.single(m, {(r.run_id,): [r.run_id] for r in m.runs if r.judged}, "gap"), want)
    couples = [(1, 3), (5, 7), (9, 11)]
    values = ", ".join(f"({f}, {v})" for f, v in couples)
    want = aggregate(analytics, f"""
        WITH c(forward_run, reversed_run) AS (VALUES {values}), fwd AS MATERIALIZED (
            SELECT c.forward_run, c.reversed_run, f.pair_id, f.item_id, f.score, f.verdict
            FROM c JOIN judgment_facts AS f ON f.run_id = c.forward_run)
        SELECT fwd.forward_run, fwd.reversed_run, fwd.item_id,
            fwd.score AS accuracy_forward, rev.score AS accuracy_reversed,
            CASE WHEN fwd.verdict = 'A' THEN 1.0 ELSE 0.0 END AS picked_a_forward,
            CASE WHEN rev.verdict = 'A' THEN 1.0 ELSE 0.0 END AS picked_a_reversed,
            CASE WHEN fwd.verdict IS NOT NULL AND fwd.verdict = rev.verdict THEN 1.0 ELSE 0.0 END AS letter_agreement,
            CASE WHEN fwd.score = 1 AND rev.score = 1 THEN 1.0 ELSE 0.0 END AS solved_both,
            CASE WHEN fwd.score = 0 AND rev.score = 0 THEN 1.0 ELSE 0.0 END AS wrong_both,
            fwd.score - rev.score AS forward_minus_reversed
        FROM fwd JOIN judgment_core AS rev ON rev.run_id = fwd.reversed_run AND rev.pair_id = fwd.pair_id""",
                     [], ("forward_run", "reversed_run"), boot, run_rates.BIAS_RATES)
    same(judgment_matrix.paired(m, {c: [c] for c in couples}, run_rates._bias_values), want)
    assert len(want) == 3


def test_the_matrix_is_read_once_per_analytics(an: tuple[Analytics, Bootstrap]) -> None:
    analytics, boot = an
    first = judgment_matrix.of(analytics, BENCHES[0], boot.unit)
    assert judgment_matrix.of(analytics, BENCHES[0], boot.unit) is first
    assert judgment_matrix.of(analytics, None, boot.unit) is not first
    assert np.isnan(first.score).any() and (first.verdict == 0).any()  # skipped pairs, replies without a verdict
