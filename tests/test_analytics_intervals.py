"""Rates with intervals over the analytics views (analytics/rates.py, science.py), on the hand-worked
store of tests/analytics_fixtures.py: the estimates are the views' numbers, the intervals are those of
tests/stat_reference.py on the per-question values worked by hand, the science checks (accuracy by gap of the weak
judges and of every run, the shortcut audit) and the leaderboard's --json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import delete

from playlisteval.analytics import Analytics, mover, rates, run_rates, science
from playlisteval.analytics.rates import Bootstrap
from playlisteval.cli import main
from playlisteval.eval import runkey
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import BenchmarkGate, JudgeRun, Judgment, ModelCall, Pair
from tests import analytics_fixtures, stat_reference
from tests.helpers import project

BOOT = Bootstrap(seed=7)
BENCH = {"id": 0, "name": "bench-1"}


@pytest.fixture
def store(tmp_path: Path) -> tuple[Any, Any, analytics_fixtures.Fixture]:
    settings = project(tmp_path)
    engine = open_store(settings)
    return settings, engine, analytics_fixtures.build(engine)


@pytest.fixture
def an(store: Any) -> Iterator[tuple[Analytics, analytics_fixtures.Fixture]]:
    settings, engine, fx = store
    BENCH["id"] = fx.benchmark_id
    with Analytics(engine, settings) as analytics:
        yield analytics, fx


def bounds(iv: Any) -> tuple[float, float, float]:
    return iv.estimate, iv.low, iv.high


def test_leaderboard_estimates_are_the_views_and_intervals_are_the_exact_bootstrap(an: Any) -> None:
    analytics, _ = an
    rows = {(r["judge"], r["domain"]): r for r in rates.leaderboard(analytics, BENCH, BOOT, domains=True)}
    for r in rows.values():  # the interval's estimate is the number the view shows, cell for cell
        for key in ("retrieved", "uniform", "difference"):
            ci = r[f"{key}_ci"]
            assert (ci is None) == (r[key] is None)
            if ci is not None:
                assert ci.estimate == pytest.approx(r[key])
    alpha = rows[("alpha", "All")]
    # two questions: Education (p1 ✓, p2 ✓) and Drama (p3 ✗, p4 ½): Wilson on the effective size, t(1)
    assert bounds(alpha["retrieved_ci"]) == pytest.approx(stat_reference.rate([1, 1, 0, 0.5], "EEDD"))
    assert (alpha["retrieved_ci"].n, alpha["retrieved_ci"].clusters) == (4, 2)
    # retrieved − uniform per question: Education +1 over 2 pairs, Drama −½ over 2 (only the totals matter)
    est, low, high, p = stat_reference.difference([1, 0, -0.5, 0], "EEDD")
    assert bounds(alpha["difference_ci"]) == pytest.approx((est, low, high)) and low < 0 < high
    assert alpha["difference_ci"].p_value == pytest.approx(p)
    assert alpha["difference_ci"].p_sign_flip == pytest.approx(1.0)  # sign flips of (+1, −½) all reach |½|
    edu = rows[("alpha", "Education")]["retrieved_ci"]  # one question: no interval, not a zero-width one
    assert edu.estimate == 1.0 and edu.low is None and edu.high is None
    assert rows[("beta", "All")]["uniform_ci"] is None  # beta never ran with uniform evidence


def test_judge_differences_and_scope_steps_are_paired_over_shared_pairs(an: Any) -> None:
    analytics, fx = an
    diffs = rates.judge_differences(analytics, BENCH, BOOT, ["beta", "alpha"])
    assert [(d["judge_a"], d["judge_b"], d["n"]) for d in diffs] == [("beta", "alpha", 2)]
    # beta and alpha both judged p1 (1 vs 1) and p3 (1 vs 0): +1 in Drama only, mean +½; two clusters. 0/1
    # verdicts: MOVER from the two sides' beta-binomial intervals (issue 40), no longer the CR2 t of the
    # differences
    iv = diffs[0]["difference_ci"]
    assert iv.method == mover.METHOD
    want = stat_reference.mover([1, 1], [1, 0], "ED")
    assert bounds(iv) == pytest.approx(want[:3], abs=1e-6)
    assert iv.p_value == pytest.approx(want[3], rel=1e-3)
    scopes = rates.scope_accuracy(analytics, BENCH, BOOT)
    view = {(r["judge"], "oracle" if r["evidence"] == "oracle" else r["scope"]): r["accuracy"]
            for r in analytics.rows("SELECT * FROM accuracy_by_scope WHERE evidence IN ('retrieved', 'oracle')")}
    assert {(r["judge"], r["x"]): r["accuracy_ci"].estimate for r in scopes} == pytest.approx(view)
    steps = {(s["from"], s["to"]): s["difference_ci"] for s in rates.scope_steps(
        analytics, BENCH, BOOT, [r for r in scopes if r["judge"] == "alpha"], ["oracle", "10h", "domain"])}
    assert set(steps) == {("oracle", "10h"), ("10h", "domain"), ("oracle", "domain")}
    # oracle 1, 1, 1, 1 → domain 1, 1, 0, ½: −0.375 over the same four pairs
    assert steps[("oracle", "domain")].estimate == pytest.approx(0.625 - 1.0)


def test_position_bias_and_retrieval_carry_intervals_matching_the_views(an: Any) -> None:
    analytics, fx = an
    bias = run_rates.position_bias(analytics, BENCH, BOOT)
    assert len(bias) == 1
    row = bias[0]
    for share in ("accuracy_forward", "accuracy_reversed", "picked_a_forward", "letter_agreement", "wrong_both"):
        assert row[f"{share}_ci"].estimate == pytest.approx(row[share])
    diff = row["forward_minus_reversed_ci"]
    assert diff.estimate == pytest.approx(row["accuracy_forward"] - row["accuracy_reversed"])
    assert diff.p_value is not None
    for r in rates.retrieval(analytics, BOOT):
        for rate in rates.RETRIEVAL_RATES:
            assert r[f"{rate}_ci"].estimate == pytest.approx(r[rate])
    k10 = next(r for r in rates.retrieval(analytics, BOOT, fx.retrieval_runs["k10"]) if r["domain"] == "All")
    # Hit_both@10 of questions 1, 2, 4: 1, 0, 0; three questions, one each
    assert bounds(k10["hit_both_ci"]) == pytest.approx(stat_reference.rate([1, 0, 0], "124"))


def test_bootstrap_unit_playlist_resamples_questions_of_a_playlist_together(an: Any) -> None:
    analytics, fx = an
    unit = Bootstrap(seed=7, unit="playlist")
    k10 = next(r for r in rates.retrieval(analytics, unit, fx.retrieval_runs["k10"]) if r["domain"] == "All")
    # questions 1 and 2 share playlist P1 (1 hit of 2), question 4 is P3's (0 of 1): two clusters, t(1)
    assert bounds(k10["hit_both_ci"]) == pytest.approx(stat_reference.rate([1, 0, 0], ["P1", "P1", "P3"]))
    assert k10["hit_both_ci"].df == 1
    assert k10["hit_both_ci"].clusters == 2
    with pytest.raises(ValueError, match="unknown bootstrap unit"):
        rates.retrieval(analytics, Bootstrap(seed=7, unit="pair"))


def test_by_video_a_question_belongs_to_both_videos_it_cites(store: Any) -> None:
    """Issue 40: question 4's second segment moved to question 1's video — by video, the two questions are
    linked through that video (dyadic clusters over 2 videos: t on 1 df), not counted apart."""
    from playlisteval.store.tables import Item, Seed, Segment

    settings, engine, fx = store
    with transaction(engine) as s:
        video1 = s.get(Segment, s.get(Seed, s.get(Item, fx.items[1]).seed_id).segment1_id).video_id
        seed4 = s.get(Seed, s.get(Item, fx.items[4]).seed_id)
        moved = s.get(Segment, seed4.segment2_id)
        video4 = s.get(Segment, seed4.segment1_id).video_id
        moved.video_id, moved.idx = video1, 7  # a third segment of video 1
        s.add(moved)
    with Analytics(engine, settings) as analytics:
        rows = rates.leaderboard(analytics, {"id": fx.benchmark_id}, Bootstrap(seed=7, unit="video"))
    ci = next(r for r in rows if r["judge"] == "alpha")["retrieved_ci"]
    # Education (video 1 twice): p1 ✓, p2 ✓; Drama (videos 4 and 1): p3 ✗, p4 ½
    expected = stat_reference.rate_dyadic([1, 1, 0, 0.5], [video1, video1, video4, video4], [video1] * 4)
    assert bounds(ci) == pytest.approx(expected) and ci.df == 1 and ci.clusters == 2


def plant_weak_verdicts(engine: Any, fx: analytics_fixtures.Fixture) -> None:
    """The difficulty gate's record on the fixture's pairs (sides as the weak judges saw them), as the
    benchmark keeps it (benchmark_gate, p1x a dropped pair); the pairs themselves hold another draw's
    record (every verdict right, another first judge), which the benchmark's figures must not read."""
    records = {  # pair: (a_is_better, F_first verdict, F_second verdict, F_second outcome)
        "p1": (True, "A", "B", "verdict"),  # gap 1: F_first ✓, F_second ✗
        "p2": (False, "B", None, "no_verdict"),  # gap 1: ✓, ½
        "p1x": (True, "B", "A", "verdict"),  # gap 2: ✗, ✓
        "p3": (False, "B", "B", "verdict"),  # gap 1: ✓, ✓
        "p4": (True, "A", "A", "error"),  # gap 2: ✓, a failed call (left out)
    }
    with transaction(engine) as s:
        for name, (a_better, first, second, outcome) in records.items():
            pair = s.get(Pair, fx.pairs[name])
            own = {"a_is_better": a_better, "evidence": {"mode": "oracle"},
                   "F_first": {"model": "sim/weak-judge", "verdict": first, "outcome": "verdict"},
                   "F_second": {"model": "vllm/weak-b", "verdict": second, "outcome": outcome}}
            s.add(BenchmarkGate(benchmark_id=fx.benchmark_id, pair_id=pair.id, difficulty=own, kept=pair.kept))
            right = "A" if a_better else "B"
            pair.difficulty = {"a_is_better": a_better, "evidence": {"mode": "oracle"},
                               "F_first": {"model": "sim/judge", "verdict": right, "outcome": "verdict"},
                               "F_second": {"model": "vllm/weak-b", "verdict": right, "outcome": "verdict"}}
            s.add(pair)


def test_weak_judges_accuracy_by_gap(store: Any) -> None:
    settings, engine, fx = store
    plant_weak_verdicts(engine, fx)
    with Analytics(engine, settings) as analytics:
        curves = science.weak_gap_curves(analytics, {"id": fx.benchmark_id}, BOOT)
    got = {(r["role"], r["gap"]): (r["n"], r["accuracy_ci"].estimate) for r in curves}
    assert got == {("F_first", 1): (3, 1.0), ("F_first", 2): (2, 0.5), ("F_first", None): (5, 0.8),
                   ("F_second", 1): (3, pytest.approx(0.5)), ("F_second", 2): (1, 1.0),
                   ("F_second", None): (4, pytest.approx(0.625))}
    labels = {r["label"] for r in curves}
    assert labels == {"F_first: sim/weak-judge (simulated)", "F_second: vllm/weak-b"}


def test_every_judge_run_has_a_gap_curve(an: Any) -> None:
    analytics, fx = an
    curves = science.judge_gap_curves(analytics, BENCH, BOOT)
    assert {r["run_id"] for r in curves} == set(fx.runs.values())
    first = {r["gap"]: r for r in curves if r["run_id"] == fx.runs["alpha_retrieved"]}
    # gap 1: p1 ✓ p2 ✓ (Education), p3 ✗ (Drama) → 2/3; two questions
    assert bounds(first[1]["accuracy_ci"]) == pytest.approx(stat_reference.rate([1, 1, 0], "EED"))
    assert first[None]["accuracy_ci"].estimate == pytest.approx(0.625) and first[1]["main"]
    sweep = next(r for r in curves if r["run_id"] == fx.runs["alpha_sweep"])
    assert not sweep["main"] and "sweep" in sweep["label"]


def test_shortcut_audit_computed_from_the_benchmark_or_from_a_run_and_flagged(store: Any) -> None:
    settings, engine, fx = store
    with Analytics(engine, settings) as analytics:
        audit = {r["shortcut"]: r for r in science.shortcut_audit(analytics, {"id": fx.benchmark_id}, BOOT)}
    assert list(audit) == [spec for spec, _ in science.SHORTCUTS]
    assert audit["shortcut/random"]["accuracy_ci"] is None and "not run" in audit["shortcut/random"]["source"]
    # the benchmark's sides: p1 A, p2 B, p3 A, p4 B → always-A 50 %; the better answer is the longer one
    # in p2, p3, p4 (12 > 8, 20 > 18, 22 > 19) but not p1 (10 < 12) → 75 % (the "longer answer wins" statistic)
    assert audit["shortcut/always-a"]["accuracy_ci"].estimate == pytest.approx(0.5)
    assert audit["shortcut/longer-answer"]["accuracy_ci"].estimate == pytest.approx(0.75)
    assert audit["shortcut/longer-answer"]["source"] == "computed from the benchmark"
    assert audit["shortcut/always-a"]["flagged"] is False
    with transaction(engine) as s:  # a longer-answer run, with the default options, that got every pair right
        recorded = {**analytics_fixtures.DEFAULTS["retrieved"], "scope": "domain", "swap": False}
        run = JudgeRun(benchmark_id=fx.benchmark_id, judge="shortcut/longer-answer", evidence="retrieved",
                       scope="domain", settings=recorded, options_hash=runkey.options_hash(recorded))
        s.add(run)
        s.flush()
        for name, a_better in (("p1", True), ("p2", False), ("p3", True), ("p4", False)):
            s.add(Judgment(run_id=run.id, pair_id=fx.pairs[name], a_is_better=a_better,
                           verdict="A" if a_better else "B", score=1.0))
    with Analytics(engine, settings) as analytics:
        audit = {r["shortcut"]: r for r in science.shortcut_audit(analytics, {"id": fx.benchmark_id}, BOOT)}
    longer = audit["shortcut/longer-answer"]
    assert longer["source"] == "main run (retrieved, domain)"
    # 4 of 4 right in two questions: not a zero-width [100, 100]
    assert bounds(longer["accuracy_ci"]) == pytest.approx(stat_reference.rate([1, 1, 1, 1], "EEDD"))
    # two questions cannot show a shortcut beyond chance (t on 1 df): not flagged, and the p agrees
    assert longer["accuracy_ci"].low < 0.5 and longer["flagged"] is False
    # against 50 %: the score test on t(1), as wide as the interval allows
    # to the beta-binomial searches' precision (golden section on θ: ~1e-5 in the log-likelihood)
    assert longer["accuracy_ci"].p_value == pytest.approx(stat_reference.rate_p([1, 1, 1, 1], "EEDD", 0.5), rel=1e-4)


def test_leaderboard_json_and_the_simulated_label(store: Any) -> None:
    settings, engine, fx = store
    out = CliRunner().invoke(main, ["--project", str(settings.root), "leaderboard", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["simulated"] is True  # the fixture's ledger holds a call of the sim provider
    assert {k: data["intervals"][k] for k in ("level", "unit", "seed")} == {
        "level": 0.95, "unit": "question", "seed": settings.project.seed}
    assert "Wilson" in data["intervals"]["rate"] and "t" in data["intervals"]["difference"]
    alpha = next(r for r in data["rows"] if r["judge"] == "alpha")
    est, low, high = stat_reference.rate([1, 1, 0, 0.5], "EEDD")
    assert alpha["retrieved_ci"] == {"estimate": est, "low": pytest.approx(low), "high": pytest.approx(high), "n": 4,
                                     "clusters": 2, "level": 0.95, "df": 1, "method": data["intervals"]["rate"]}
    assert alpha["difference_ci"]["p_value"] == pytest.approx(stat_reference.difference([1, 0, -0.5, 0], "EEDD")[3])
    report = settings.root / "r.html"
    printed = CliRunner().invoke(main, ["--project", str(settings.root), "report", str(report)])
    assert 'id="simulated"' in report.read_text() and "SIMULATED" in report.read_text()
    assert printed.exit_code == 0 and "SIMULATED" in printed.output  # the terminal says it too
    as_json = CliRunner().invoke(main, ["--project", str(settings.root), "report", str(report), "--json"])
    assert json.loads(as_json.output)["simulated"] is True
    with transaction(engine) as s:  # nothing of the sim left in the store: no label
        s.execute(delete(ModelCall).where(ModelCall.provider == "sim"))
    out = CliRunner().invoke(main, ["--project", str(settings.root), "leaderboard", "--json"])
    assert json.loads(out.output)["simulated"] is False
    printed = CliRunner().invoke(main, ["--project", str(settings.root), "report", str(report)])
    assert 'id="simulated"' not in report.read_text() and "SIMULATED" not in printed.output


def test_sweeps_carry_intervals_and_a_paired_difference_to_the_main_run(an: Any) -> None:
    analytics, fx = an
    rows = run_rates.sweeps(analytics, BENCH, BOOT)
    sweep = next(r for r in rows if r["run_id"] == fx.runs["alpha_sweep"])
    assert sweep["accuracy_ci"].estimate == pytest.approx(sweep["accuracy"]) == 1.0
    assert sweep["main_accuracy_ci"].estimate == pytest.approx(sweep["main_accuracy"]) == pytest.approx(0.625)
    # sweep − main per pair: p1 0, p2 0 (Education), p3 +1, p4 +½ (Drama) → per question 0 and +¾
    diff = sweep["difference_ci"]
    est, low, high, p = stat_reference.difference([0, 0, 1, 0.5], "EEDD")
    assert bounds(diff) == pytest.approx((est, low, high)) and diff.p_value == pytest.approx(p)
    assert diff.p_sign_flip == pytest.approx(1.0)  # sign flips of (0, +1.5) all reach 1.5
