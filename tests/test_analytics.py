"""Every analytics view against numbers worked out by hand from tests/analytics_fixtures.py."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from playlisteval.analytics import Analytics, views
from playlisteval.eval import metrics
from playlisteval.eval.verdict_scoring import score_lines
from playlisteval.store import open_store
from tests import analytics_fixtures
from tests.helpers import project

IDCG2 = 1 + 1 / math.log2(3)


@pytest.fixture
def an(tmp_path: Path) -> Iterator[tuple[Analytics, analytics_fixtures.Fixture]]:
    settings = project(tmp_path)
    engine = open_store(settings)
    fx = analytics_fixtures.build(engine)
    with Analytics(engine, settings) as analytics:
        yield analytics, fx


def one(an: Analytics, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
    rows = an.rows(sql, params)
    assert len(rows) == 1, rows
    return rows[0]


def test_every_packaged_view_is_created_and_described(an: Any) -> None:
    analytics, _ = an
    names = analytics.view_names()
    assert names == [v.name for v in views()]
    assert {"leaderboard", "accuracy_by_gap", "accuracy_by_scope", "position_bias", "retrieval", "benchmark_stats",
            "cost_by_domain", "cost_by_model", "eval_cost_by_judge"} <= set(names)
    assert all(v.description for v in views())


def test_leaderboard_retrieved_uniform_and_difference(an: Any) -> None:
    analytics, _ = an
    rows = {(r["judge"], r["domain"]): r for r in analytics.rows("SELECT * FROM leaderboard")}
    alpha = rows[("alpha", "All")]
    # retrieved main pass: p1 A ✓, p2 B ✓, p3 B ✗, p4 no verdict (0.5) → 2.5 / 4; the later sweep is ignored
    assert alpha["retrieved"] == pytest.approx(0.625)
    assert alpha["uniform"] == pytest.approx(0.5)  # p1 ✗, p2 ✓, p3 ✓, p4 ✗
    assert alpha["difference"] == pytest.approx(0.125)
    assert (alpha["n_retrieved"], alpha["no_verdict_retrieved"], alpha["n_uniform"]) == (4, 1, 4)
    assert rows[("alpha", "Education")]["retrieved"] == pytest.approx(1.0)
    assert rows[("alpha", "Education")]["difference"] == pytest.approx(0.5)
    assert rows[("alpha", "Drama")]["retrieved"] == pytest.approx(0.25)
    assert rows[("alpha", "Drama")]["difference"] == pytest.approx(-0.25)
    beta = rows[("beta", "All")]
    assert (beta["retrieved"], beta["n_retrieved"], beta["uniform"], beta["difference"]) == (1.0, 2, None, None)
    assert set(rows) == {("alpha", d) for d in ("All", "Education", "Drama")} | {
        ("beta", d) for d in ("All", "Education", "Drama")}


def test_accuracy_by_run_keeps_sweeps_and_swaps(an: Any) -> None:
    analytics, fx = an
    by_run = {r["run_id"]: r for r in analytics.rows("SELECT * FROM judge_accuracy_by_run WHERE domain = 'All'")}
    assert by_run[fx.runs["alpha_sweep"]]["accuracy"] == pytest.approx(1.0)
    assert by_run[fx.runs["alpha_swapped"]]["accuracy"] == pytest.approx(0.5)
    assert by_run[fx.runs["alpha_retrieved"]]["no_verdict"] == 1


def test_views_score_like_the_verdicts_scorer(an: Any) -> None:
    analytics, fx = an
    rows = analytics.rows("SELECT pair_id, verdict, a_is_better FROM judgment_facts WHERE run_id = ?",
                          [fx.runs["alpha_retrieved"]])
    import json

    scored = score_lines([json.dumps(r) for r in rows])
    view = one(analytics, "SELECT accuracy, no_verdict FROM judge_accuracy_by_run WHERE run_id = ? AND domain = 'All'",
               [fx.runs["alpha_retrieved"]])
    assert (scored.accuracy, scored.no_verdict) == (pytest.approx(view["accuracy"]), view["no_verdict"])


def test_accuracy_by_gap_and_by_scope(an: Any) -> None:
    analytics, _ = an
    gap = {r["gap"]: r for r in analytics.rows(
        "SELECT * FROM accuracy_by_gap WHERE judge = 'alpha' AND evidence = 'retrieved' AND scope = 'domain'")}
    assert gap[1]["accuracy"] == pytest.approx(2 / 3) and gap[1]["n"] == 3  # p1 ✓, p2 ✓, p3 ✗
    assert gap[2]["accuracy"] == pytest.approx(0.5) and gap[2]["n"] == 1  # p4: no verdict
    scope = {(r["evidence"], r["scope"]): r["accuracy"] for r in analytics.rows(
        "SELECT * FROM accuracy_by_scope WHERE judge = 'alpha'")}
    assert scope == {("retrieved", "domain"): pytest.approx(0.625), ("retrieved", "10h"): pytest.approx(0.5),
                     ("uniform", "domain"): pytest.approx(0.5), ("oracle", "oracle"): pytest.approx(1.0)}


def test_position_bias_table(an: Any) -> None:
    analytics, _ = an
    row = one(analytics, "SELECT * FROM position_bias")
    assert (row["judge"], row["evidence"], row["scope"], row["n"]) == ("alpha", "retrieved", "domain", 4)
    # forward A,B,B,– against reversed A,A,A,A (the better answer changed sides)
    assert row["accuracy_forward"] == pytest.approx(0.625)
    assert row["accuracy_reversed"] == pytest.approx(0.5)  # p1 ✗, p2 ✓, p3 ✗, p4 ✓
    assert row["picked_a_forward"] == pytest.approx(0.25)
    assert row["picked_a_reversed"] == pytest.approx(1.0)
    assert row["letter_agreement"] == pytest.approx(0.25)  # p1 only; a missing verdict never agrees
    assert row["solved_both"] == pytest.approx(0.25)  # p2
    assert row["wrong_both"] == pytest.approx(0.25)  # p3
    assert row["consistent"] is False  # 25% is not below the 25% threshold


def test_pair_difficulty(an: Any) -> None:
    analytics, fx = an
    rows = {r["pair_id"]: (r["judges"], r["accuracy"]) for r in analytics.rows("SELECT * FROM pair_difficulty")}
    # beta's run judged 2 of its 4 pairs and is not finished: it does not count until it is
    assert rows == {fx.pairs["p1"]: (1, 1.0), fx.pairs["p2"]: (1, 1.0), fx.pairs["p3"]: (1, 0.0),
                    fx.pairs["p4"]: (1, 0.5)}


def test_retrieval_hits_ndcg_and_chance_floors(an: Any) -> None:
    analytics, fx = an
    rows = {(r["run_id"], r["domain"]): r for r in analytics.rows("SELECT * FROM retrieval")}
    overall = rows[(fx.retrieval_runs["k10"], "All")]
    # ranks (1, 3) N=288, (11, 2) N=288, (50, 60) N=100
    assert overall["n"] == 3
    assert overall["hit_both"] == pytest.approx(1 / 3)
    assert overall["hit_any"] == pytest.approx(2 / 3)
    assert (overall["hit_seg1"], overall["hit_seg2"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    ndcg = ((1 + 1 / math.log2(4)) / IDCG2 + (1 / math.log2(3)) / IDCG2 + 0) / 3
    assert overall["ndcg"] == pytest.approx(ndcg)
    assert overall["ndcg"] == pytest.approx(statistics.mean(
        metrics.ndcg_from_ranks(r, 10) for r in ((1, 3), (11, 2), (50, 60))))
    any_288, both_288 = 1 - (278 * 277) / (288 * 287), 90 / (288 * 287)
    any_100, both_100 = 1 - (90 * 89) / (100 * 99), 90 / (100 * 99)
    assert overall["chance_any"] == pytest.approx((2 * any_288 + any_100) / 3)
    assert overall["chance_both"] == pytest.approx((2 * both_288 + both_100) / 3)
    chance_ndcg = [metrics.chance_ndcg(n, 10) for n in (288, 288, 100)]
    assert overall["chance_ndcg"] == pytest.approx(statistics.mean(chance_ndcg))
    edu = rows[(fx.retrieval_runs["k10"], "Education")]
    assert (edu["n"], edu["hit_both"], edu["hit_any"]) == (2, 0.5, 1.0)
    assert edu["chance_any"] == pytest.approx(any_288)
    assert edu["chance_both"] == pytest.approx(both_288)
    # k = 1: IDCG over min(2, 1) = 1 position; both can never be in a top 1
    k1 = rows[(fx.retrieval_runs["k1"], "All")]
    assert (k1["hit_both"], k1["hit_any"], k1["ndcg"], k1["chance_both"]) == (0.0, 1.0, 1.0, 0.0)
    assert k1["chance_any"] == pytest.approx(2 / 288)


def test_chance_floors_at_the_papers_numbers() -> None:
    # SPEC R3: at N = 288, k = 10: 6.8% and 0.11%
    assert round(100 * metrics.chance_any(288, 10), 1) == 6.8
    assert round(100 * metrics.chance_both(288, 10), 2) == 0.11
    assert metrics.chance_any(288, 10) == pytest.approx(1 - math.comb(286, 10) / math.comb(288, 10))
    assert metrics.chance_both(288, 10) == pytest.approx(10 * 9 / (288 * 287))
    assert metrics.idcg(2, 10) == pytest.approx(1.6309, abs=1e-4)


def test_benchmark_statistics(an: Any) -> None:
    analytics, _ = an
    row = one(analytics, "SELECT * FROM benchmark_stats")
    assert row["benchmark"] == "bench-1"
    assert (row["domains"], row["playlists"], row["videos"]) == (2, 3, 5)  # the skipped video is not counted
    assert (row["accepted_questions"], row["kept_questions"], row["kept_pairs"]) == (4, 2, 4)
    assert (row["sampled_questions"], row["benchmark_questions"], row["pairs"]) == (3, 2, 4)
    assert (row["question_words_mean"], row["question_words_max"]) == (6.0, 7)
    assert (row["gold_words_mean"], row["gold_words_max"]) == (15.0, 20)  # citation not counted
    assert row["degraded_words_mean"] == pytest.approx((12 + 8 + 9 + 11 + 18 + 22 + 20 + 19) / 8)
    assert row["degraded_words_max"] == 22
    # chosen − rejected: p1 10−12, p2 12−8, p3 20−18, p4 22−19
    assert row["chosen_minus_rejected_words"] == pytest.approx((-2 + 4 + 2 + 3) / 4)
    assert row["longer_answer_wins"] == pytest.approx(0.75)


def test_benchmark_statistics_agree_with_the_dataset_card(an: Any, tmp_path: Path) -> None:
    """The SQL view and select/stats.py (the export's dataset card) count the same way."""
    from playlisteval.select.stats import benchmark_stats

    analytics, fx = an
    row = one(analytics, "SELECT * FROM benchmark_stats")
    card = benchmark_stats(open_store(project(tmp_path)), fx.benchmark_id)
    assert (card.domains, card.playlists, card.videos, card.accepted_questions) == (
        row["domains"], row["playlists"], row["videos"], row["accepted_questions"])
    assert (card.sampled_before, card.sampled_after, card.pairs) == (
        row["sampled_questions"], row["benchmark_questions"], row["pairs"])
    assert card.question_words.mean == row["question_words_mean"]
    assert card.question_words.max == row["question_words_max"]
    assert (card.gold_words.mean, card.gold_words.max) == (round(row["gold_words_mean"], 1), row["gold_words_max"])
    assert card.degraded_words.mean == round(row["degraded_words_mean"], 1)
    assert card.degraded_words.max == row["degraded_words_max"]
    assert card.chosen_minus_rejected_words == round(row["chosen_minus_rejected_words"], 1)
    assert card.longer_answer_wins_pct == round(100 * row["longer_answer_wins"], 1)


def test_cost_by_domain(an: Any) -> None:
    analytics, _ = an
    rows = {r["domain"]: r for r in analytics.rows("SELECT * FROM cost_by_domain")}
    edu = rows["Education"]  # runs P1: $3.50 / 2 accepted, P2: $2.60 / 1 accepted
    assert (edu["runs"], edu["questions"]) == (2, 3)
    assert edu["spend"] == pytest.approx(6.1)
    assert edu["pooled"] == pytest.approx(6.1 / 3)
    assert edu["mean"] == pytest.approx((1.75 + 2.6) / 2)
    assert edu["sd"] == pytest.approx(statistics.stdev([1.75, 2.6]))
    assert (edu["min"], edu["max"]) == (pytest.approx(1.75), pytest.approx(2.6))
    drama = rows["Drama"]  # one run: $1.00 accepted item + $0.40 discarded item
    assert (drama["runs"], drama["questions"], drama["sd"]) == (1, 1, None)
    assert drama["spend"] == pytest.approx(1.4) and drama["mean"] == pytest.approx(1.4)
    every = rows["All"]
    assert (every["runs"], every["questions"]) == (3, 4)
    assert every["spend"] == pytest.approx(7.5) and every["pooled"] == pytest.approx(7.5 / 4)
    assert every["sd"] == pytest.approx(statistics.stdev([1.75, 2.6, 1.4]))


def test_cost_by_model_and_role(an: Any) -> None:
    analytics, _ = an
    rows = {r["model"]: r for r in analytics.rows("SELECT * FROM cost_by_model")}
    flash = rows["gemini/flash"]
    assert (flash["calls"], flash["cache_hits"], flash["tokens"], flash["roles"]) == (6, 1, 4150, "B")
    assert flash["spend"] == pytest.approx(5.0)
    assert flash["share"] == pytest.approx(5.0 / 7.5)
    assert flash["per_question"] == pytest.approx(5.0 / 4)
    assert rows["vllm/weak"]["gpu_hours"] == pytest.approx(0.5)
    assert rows["qwen/plus"]["share"] == pytest.approx(0.5 / 7.5)
    assert rows["All"]["spend"] == pytest.approx(7.5) and rows["All"]["per_question"] == pytest.approx(1.875)
    assert "sim/embed" not in rows  # index calls are not build cost
    roles = {(r["purpose"], r["role"]): r for r in analytics.rows("SELECT * FROM cost_by_role")}
    assert roles[("build", "B")]["failed"] == 1 and roles[("build", "B")]["share"] == pytest.approx(5.0 / 7.5)
    assert roles[("eval", "G")]["spend"] == pytest.approx(4.55) and roles[("index", "index")]["share"] == 1.0


def test_eval_cost_per_judge(an: Any) -> None:
    analytics, _ = an
    rows = {(r["judge"], r["protocol"]): r for r in analytics.rows("SELECT * FROM eval_cost_by_judge")}
    # a row per protocol (issue 41): the retrieved and the uniform main passes are never averaged together
    main, uniform = rows[("alpha", "retrieved · domain · main")], rows[("alpha", "uniform · domain · main")]
    assert (main["passes"], main["tokens"], uniform["passes"], uniform["tokens"]) == (1, 330, 1, 200)
    assert main["spend_per_pass"] == pytest.approx(0.3) and uniform["spend_per_pass"] == pytest.approx(0.2)
    assert main["main"] and uniform["main"]
    beta = rows[("beta", "retrieved · domain · main")]
    assert beta["gpu_hours"] == pytest.approx(1.0) and beta["spend"] == pytest.approx(4.0)
    assert rows[("openai/gpt", "no judge run")]["passes"] == 1  # a call naming no judge run: charged to its model
    every = rows[("All", "every protocol")]
    assert every["passes"] == 4 and every["spend"] == pytest.approx(4.55) and every["spend_per_pass"] is None


def test_threshold_is_a_setting(tmp_path: Path) -> None:
    settings = project(tmp_path, analytics__consistent_letter_agreement=0.3)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    with Analytics(engine, settings) as analytics:
        assert one(analytics, "SELECT consistent FROM position_bias")["consistent"] is True


@pytest.mark.parametrize("n, k", [(2, 1), (5, 2), (8, 3), (7, 7), (6, 10)])
def test_chance_floors_by_enumerating_every_ranking(n: int, k: int) -> None:
    """Every ordering of n segments, two of them gold (0 and 1): the closed forms are the exact means."""
    import itertools

    hits_any = hits_both = ndcg = 0.0
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        ranks = (order.index(0) + 1, order.index(1) + 1)
        hits_any += min(ranks) <= k
        hits_both += max(ranks) <= k
        ndcg += metrics.ndcg_from_ranks(ranks, k)
    assert metrics.chance_any(n, k) == pytest.approx(hits_any / len(orders))
    assert metrics.chance_both(n, k) == pytest.approx(hits_both / len(orders))
    assert metrics.chance_ndcg(n, k) == pytest.approx(ndcg / len(orders))
