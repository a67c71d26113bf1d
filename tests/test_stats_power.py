"""Power analysis (analytics/power.py) against the textbook formula written with the standard library, the
exact noncentral-t power (scipy.stats.nct evaluated here, not solved), statsmodels' TTestPower, a
Monte-Carlo simulation of clustered benchmarks and a loop-by-loop ICC.

statsmodels is not in the environment: its TTestPower().solve_power values were computed once elsewhere
(statsmodels 0.14) and are written below; the test uses the live library when it is installed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from playlisteval.analytics.power import (
    NONE_DETECTABLE,
    design_effect,
    icc_oneway,
    mde_cell,
    minimum_detectable_difference,
    noncentrality,
    paired_power,
    pairs_needed,
    power_report,
)
from playlisteval.cli import main
from playlisteval.store import open_store
from tests import analytics_fixtures
from tests.helpers import project

Z = NormalDist()


def _icc_by_loops(values: list[float], labels: list[str]) -> float:
    """The same ANOVA estimator, written out with dictionaries and loops (unclipped)."""
    groups: dict[str, list[float]] = {}
    for v, g in zip(values, labels, strict=True):
        groups.setdefault(g, []).append(v)
    n, k = len(values), len(groups)
    grand = sum(values) / n
    ssb = sum(len(vs) * (sum(vs) / len(vs) - grand) ** 2 for vs in groups.values())
    ssw = sum((v - sum(vs) / len(vs)) ** 2 for vs in groups.values() for v in vs)
    msb, msw = ssb / (k - 1), ssw / (n - k)
    n0 = (n - sum(len(vs) ** 2 for vs in groups.values()) / n) / (k - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


def _clustered(rng: np.random.Generator, k: int, m: int, icc: float, mean: float, sims: int) -> np.ndarray:
    """sims × k × m normal data of unit variance with the given intra-cluster correlation."""
    u = rng.normal(scale=math.sqrt(icc), size=(sims, k, 1))
    return mean + u + rng.normal(scale=math.sqrt(1 - icc), size=(sims, k, m))


def test_mde_without_clustering_is_the_textbook_formula() -> None:
    for sd, n, alpha, power in ((0.7, 400, 0.05, 0.8), (0.3, 50, 0.01, 0.9), (1.0, 1000, 0.1, 0.5)):
        textbook = (Z.inv_cdf(1 - alpha / 2) + Z.inv_cdf(power)) * sd / math.sqrt(n)
        assert minimum_detectable_difference(sd, n, 1.0, alpha, power) == pytest.approx(textbook, rel=1e-12)
        one_sided = (Z.inv_cdf(1 - alpha) + Z.inv_cdf(power)) * sd / math.sqrt(n)
        assert minimum_detectable_difference(sd, n, 1.0, alpha, power, False) == pytest.approx(one_sided)
    # the design effect scales the variance: deff 4 doubles the MDE
    assert minimum_detectable_difference(0.5, 300, 4.0) == pytest.approx(2 * minimum_detectable_difference(0.5, 300, 1))


def test_z_power_at_the_mde_is_the_requested_power() -> None:
    sd, n = 0.6, 250
    mde = minimum_detectable_difference(sd, n, 1.0)
    se = sd / math.sqrt(n)
    exact = (1 - Z.cdf(Z.inv_cdf(0.975) - mde / se)) + Z.cdf(-Z.inv_cdf(0.975) - mde / se)  # both tails
    assert exact == pytest.approx(0.8, abs=1e-3)


def test_t_mde_gives_the_requested_power_by_the_noncentral_t() -> None:
    """A clustered mean tested by a t-test on K cluster totals: its exact power at the t-based MDE."""
    for k in (2, 3, 4, 5, 10, 30, 200):
        for alpha, power in ((0.05, 0.8), (0.01, 0.9), (0.1, 0.5)):
            se = 1.0 / math.sqrt(k)  # unit-sd cluster means, deff folded in
            mde = minimum_detectable_difference(1.0, k, 1.0, alpha, power, clusters=k)
            crit = stats.t.ppf(1 - alpha / 2, k - 1)
            lower = stats.nct.cdf(-crit, k - 1, mde / se)  # NaN in scipy where it underflows (df 1, 2)
            exact = stats.nct.sf(crit, k - 1, mde / se) + (0.0 if math.isnan(lower) else lower)
            assert exact == pytest.approx(power, abs=1e-7), (k, alpha, power)
            one = minimum_detectable_difference(1.0, k, 1.0, alpha, power, False, clusters=k)
            assert stats.nct.sf(stats.t.ppf(1 - alpha, k - 1), k - 1, one / se) == pytest.approx(power, abs=1e-7)
    # few clusters cost more than z says; many clusters converge to z
    assert minimum_detectable_difference(1, 100, 2, clusters=5) > 1.2 * minimum_detectable_difference(1, 100, 2)
    assert minimum_detectable_difference(1, 100, 2, clusters=10**6) == pytest.approx(
        minimum_detectable_difference(1, 100, 2), rel=1e-4)


# statsmodels.stats.power.TTestPower().solve_power(nobs=K, alpha=0.05, power=0.8) · √K, the noncentrality
# of a one-sample t-test on K means (df K − 1): two-sided, and one-sided ("larger")
STATSMODELS = {2: (16.33401073540419, 8.192258426773318), 3: (5.6534892716012415, 3.978996654942584),
               4: (4.255898686384231, 3.299449149278659), 5: (3.761059816267204, 3.039749528299338),
               10: (3.1496345918890136, 2.6969141524643097), 30: (2.898743336048761, 2.5466208017115006)}


def test_noncentrality_matches_statsmodels_ttestpower() -> None:
    try:
        from statsmodels.stats.power import TTestPower
    except ImportError:
        live = None
    else:
        live = TTestPower()
    for k, (two, one) in STATSMODELS.items():
        assert noncentrality(0.05, 0.8, True, k - 1) == pytest.approx(two, rel=1e-5)  # statsmodels solves to ~4e-6
        assert noncentrality(0.05, 0.8, False, k - 1) == pytest.approx(one, rel=1e-5)
        if live is not None:
            es = live.solve_power(effect_size=None, nobs=k, alpha=0.05, power=0.8, alternative="two-sided")
            assert noncentrality(0.05, 0.8, True, k - 1) == pytest.approx(es * math.sqrt(k), rel=1e-5)
    # the t-quantile sum understates the exact value where it matters, at few degrees of freedom
    sum_of_quantiles = stats.t.ppf(0.975, 1) + stats.t.ppf(0.8, 1)
    assert sum_of_quantiles < 0.9 * noncentrality(0.05, 0.8, True, 1)
    with pytest.raises(ValueError, match="must exceed alpha"):
        noncentrality(0.05, 0.05, True, 3)


def test_no_mde_over_100_points_is_ever_given() -> None:
    """The issue's case: few clusters and a clustered difference give an 'MDE' above 100 points, which no
    difference of two accuracies can reach: 'none detectable' with a note, not the number."""
    rng = np.random.default_rng(40)
    playlists = np.repeat(np.arange(4), 11)  # 44 pairs in 4 playlists
    shift = rng.choice([-1.0, 1.0], size=4)[playlists]
    d = np.clip(shift * (rng.random(44) < 0.7), -1, 1)  # the difference follows the playlist almost whole
    got = paired_power(d, {"playlist": playlists.tolist(), "pair": list(range(44))})
    unit = got["units"]["playlist"]
    raw = minimum_detectable_difference(got["sd_of_paired_difference"], 44, unit["design_effect"], clusters=4)
    assert raw > 1  # what would have been printed, in points over 100
    assert unit["mde"] is None and unit["none_detectable"] and unit["note"].startswith(NONE_DETECTABLE)
    assert "100 points" in unit["note"] and mde_cell(unit) == NONE_DETECTABLE
    pair = got["units"]["pair"]  # unclustered, 44 pairs: detectable
    assert pair["mde"] is not None and pair["mde"] <= 1 and not pair["none_detectable"]
    assert mde_cell(pair) == f"{100 * pair['mde']:.1f}" and mde_cell({"mde": None}) is None
    for u in got["units"].values():  # nothing over 100 points anywhere in the result
        assert all(v is None or v <= 1 for v in (u["mde"], u["mde_normal"]))


def test_power_cli_never_prints_an_mde_over_100_points(tmp_path: Path) -> None:
    settings = project(tmp_path)
    analytics_fixtures.build(open_store(settings))  # two judges on 2 pairs: 2 clusters by every unit
    runner = CliRunner()
    doc = json.loads(runner.invoke(main, ["--project", str(tmp_path), "power", "--json"]).output)
    for u in doc["units"].values():
        assert u["mde"] is None or u["mde"] <= 1
        assert u["mde"] is not None or "note" in u
    assert any(u["none_detectable"] for u in doc["units"].values())
    shown = runner.invoke(main, ["--project", str(tmp_path), "power"])
    assert shown.exit_code == 0, shown.output
    rows = [line.split("│") for line in shown.output.splitlines() if line.count("│") == 8]
    mde_column = " ".join(cells[6].strip() for cells in rows)  # wrapped cells joined back
    assert NONE_DETECTABLE in mde_column
    assert all(float(x) <= 100 for x in mde_column.replace(NONE_DETECTABLE, "").split() if x != "—")
    board = runner.invoke(main, ["--project", str(tmp_path), "leaderboard"])
    assert board.exit_code == 0, board.output
    flat = " ".join(board.output.split())
    assert "by question: none detectable" in flat
    assert "--power must exceed --alpha" in runner.invoke(
        main, ["--project", str(tmp_path), "power", "--power", "0.04"]).output


def test_monte_carlo_power_at_the_clustered_mde_is_near_80_percent() -> None:
    rng = np.random.default_rng(7)
    k, m, icc, sims = 16, 6, 0.3, 4000
    deff = design_effect([m] * k, icc)
    assert deff == pytest.approx(1 + (m - 1) * icc)
    mde = minimum_detectable_difference(1.0, k * m, deff, clusters=k)
    data = _clustered(rng, k, m, icc, mde, sims)
    means = data.mean(axis=2)  # the analysis a clustered benchmark gets: t-test on cluster means
    t = means.mean(axis=1) / (means.std(axis=1, ddof=1) / math.sqrt(k))
    rejected = np.mean(np.abs(t) > stats.t.ppf(0.975, k - 1))
    assert rejected == pytest.approx(0.8, abs=0.03)  # Monte-Carlo SE 0.006, t approximation ~0.01
    # the naive MDE (ignoring clustering) would have far less power
    naive = minimum_detectable_difference(1.0, k * m, 1.0, clusters=k)
    t_naive = (means - mde + naive).mean(axis=1) / (means.std(axis=1, ddof=1) / math.sqrt(k))
    assert np.mean(np.abs(t_naive) > stats.t.ppf(0.975, k - 1)) < 0.6


def test_icc_matches_loops_and_recovers_a_simulated_icc() -> None:
    rng = np.random.default_rng(3)
    labels = [f"q{i}" for i in rng.integers(0, 25, size=300)]
    values = (rng.random(300) < 0.6).astype(float).tolist()
    raw = _icc_by_loops(values, labels)
    assert icc_oneway(values, labels) == pytest.approx(min(1.0, max(0.0, raw)), abs=1e-12)
    sim = _clustered(rng, 400, 5, 0.25, 0.0, 1).reshape(-1)
    sim_labels = np.repeat(np.arange(400), 5).tolist()
    assert icc_oneway(sim, sim_labels) == pytest.approx(0.25, abs=0.05)
    assert icc_oneway(sim, sim_labels) == pytest.approx(_icc_by_loops(sim.tolist(), [str(s) for s in sim_labels]))
    # negative estimates are clipped at 0: alternating values inside each cluster
    assert icc_oneway([0, 1, 0, 1, 0, 1], ["a", "a", "b", "b", "c", "c"]) == 0.0
    # not estimable: one cluster, singletons only, no variation
    assert icc_oneway([0, 1, 1], ["a", "a", "a"]) is None
    assert icc_oneway([0, 1, 1], ["a", "b", "c"]) is None
    assert icc_oneway([1, 1, 1, 1], ["a", "a", "b", "b"]) is None


def test_design_effect_with_unequal_sizes_uses_the_cv() -> None:
    sizes = np.array([1, 2, 8, 3, 10])
    m, cv = sizes.mean(), sizes.std() / sizes.mean()
    assert design_effect(sizes, 0.2) == pytest.approx(1 + ((cv**2 + 1) * m - 1) * 0.2)
    assert design_effect([4, 4, 4], 0.5) == pytest.approx(2.5)
    assert design_effect(sizes, 0.0) == 1.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        design_effect(sizes, 1.5)


def test_pairs_needed_inverts_the_mde() -> None:
    for diff, sd, deff in ((0.05, 0.6, 1.0), (0.03, 0.45, 2.7), (0.1, 0.8, 1.3)):
        n = pairs_needed(diff, sd, deff)
        assert minimum_detectable_difference(sd, n, deff) <= diff < minimum_detectable_difference(sd, n - 1, deff)
        direct = deff * ((Z.inv_cdf(0.975) + Z.inv_cdf(0.8)) * sd / diff) ** 2
        assert n == math.ceil(direct)
    with pytest.raises(ValueError, match="positive"):
        pairs_needed(0.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="no variance"):
        pairs_needed(0.05, 0.0, 1.0)


def test_power_report_paired_and_single_judge() -> None:
    rng = np.random.default_rng(11)
    n = 600
    question = np.repeat(np.arange(150), 4)
    video = question // 3
    hard = rng.random(150)[question]  # shared difficulty per question
    a = (rng.random(n) > hard * 0.8).astype(float)
    b = (rng.random(n) > hard * 0.9).astype(float)
    clusters = {"question": question.tolist(), "video": video.tolist(), "pair": list(range(n))}
    report = power_report(a, b, clusters)
    d = a - b
    assert report["sd_of_paired_difference"] == pytest.approx(float(np.std(d, ddof=1)))
    assert report["observed_difference"] == pytest.approx(float(d.mean()))
    q = report["units"]["question"]
    assert q["clusters"] == 150 and q["mean_cluster_size"] == 4
    assert q["icc"] == pytest.approx(max(0.0, _icc_by_loops(d.tolist(), [str(x) for x in question])))
    assert q["design_effect"] == pytest.approx(1 + 3 * q["icc"])
    assert q["effective_n"] == pytest.approx(n / q["design_effect"])
    assert q["mde"] == pytest.approx(minimum_detectable_difference(report["sd_of_paired_difference"], n,
                                                                   q["design_effect"], clusters=150))
    assert [p["difference"] for p in q["pairs_for"]] == [0.03, 0.05, 0.10]
    assert all(p["clusters"] == math.ceil(p["pairs"] / 4) for p in q["pairs_for"])
    assert paired_power(d, clusters) == report  # the differences directly give the same report
    pair = report["units"]["pair"]
    assert pair["icc"] is None and pair["design_effect"] == 1.0 and pair["mde"] < q["mde"]
    assert "method" in report and all("method" in u for u in report["units"].values())

    single = power_report(a, None, {"question": question.tolist()})
    p = a.mean()
    assert single["paired"] is False and single["sd_of_paired_difference"] == pytest.approx(math.sqrt(2 * p * (1 - p)))
    assert single["units"]["question"]["icc"] == pytest.approx(icc_oneway(a, question.tolist()))
    # the assumption itself: two independent judges of accuracy p have var(a − b) ≈ 2p(1 − p)
    sim = (rng.random((2, 200_000)) < 0.7).astype(float)
    assert np.var(sim[0] - sim[1]) == pytest.approx(2 * 0.7 * 0.3, abs=0.005)


def test_power_report_refuses_too_little_data() -> None:
    with pytest.raises(ValueError, match="at least 2 pairs"):
        power_report([1.0], [0.0], {"question": ["q"]})
    with pytest.raises(ValueError, match="not None or NaN"):
        missing: list[Any] = [1, None, 0]
        power_report(missing, None, {"question": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="3 pairs but 2"):
        power_report([1, 0, 1], [1, 1, 0], {"question": ["a", "b"]})
    same = power_report([1, 0, 1, 1], [1, 0, 1, 1], {"question": ["a", "a", "b", "b"]})
    u = same["units"]["question"]
    assert u["mde"] is None and u["pairs_for"] is None and "do not vary" in u["note"]
    perfect = power_report([1, 1, 1, 1], None, {"question": ["a", "a", "b", "b"]})["units"]["question"]
    assert perfect["mde"] is None and "every pair" in perfect["note"]
    one = power_report([1, 0, 1, 1], [0, 0, 1, 0], {"question": ["a"] * 4})
    assert one["units"]["question"]["mde"] is None and "not estimable" in one["units"]["question"]["note"]
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        paired_power([2.0, 0.0], {"question": ["a", "b"]})
    with pytest.raises(ValueError, match="no clustering unit"):
        power_report([1, 0, 1], [1, 1, 0], {})
    with pytest.raises(ValueError, match="2 clusters"):
        minimum_detectable_difference(0.5, 10, 1.0, clusters=1)
    assert u["none_detectable"] is False and one["units"]["question"]["none_detectable"] is False
