"""Power analysis (analytics/power.py) against the textbook formula written with the standard library, the
exact noncentral-t power, a Monte-Carlo simulation of clustered benchmarks and a loop-by-loop ICC.

statsmodels is not in the environment; its NormalIndPower/TTestPower would be a further check."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from scipy import stats

from playlisteval.analytics.power import (
    design_effect,
    icc_oneway,
    minimum_detectable_difference,
    paired_power,
    pairs_needed,
    power_report,
)

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
    for k in (5, 10, 30, 200):
        se = 1.0 / math.sqrt(k)  # unit-sd cluster means, deff folded in
        mde = minimum_detectable_difference(1.0, k, 1.0, clusters=k)
        crit = stats.t.ppf(0.975, k - 1)
        exact = stats.nct.sf(crit, k - 1, mde / se) + stats.nct.cdf(-crit, k - 1, mde / se)
        assert exact == pytest.approx(0.8, abs=0.02)
    # few clusters cost more than z says; many clusters converge to z
    assert minimum_detectable_difference(1, 100, 2, clusters=5) > 1.2 * minimum_detectable_difference(1, 100, 2)
    assert minimum_detectable_difference(1, 100, 2, clusters=10**6) == pytest.approx(
        minimum_detectable_difference(1, 100, 2), rel=1e-4)


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
