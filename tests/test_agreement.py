"""Issue 40, item 8: agreement between judges — Cohen's kappa against scikit-learn and a 2 × 2 table by hand,
Krippendorff's alpha against a hand computation, the jackknife-t interval against a leave-one-cluster-out
loop, the bound at perfect agreement, and the wiring into the report and `leaderboard --json`."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from playlisteval.analytics import agreement
from playlisteval.analytics.rates import Bootstrap
from playlisteval.analytics.trust_data import Observations, Run
from playlisteval.analytics.trust_sections import agreement_rows
from playlisteval.cli import main
from playlisteval.store import open_store
from tests import analytics_fixtures
from tests.helpers import project

sklearn_metrics = pytest.importorskip("sklearn.metrics")
BOOT = Bootstrap(seed=11, resamples=200)


def observations(judges: dict[str, list[float]], per_question: int = 3) -> Observations:
    obs = Observations()
    for run_id, (judge, scores) in enumerate(sorted(judges.items()), start=1):
        obs.runs[run_id] = Run(run_id, judge, "retrieved", "domain", False, "frames+transcript", {}, True)
        for pair, score in enumerate(scores):
            obs.scores[run_id][pair] = score
            q = pair // per_question
            obs.units[pair] = {"question": f"q{q}", "video": f"v{q // 2}", "playlist": f"p{q // 4}"}
            obs.item_of[pair] = q
            obs.ratings[pair] = (5, 4)
    return obs


def _kappa_by_hand(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    both, a_only = np.sum((x == 1) & (y == 1)), np.sum((x == 1) & (y == 0))
    b_only, neither = np.sum((x == 0) & (y == 1)), np.sum((x == 0) & (y == 0))
    po = (both + neither) / n
    pe = ((both + a_only) / n) * ((both + b_only) / n) + ((b_only + neither) / n) * ((a_only + neither) / n)
    return float((po - pe) / (1 - pe))


def test_kappa_equals_sklearn_and_the_2x2_table_and_its_jackknife_a_loop_over_clusters() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.choice([0.0, 1.0, 0.5], 90, p=[0.3, 0.6, 0.1]), rng.choice([0.0, 1.0, 0.5], 90, p=[0.35, 0.6, 0.05])
    y = np.where(rng.random(90) < 0.5, x, y)  # correlated with x
    codes = np.repeat(np.arange(30), 3)
    got = agreement.kappa(x, y, codes, 0.95)
    keep = (x != 0.5) & (y != 0.5)
    want = float(sklearn_metrics.cohen_kappa_score(x[keep], y[keep]))
    assert got["estimate"] == pytest.approx(want, abs=1e-12)
    assert got["estimate"] == pytest.approx(_kappa_by_hand(x[keep], y[keep]), abs=1e-12)
    assert got["n"] == int(keep.sum()) and got["observed_agreement"] == pytest.approx(np.mean(x[keep] == y[keep]))
    clusters = sorted(set(codes[keep].tolist()))
    replicates = np.array([sklearn_metrics.cohen_kappa_score(x[keep & (codes != c)], y[keep & (codes != c)])
                           for c in clusters])
    k = len(clusters)
    se = np.sqrt((k - 1) / k * np.sum((replicates - replicates.mean()) ** 2))
    q = stats.t.ppf(0.975, k - 1)
    assert got["clusters"] == k and got["df"] == k - 1
    assert got["low"] == pytest.approx(want - q * se, abs=1e-12)
    assert got["high"] == pytest.approx(want + q * se, abs=1e-12)


def test_alpha_of_the_package_equals_a_hand_computation_on_a_tiny_case() -> None:
    # 3 judges × 4 pairs (1 right = "A", 0 wrong = "B", nan / 0.5 no verdict): pair 4 has one verdict only
    # coincidences: pair 1 o_AA 3; pair 2 o_AB = o_BA = 1; pair 3 o_AB = o_BA = 1, o_BB 1 → n_A 5, n_B 3, n 8
    # D_o = 4 / 8, D_e = 2·5·3 / (8·7); alpha = 1 − D_o / D_e = 1 − 28 / 30 = 1 / 15
    data = np.array([[1, 1, 0, 1], [1, 0, 0, np.nan], [1, np.nan, 1, np.nan]])
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="nominal") == pytest.approx(1 / 15)
    got = agreement.alpha(np.nan_to_num(data, nan=0.5), np.arange(4), 0.95)
    assert got["estimate"] == pytest.approx(1 / 15) and got["n"] == 3 and got["clusters"] == 3


def test_alpha_replicates_use_the_closed_form_that_equals_the_package() -> None:
    rng = np.random.default_rng(6)
    truth = rng.random(120) < 0.6
    matrix = np.where(rng.random((4, 120)) < 0.75, truth, ~truth).astype(float)
    matrix[rng.random((4, 120)) < 0.1] = 0.5
    codes = np.repeat(np.arange(40), 3)
    got = agreement.alpha(matrix, codes, 0.95)
    data = np.where(matrix == 0.5, np.nan, matrix)
    want = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert got["estimate"] == pytest.approx(want, abs=1e-12)
    kept = [c for c in range(40) if np.any((~np.isnan(data[:, codes == c])).sum(axis=0) >= 2)]
    replicates = np.array([krippendorff.alpha(reliability_data=data[:, codes != c], level_of_measurement="nominal")
                           for c in kept])
    k = len(kept)
    se = np.sqrt((k - 1) / k * np.sum((replicates - replicates.mean()) ** 2))
    q = stats.t.ppf(0.975, k - 1)
    assert got["low"] == pytest.approx(want - q * se, abs=1e-9)
    assert got["high"] == pytest.approx(want + q * se, abs=1e-9)


def test_perfect_agreement_gets_a_bound_below_one_and_one_value_only_is_undefined() -> None:
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0] * 3)
    codes = np.repeat(np.arange(12), 2)
    q = stats.t.ppf(0.975, 11)
    bound = q * q / (24 + q * q)  # Wilson's upper bound for 0 disagreeing of 24 pairs
    k = agreement.kappa(x, x, codes, 0.95)
    pe = 0.75**2 + 0.25**2
    assert k["estimate"] == 1.0 and k["high"] == 1.0 and k["low"] < 1
    assert k["low"] == pytest.approx(1 - bound / (1 - pe))
    a = agreement.alpha(np.stack([x, x, x]), codes, 0.95)
    chance = 2 * 54 * 18 / (72 * 71)  # 3 verdicts on each of 24 pairs: 54 right, 18 wrong
    assert a["estimate"] == pytest.approx(1.0) and a["low"] == pytest.approx(1 - bound / chance) and a["low"] < 1
    ones = np.ones(10)
    undefined = agreement.kappa(ones, ones, np.arange(10), 0.95)
    assert undefined["estimate"] is None and undefined["low"] is None and "one value" in undefined["note"]


def test_figures_take_model_judges_main_runs_and_their_shared_pairs() -> None:
    rng = np.random.default_rng(9)
    judges = {name: rng.choice([0.0, 0.5, 1.0], 60, p=[0.3, 0.1, 0.6]).tolist()
              for name in ("a", "b", "c", "shortcut/always-a")}
    obs = observations(judges)
    del obs.scores[2][7]  # b did not judge pair 7
    fig = agreement.figures(obs, "retrieved", BOOT)
    assert fig["judges"] == ["a", "b", "c"] and fig["shared_pairs"] == 59 and fig["unit"] == "question"
    assert [(r["judge_a"], r["judge_b"]) for r in fig["kappa"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    ab = fig["kappa"][0]["kappa"]
    x, y = np.array(judges["a"]), np.array(judges["b"])
    keep = (x != 0.5) & (y != 0.5) & (np.arange(60) != 7)
    assert ab["n"] == int(keep.sum()) and ab["estimate"] == pytest.approx(
        sklearn_metrics.cohen_kappa_score(x[keep], y[keep]), abs=1e-12)
    data = np.array([judges[j] for j in ("a", "b", "c")])[:, np.arange(60) != 7]
    want = krippendorff.alpha(reliability_data=np.where(data == 0.5, np.nan, data), level_of_measurement="nominal")
    assert fig["alpha"]["estimate"] == pytest.approx(want, abs=1e-12) and fig["alpha"]["clusters"] == 20
    rows = agreement_rows(fig)
    assert rows[0]["what"].startswith("Krippendorff") and rows[0]["value"].count("[") == 1 and len(rows) == 4
    lone = agreement.figures(observations({"a": [1.0, 0.0]}), "retrieved", BOOT)
    assert lone["alpha"] is None and lone["kappa"] == [] and "fewer than two" in lone["note"]
    assert agreement_rows(lone) == []


def test_leaderboard_json_and_report_section_carry_the_agreement(tmp_path: Path) -> None:
    from playlisteval.analytics import Analytics, trust_sections

    settings = project(tmp_path)
    fx = analytics_fixtures.build(open_store(settings))
    board = CliRunner().invoke(main, ["--project", str(tmp_path), "leaderboard", "--json"])
    assert board.exit_code == 0, board.output
    got = json.loads(board.output)["agreement"]
    (row,) = got["kappa"]  # alpha vs beta on p1 and p3: alpha right, wrong; beta right, right → kappa 0
    assert (row["judge_a"], row["judge_b"], row["kappa"]["n"], row["kappa"]["estimate"]) == ("alpha", "beta", 2, 0.0)
    with Analytics(open_store(settings), settings) as an:
        section = trust_sections.section(an, {"id": fx.benchmark_id}, BOOT, "retrieved")
    title, table = section.tables[-1]
    assert title.startswith("Agreement between judges") and table.rows[1][1] == "Cohen's kappa"


def test_swap_aggregated_accuracy_averages_the_passes_and_counts_right_in_both() -> None:
    forward = [1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    reverse = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0]
    obs = observations({"a": forward, "b": forward})
    obs.runs[3] = Run(3, "a", "retrieved", "domain", True, "frames+transcript", {}, True)
    obs.scores[3] = dict(enumerate(reverse[:-1]))  # the swapped pass missed the last pair
    (row,) = agreement.swap_figures(obs, "retrieved", BOOT)  # b has no swapped run
    f, r = np.array(forward[:-1]), np.array(reverse[:-1])
    assert (row["judge"], row["run_forward"], row["run_swapped"], row["pairs"]) == ("a", 1, 3, 11)
    assert row["averaged"]["estimate"] == pytest.approx(np.mean((f + r) / 2))
    assert row["right_in_both"]["estimate"] == pytest.approx(np.mean((f == 1) & (r == 1)))
    both = row["right_in_both"]
    assert 0 <= both["low"] < both["estimate"] < both["high"] <= 1 and both["clusters"] == 4
