"""Calibration of the report's statistics (issue 40): SIMULATED studies of known truth at the paper's sizes,
measuring — not asserting — how often each interval the report prints holds the truth, and how often each
test rejects, beside the naive methods they replaced.

Everything here is simulated; nothing reads a store. The sections:

1. **Coverage of the nominal 95 % intervals** (% of simulated studies whose interval holds the true value)
   at K = 2, 4, 10, 40 clusters over 630 pairs (equal sizes, or unequal: the largest cluster 6× the
   smallest), with ICC 0, 0.1, 0.3 — a judge's accuracy (rate), a judge − judge paired difference and a
   retrieved − uniform difference (both paired differences), each next to the naive peers: the cluster
   percentile bootstrap of ``analytics/bootstrap.py`` and an interval that ignores the clusters — and a
   PROTOTYPE that the report does not use, the cluster bootstrap-t (``cluster_bootstrap_t``), measured as a
   candidate for the cells where the report's method misses the target (near-ceiling rates with ICC > 0).
   The report's rate is the beta-binomial profile likelihood (``beta_binomial.intervals``) of all studies
   of a cell at once — row for row the arithmetic ``small_sample.rate`` does for one study, checked equal to
   it on the first studies — beside the Wilson-with-design-effect interval it replaced ([old]). The judge −
   judge difference is MOVER from the two judges' beta-binomial intervals (``mover.paired`` on a cell's studies
   at once, checked against ``intervals.paired_from_sums`` — what trust and the leaderboard call — on the
   first studies), beside the CR2 t of the per-cluster differences it replaced ([old]); retrieved − uniform
   keeps the CR2 t (``small_sample.difference``, one study at a time).
1b. **"By video"**: the clusters are V = 10, 20, 40 videos and each pair cites two of them — the report's
   dyadic variance with the CR2 adjustment on Bell–McCaffrey df (``small_sample.rate`` with ``members``,
   checked against ``intervals.cluster_mean(…, second=…)``) beside the dyadic variance it replaced
   (G/(G − 1), t(V − 1)), the old first-video-only clusters, pairs of videos as clusters, and no clusters.
2. **Size of a rate's test against a null** (a shortcut against 50 %): how often p < 0.05 when the truth
   is exactly 50 %.
3. **Holm over 17 judges** (136 judge − judge pairs, 630 pairs in 28 clusters — 7 domains × 4 playlists —
   and in 20 question clusters): how many of the 136 truly different pairs Holm rejects, and the
   family-wise error under the global null, for MOVER's p (the report's, ``mover_p``: each judge fitted once
   per study), the exact sign-flip p (what ``sign_flips.sign_flip`` returns), the old Monte-Carlo sign flip
   of 2,000 draws and the cluster-robust t MOVER replaced. The sign flip and the t are computed for all 136
   pairs at once (``cluster_t_p``, ``exact_sign_flip_p``); all are checked against the library on the first
   studies.
4. **Correlation of n judges' two scores** (n = 4, 6, 10, 20; bivariate normal of known ρ): coverage of
   the Fisher-z intervals (``correlation.fisher_z_interval``) next to a percentile bootstrap over judges,
   and the size of the exact permutation p (n ≤ 9).

How the truth is simulated (the same for every method compared):

* A judge's correctness on a pair is 0/1. Each cluster has a difficulty: its accuracy p_g drawn from a
  Beta with mean μ and intra-cluster correlation ρ (a beta-binomial: the ICC of the 0/1 correctness is ρ
  exactly; ρ = 0: p_g = μ). The truth of a rate is μ.
* Paired designs (two judges, or one judge with two kinds of evidence): both sides' cluster accuracies
  come from their own Beta (same ρ), coupled by a Gaussian copula (correlation κ: clusters hard for one
  are hard for the other); on each pair, one uniform draw decides both sides with probability c (they
  fail on the same pairs), else each side its own. Each side keeps its mean exactly, so the truth of
  a − b is μ_a − μ_b.

The bootstrap peers are computed for all studies of a cell at once: each block of studies shares one set
of resampled cluster indices, drawn exactly as ``bootstrap.bootstrap_distribution`` draws them (for a seed
per block), and the percentile is the same inverse-CDF quantile; the first studies of every cell are
checked against the library's own functions (the line "vectorised copies checked" says how many, and the
largest difference; the bench exits 1 if any differs by 1e-9 or more).

    .venv/bin/python -m bench science [--reps 2000] [--holm-reps 1000] [--resamples 2000] [--seed 40]
                                      [--out build/bench/science.json] [--only coverage,video,null,holm,correlation]

Each section draws from its own random stream (spawned from the seed), so ``--only`` prints the very
numbers a full run prints for those sections.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

if __package__ in (None, ""):  # run as a file: bench/science.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playlisteval.analytics import (
    beta_binomial,
    bootstrap,
    correlation,
    intervals,
    mover,
    multiplicity,
    sign_flips,
    small_sample,
)
from playlisteval.index.blas import one_blas_thread

Array = NDArray[np.float64]
LEVEL = 0.95
PAIRS = 630
CLUSTERS = (2, 4, 10, 40)
ICCS = (0.0, 0.1, 0.3)
TARGET = (93.0, 97.0)  # coverage a 95 % interval must reach at K >= TARGET_K (issue 40's Done-when)
TARGET_K = 10
SECTIONS = ("coverage", "video", "null", "holm", "correlation")
UNEQUAL_RATIO = 6.0  # unequal sizes: the largest cluster this many times the smallest
CHECKED = 3  # studies of every cell whose bootstrap peer is recomputed by the library's own functions
SMALL_K_NOTE = ("K < 10: no other method is switched in — the same beta-binomial profile likelihood, its t on "
                f"K − 1 df below small_sample.FEW_CLUSTERS = {small_sample.FEW_CLUSTERS} clusters (not "
                "Satterthwaite's), and the same CR2 t on K − 1 df (t quantile 12.71 at K = 2, 3.18 at K = 4); their "
                "coverage is shown below for K = 2 and 4 but is not held to the 93–97 % target, which applies at "
                "K ≥ 10")


def load() -> float:
    return round(os.getloadavg()[0], 2)


# --- designs ---------------------------------------------------------------------------------------------

def cluster_sizes(k: int, total: int = PAIRS, unequal: bool = False) -> NDArray[np.int64]:
    """K sizes summing to ``total``: equal (±1), or geometric from 1 to UNEQUAL_RATIO (largest remainders)."""
    weights = np.exp(np.linspace(0.0, math.log(UNEQUAL_RATIO), k)) if unequal else np.ones(k)
    exact = total * weights / weights.sum()
    sizes = np.floor(exact).astype(np.int64)
    sizes[np.argsort(sizes - exact)[: total - int(sizes.sum())]] += 1
    return sizes


def cluster_accuracies(rng: np.random.Generator, mu: float, icc: float, uniforms: Array) -> Array:
    """Each cluster's accuracy: the Beta(mean μ, ICC ρ) quantile of the given uniforms (μ itself at ρ = 0)."""
    if icc <= 0:
        return np.full(uniforms.shape, mu)
    scale = 1.0 / icc - 1.0
    return np.asarray(special.betaincinv(mu * scale, (1 - mu) * scale, uniforms), dtype=np.float64)


def simulate_rate(rng: np.random.Generator, mu: float, icc: float, sizes: NDArray[np.int64], reps: int) -> Array:
    """Cluster sums (reps × K) of one judge's 0/1 correctness: beta-binomial with mean μ and ICC ρ."""
    shape = (reps, len(sizes))
    p = rng.beta(mu * (1 / icc - 1), (1 - mu) * (1 / icc - 1), size=shape) if icc > 0 else np.full(shape, mu)
    return rng.binomial(sizes, p).astype(np.float64)


def simulate_paired(rng: np.random.Generator, mus: Sequence[float], icc: float, sizes: NDArray[np.int64],
                    reps: int, kappa: float, concord: float) -> tuple[Array, Array]:
    """Several sides (judges, or one judge's two kinds of evidence) judged on the same pairs: per cluster,
    each side's accuracy is a Beta(μ_side, ρ) quantile of a Gaussian copula whose sides correlate κ; per
    pair, a shared uniform decides a side with probability ``concord``, else its own. Returns the cluster
    sums of each side's 0/1 correctness (reps × sides × K) and, per study, how many pairs sides 0 and 1
    answer differently (Σ (a − b)², for the unclustered peer)."""
    k, sides = len(sizes), len(mus)
    common = rng.standard_normal((reps, 1, k))
    latent = math.sqrt(kappa) * common + math.sqrt(1 - kappa) * rng.standard_normal((reps, sides, k))
    p = np.stack([cluster_accuracies(rng, mu, icc, stats.norm.cdf(latent[:, j])) for j, mu in enumerate(mus)],
                 axis=1)
    per_pair = np.repeat(p, sizes, axis=2)  # reps × sides × pairs
    shared = rng.random((reps, 1, int(sizes.sum())))
    draw = np.where(rng.random(per_pair.shape) < concord, shared, rng.random(per_pair.shape))
    correct = draw < per_pair
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sums = np.add.reduceat(correct.astype(np.float64), starts, axis=2)
    discordant = np.count_nonzero(correct[:, 0] != correct[:, 1], axis=1).astype(np.float64) if sides > 1 \
        else np.zeros(reps)
    return sums, discordant


# --- the methods ---------------------------------------------------------------------------------------------

Interval = tuple[Array, Array]


def report_rate(sums: Array, counts: Array, null: float | None = None, checks: list[float] | None = None
                ) -> tuple[Array, Array, Array]:
    """(low, high, p) of every study as ``small_sample.rate`` (the report's rate) gives them: the
    beta-binomial profile likelihood of all studies at once (``beta_binomial.intervals``, row by row the
    same arithmetic), checked against ``small_sample.rate`` one study at a time on the first CHECKED."""
    k = sums.shape[1]
    nulls = None if null is None else np.full(len(sums), null)
    low, high, p, _ = beta_binomial.intervals(sums, np.broadcast_to(counts, sums.shape), np.full(len(sums), k),
                                              LEVEL, nulls, small_sample.FEW_CLUSTERS)
    if checks is not None:
        for i in range(min(CHECKED, len(sums))):
            one = small_sample.rate(sums[i], counts, LEVEL, null)
            want = (one[0], one[1]) + ((one[2],) if null is not None else ())
            got = (low[i], high[i]) + ((p[i],) if null is not None else ())
            checks.append(max(abs(float(a) - float(b)) for a, b in zip(want, got, strict=True)))
    return low, high, p


def cr2_difference(sums: Array, counts: Array) -> tuple[Array, Array, Array]:
    """(low, high, p against 0) of every study by ``small_sample.difference``: the CR2 t of the per-cluster
    differences (the report's retrieved − uniform; judge − judge before MOVER)."""
    out = np.array([small_sample.difference(s, counts, LEVEL, 0.0)[:3] for s in sums], dtype=np.float64)
    return out[:, 0], out[:, 1], out[:, 2]


def canonical_sides(a: Array, b: Array, counts: Array) -> tuple[Array, Array, Array]:
    """Each row's clusters in the order ``intervals.paired_from_sums`` puts them (by a's sum, b's sum, count),
    so that the sums inside MOVER add in the same order and the library check can be exact."""
    n = np.broadcast_to(counts, a.shape)
    order = np.lexsort((n, b, a), axis=-1)
    return (np.take_along_axis(a, order, -1), np.take_along_axis(b, order, -1), np.take_along_axis(n, order, -1))


def report_difference(both: Array, counts: Array, checks: list[float] | None = None, chunk: int = 250
                      ) -> tuple[Array, Array, Array]:
    """(low, high, p against 0) of every study's judge − judge difference as the report computes it:
    ``mover.paired`` on both sides' cluster sums (``both``: studies × 2 × K), a chunk of studies per call;
    checked against ``intervals.paired_from_sums`` (what trust and the leaderboard call) one study at a time
    on the first CHECKED."""
    k = both.shape[2]
    out = np.empty((3, len(both)))
    for start in range(0, len(both), chunk):
        part = both[start:start + chunk]
        got = mover.paired(*canonical_sides(part[:, 0], part[:, 1], counts), np.full(len(part), k), LEVEL)
        out[:, start:start + len(part)] = got.low, got.high, got.p
    if checks is not None:
        for i in range(min(CHECKED, len(both))):
            one = intervals.paired_from_sums([(both[i, 0], both[i, 1], counts, None)], level=LEVEL)[0]
            checks.append(max(abs(float(one.low or 0.0) - out[0, i]), abs(float(one.high or 0.0) - out[1, i]),
                              abs(float(one.p_value or 0.0) - out[2, i])))
    return out[0], out[1], out[2]


def wilson_deff(sums: Array, counts: Array, null: float | None = None) -> tuple[Array, Array, Array]:
    """(low, high, p) of the report's rate before the beta-binomial: Wilson's score interval on the effective
    size (CR2 design effect, floored at 1 below FEW_CLUSTERS), t on K − 1 df; score-test p."""
    k = sums.shape[1]
    q = small_sample.t_quantile(k - 1, LEVEL)
    out = []
    for s in sums:
        n_eff = small_sample.effective_n(s, counts)
        p = float(s.sum() / counts.sum())
        test = (math.nan if null is None
                else small_sample.t_p_value((p - null) / math.sqrt(null * (1 - null) / n_eff), k - 1))
        out.append((*small_sample.wilson(p, n_eff, q), test))
    got = np.array(out, dtype=np.float64)
    return got[:, 0], got[:, 1], got[:, 2]


def wilson_unclustered(sums: Array, counts: Array) -> Interval:
    """Wilson's score interval on all N pairs as if independent (z quantile): the naive rate."""
    n = float(counts.sum())
    p = sums.sum(axis=1) / n
    z = float(stats.norm.ppf(0.5 + LEVEL / 2))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def z_unclustered(values_sum: Array, squares_sum: Array, n: float) -> Interval:
    """Mean ± z·sd/√N over all N pairs as if independent: the naive paired difference."""
    mean = values_sum / n
    var = np.maximum(squares_sum / n - mean * mean, 0.0) * n / (n - 1)
    z = float(stats.norm.ppf(0.5 + LEVEL / 2))
    half = z * np.sqrt(var / n)
    return mean - half, mean + half


def bootstrap_counts(k: int, seed: int, resamples: int) -> Array:
    """How often each cluster is drawn in each resample (resamples × K), from the very draws
    ``bootstrap.bootstrap_distribution(…, seed=seed)`` makes."""
    rng = np.random.default_rng([int(seed) % 2**63, 1])
    rows, out, done = max(1, bootstrap._CELLS_PER_CHUNK // k), [], 0
    while done < resamples:
        m = min(rows, resamples - done)
        drawn = rng.integers(0, k, size=(m, k))
        offset = drawn + k * np.arange(m)[:, None]  # resample r's clusters numbered r·K … r·K + K − 1
        out.append(np.bincount(offset.reshape(-1), minlength=m * k).reshape(m, k))
        done += m
    return np.concatenate(out).astype(np.float64)


def percentile_rows(distribution: Array) -> Interval:
    """``bootstrap.percentile_interval`` of every row (inverse-CDF quantile: an atom, not interpolated)."""
    tail = (1.0 - LEVEL) / 2  # the atoms np.quantile's inverted CDF picks, its rounding of q·B included
    lo_k, hi_k = (int(i) for i in np.quantile(np.arange(distribution.shape[1]), [tail, 1.0 - tail],
                                               method="inverted_cdf"))
    part = np.partition(distribution, (lo_k, hi_k), axis=1)
    return part[:, lo_k], part[:, hi_k]


def cluster_bootstrap(sums: Array, counts: Array, seed: int, resamples: int, block: int = 250) -> Interval:
    """The cluster percentile bootstrap of every study (rows of ``sums``; the same ``counts``): a block of
    ``block`` studies shares one set of resampled clusters (seed + block number)."""
    lows, highs = np.empty(len(sums)), np.empty(len(sums))
    for start in range(0, len(sums), block):
        m = bootstrap_counts(sums.shape[1], seed + start // block, resamples)  # resamples × K
        dist = (sums[start:start + block] @ m.T) / (m @ counts)[None, :]
        lows[start:start + block], highs[start:start + block] = percentile_rows(dist)
    return lows, highs


def cluster_bootstrap_t(sums: Array, counts: Array, low: Array, high: Array, seed: int, resamples: int,
                        bounds: tuple[float, float], block: int = 250) -> Interval:
    """PROTOTYPE, not in the report: the cluster bootstrap-t (percentile-t) of every study. Each resample
    of the K clusters is studentised by its own CR2 standard error (each drawn copy a cluster, leverage
    N_g / N*); the interval is estimate − t*₉₇.₅·se … estimate − t*₂.₅·se with the study's CR2 se, clipped
    to ``bounds``. A study whose CR2 se is 0 keeps the report's interval (``low``/``high``)."""
    k, total = sums.shape[1], float(counts.sum())
    estimate = sums.sum(axis=1) / total
    se = np.sqrt(np.sum((sums - estimate[:, None] * counts) ** 2 / (1 - counts / total), axis=1)) / total
    lows, highs = low.copy(), high.copy()
    for start in range(0, len(sums), block):
        drawn = np.random.default_rng([int(seed + start // block) % 2**63, 3]).integers(0, k, size=(resamples, k))
        m = np.bincount((drawn + k * np.arange(resamples)[:, None]).reshape(-1),
                        minlength=resamples * k).reshape(resamples, k).astype(np.float64)
        n_star = m @ counts  # resamples
        w = m / (1 - counts[None, :] / n_star[:, None])  # copies of cluster g, each with its CR2 factor
        s = sums[start:start + block]
        p_star = (s @ m.T) / n_star[None, :]
        v_star = ((s * s) @ w.T - 2 * p_star * ((s * counts) @ w.T) + p_star**2 * (counts**2 @ w.T)[None, :]) \
            / n_star[None, :] ** 2
        shift = p_star - estimate[start:start + block, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_star = np.where(v_star > 1e-24, shift / np.sqrt(np.maximum(v_star, 1e-300)),
                              np.sign(shift) * np.inf)
        t_star = np.nan_to_num(t_star, nan=0.0)
        t_low, t_high = percentile_rows(t_star)
        e, sd = estimate[start:start + block], se[start:start + block]
        ok = sd > 1e-12
        with np.errstate(invalid="ignore"):
            lo = np.clip(e - t_high * sd, *bounds)
            hi = np.clip(e - t_low * sd, *bounds)
        lows[start:start + block] = np.where(ok, lo, low[start:start + block])
        highs[start:start + block] = np.where(ok, hi, high[start:start + block])
    return lows, highs


def check_bootstrap(sums: Array, counts: Array, seed: int, resamples: int, got: Interval) -> float:
    """The largest |difference| between ``cluster_bootstrap`` and the library on the first CHECKED studies."""
    worst = 0.0
    for i in range(min(CHECKED, len(sums))):
        dist = bootstrap.bootstrap_distribution(sums[i], counts, seed=seed + i // 250, resamples=resamples)
        low, high = bootstrap.percentile_interval(dist, LEVEL)
        worst = max(worst, abs(low - got[0][i]), abs(high - got[1][i]))
    return worst


def covered(low: Array, high: Array, truth: float) -> float:
    tol = 1e-12
    return 100.0 * float(np.mean((low <= truth + tol) & (truth - tol <= high)))


# --- section 1 and 2: intervals of rates and paired differences ---------------------------------------------

RATES = (0.5, 0.7, 0.9, 0.97)
# (label, μ_a, μ_b, κ, c): judge − judge pairs fail together less than one judge with two kinds of evidence
DIFFERENCES = (("judge − judge", 0.70, 0.70, 0.5, 0.5), ("judge − judge", 0.75, 0.65, 0.5, 0.5),
               ("judge − judge", 0.97, 0.92, 0.5, 0.5), ("retrieved − uniform", 0.72, 0.66, 0.8, 0.7))
METHODS_RATE = ("beta-binomial profile LR [report]", "cluster bootstrap [naive]", "Wilson, unclustered [naive]",
                "cluster bootstrap-t [prototype]", "Wilson+deff, t(K−1) [old]")
METHODS_DIFF = ("CR2 t(K−1) [report]", "cluster bootstrap [naive]", "z, unclustered [naive]",
                "cluster bootstrap-t [prototype]")
# judge − judge: MOVER from the two judges' beta-binomial intervals (issue 40), the CR2 t it replaced beside it
METHODS_JUDGES = ("MOVER, beta-binomial sides [report]", *METHODS_DIFF[1:], "CR2 t(K−1) [old]")


def _record(row: dict[str, Any], name: str, k: int, interval: Interval, truth: float) -> None:
    """A method's coverage (%) and mean width (points) in one cell."""
    row["methods"][name][k] = covered(*interval, truth)
    row["widths"][name][k] = 100.0 * float(np.mean(interval[1] - interval[0]))


def coverage_cells(rng: np.random.Generator, reps: int, resamples: int, seed: int, checks: list[float],
                   say: Callable[[str], None]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for unequal in (False, True):
        sizes_label = "unequal" if unequal else "equal"
        for icc in ICCS:
            for mu in RATES:
                row: dict[str, Any] = {"interval": "judge accuracy (rate)", "truth": mu, "label": f"{mu:.2f}",
                                       "sizes": sizes_label, "icc": icc,
                                       "methods": {name: {} for name in METHODS_RATE},
                                       "widths": {name: {} for name in METHODS_RATE}}
                for k in CLUSTERS:
                    n = cluster_sizes(k, unequal=unequal).astype(np.float64)
                    s = simulate_rate(rng, mu, icc, n.astype(np.int64), reps)
                    low, high, _ = report_rate(s, n, checks=checks)
                    boot = cluster_bootstrap(s, n, seed, resamples)
                    checks.append(check_bootstrap(s, n, seed, resamples, boot))
                    _record(row, METHODS_RATE[0], k, (low, high), mu)
                    _record(row, METHODS_RATE[1], k, boot, mu)
                    _record(row, METHODS_RATE[2], k, wilson_unclustered(s, n), mu)
                    _record(row, METHODS_RATE[3], k, cluster_bootstrap_t(s, n, low, high, seed, resamples, (0.0, 1.0)),
                            mu)
                    _record(row, METHODS_RATE[4], k, wilson_deff(s, n)[:2], mu)
                rows.append(row)
            for label, mu_a, mu_b, kappa, concord in DIFFERENCES:
                truth = mu_a - mu_b
                names = METHODS_JUDGES if label == "judge − judge" else METHODS_DIFF
                row = {"interval": label, "truth": truth, "label": f"{mu_a:.2f}−{mu_b:.2f}", "sizes": sizes_label,
                       "icc": icc, "methods": {name: {} for name in names},
                       "widths": {name: {} for name in names}}
                for k in CLUSTERS:
                    n = cluster_sizes(k, unequal=unequal).astype(np.float64)
                    both, squares = simulate_paired(rng, (mu_a, mu_b), icc, n.astype(np.int64), reps, kappa,
                                                    concord)
                    d = both[:, 0] - both[:, 1]
                    low, high, _ = cr2_difference(d, n)
                    boot = cluster_bootstrap(d, n, seed, resamples)
                    checks.append(check_bootstrap(d, n, seed, resamples, boot))
                    if names is METHODS_JUDGES:
                        _record(row, METHODS_JUDGES[-1], k, (low, high), truth)
                        _record(row, names[0], k, report_difference(both, n, checks)[:2], truth)
                    else:
                        _record(row, names[0], k, (low, high), truth)
                    _record(row, names[1], k, boot, truth)
                    _record(row, names[2], k, z_unclustered(d.sum(axis=1), squares, n.sum()), truth)
                    _record(row, names[3], k,
                            cluster_bootstrap_t(d, n, low, high, seed, resamples, (-1.0, 1.0)), truth)
                rows.append(row)
            say(f"  coverage: {sizes_label} sizes, ICC {icc} done (load {load()})")
    return rows


def width_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Mean width (points) of the report's interval and of the prototype, in the cells the report misses."""
    lines = []
    for row in rows:
        names = list(row["methods"])
        report, prototype = names[0], names[3]
        for k in CLUSTERS:
            if _outside(row["methods"][report][k], k, True):
                lines.append(f"{row['interval']:<22} {row['label']:<10} {row['sizes']:<7} {row['icc']:>4.1f} "
                             f"K={k:<3} report {row['methods'][report][k]:5.1f} % wide {row['widths'][report][k]:5.1f}"
                             f" | prototype {row['methods'][prototype][k]:5.1f} % wide "
                             f"{row['widths'][prototype][k]:5.1f}")
    return lines


def null_cells(rng: np.random.Generator, reps: int, resamples: int, seed: int, checks: list[float]
               ) -> list[dict[str, Any]]:
    """Rejection rate (%) of 'rate = 50 %' when the truth is 50 % (nominal 5 %)."""
    rows = []
    for unequal in (False, True):
        for icc in ICCS:
            row: dict[str, Any] = {"sizes": "unequal" if unequal else "equal", "icc": icc,
                                   "methods": {name: {} for name in METHODS_RATE}}
            for k in CLUSTERS:
                n = cluster_sizes(k, unequal=unequal).astype(np.float64)
                s = simulate_rate(rng, 0.5, icc, n.astype(np.int64), reps)
                low, high, p = report_rate(s, n, null=0.5, checks=checks)
                boot = cluster_bootstrap(s, n, seed, resamples)
                checks.append(check_bootstrap(s, n, seed, resamples, boot))
                row["methods"][METHODS_RATE[0]][k] = 100.0 * float(np.mean(p < 1 - LEVEL))
                row["methods"][METHODS_RATE[1]][k] = 100.0 - covered(*boot, 0.5)
                row["methods"][METHODS_RATE[2]][k] = 100.0 - covered(*wilson_unclustered(s, n), 0.5)
                boot_t = cluster_bootstrap_t(s, n, low, high, seed, resamples, (0.0, 1.0))
                row["methods"][METHODS_RATE[3]][k] = 100.0 - covered(*boot_t, 0.5)
                row["methods"][METHODS_RATE[4]][k] = 100.0 * float(np.mean(wilson_deff(s, n, 0.5)[2] < 1 - LEVEL))
            rows.append(row)
    return rows


# --- section 1b: "by video", a pair in two clusters ---------------------------------------------------------

VIDEOS = (10, 20, 40)
VIDEO_RATES = (0.7, 0.9)
VIDEO_ICCS = (0.1, 0.3)
SAME_VIDEO = 0.25  # share of pairs whose two segments come from one video
METHODS_VIDEO = ("dyadic CR2, Bell–McCaffrey df [report]", "first video only [old]",
                 "pair of videos as cluster [naive]", "Wilson, unclustered [naive]",
                 "dyadic G/(G−1), t(videos−1) [old]")


def old_dyadic(sums: Array, counts: Array, members: NDArray[np.int64]) -> Interval:
    """The report's "by video" rate before the CR2 adjustment: Σ_u (Σ_{g∋u} e_g)² − Σ_{two-unit g} e_g²,
    × G/(G − 1) / N², floored at the one-way CR2, Wilson on t(G − 1)."""
    units = len(np.unique(members))
    q = small_sample.t_quantile(units - 1, LEVEL)
    total = float(counts.sum())
    two = members[:, 0] != members[:, 1]
    lows, highs = np.empty(len(sums)), np.empty(len(sums))
    for i, s in enumerate(sums):
        residual = s - float(s.sum()) / total * counts
        by_unit = np.bincount(members[:, 0], weights=residual, minlength=int(members.max()) + 1)
        by_unit += np.bincount(members[two, 1], weights=residual[two], minlength=len(by_unit))
        shared = float(np.sum(by_unit**2) - np.sum(residual[two] ** 2)) * units / (units - 1) / total**2
        variance = max(shared, small_sample.cr2_variance(s, counts))
        p = float(s.sum()) / total
        binomial = p * (1 - p) / total
        n_eff = total if binomial <= 0 or variance <= 0 else total * binomial / variance
        lows[i], highs[i] = small_sample.wilson(p, n_eff, q)
    return lows, highs


def video_design(rng: np.random.Generator, videos: int, pairs: int = PAIRS
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each pair's two videos: the first cycles over all videos (shuffled), the second is the same video
    with probability SAME_VIDEO, else another one drawn uniformly."""
    first = rng.permutation(np.arange(pairs) % videos)
    other = (first + rng.integers(1, videos, size=pairs)) % videos
    return first, np.where(rng.random(pairs) < SAME_VIDEO, first, other)


def simulate_videos(rng: np.random.Generator, mu: float, icc: float, first: NDArray[np.int64],
                    second: NDArray[np.int64], videos: int, reps: int) -> Array:
    """0/1 correctness (reps × pairs) with a probit video effect: a pair is right when its latent
    difficulty √(ρ/2)·(w_a + w_b) + √(1 − ρ)·e (√ρ·w_a when both segments are from video a) lies below
    Φ⁻¹(μ) — each pair right with probability μ exactly; pairs sharing one video correlate ρ/2 on the
    latent scale, pairs sharing both ρ."""
    w = rng.standard_normal((reps, videos))
    same = first == second
    shared = np.where(same, math.sqrt(icc) * w[:, first], math.sqrt(icc / 2) * (w[:, first] + w[:, second]))
    latent = shared + math.sqrt(1 - icc) * rng.standard_normal((reps, len(first)))
    return (latent < stats.norm.ppf(mu)).astype(np.float64)


def video_cells(rng: np.random.Generator, reps: int, checks: list[float], say: Callable[[str], None]
                ) -> list[dict[str, Any]]:
    """Coverage of a rate's interval when the clusters are videos and each pair cites two of them."""
    rows: list[dict[str, Any]] = []
    for icc in VIDEO_ICCS:
        for mu in VIDEO_RATES:
            row: dict[str, Any] = {"truth": mu, "icc": icc, "methods": {name: {} for name in METHODS_VIDEO},
                                   "widths": {name: {} for name in METHODS_VIDEO}}
            for videos in VIDEOS:
                first, second = video_design(rng, videos)
                members, dyad = np.unique(np.stack([np.minimum(first, second), np.maximum(first, second)], axis=1),
                                          axis=0, return_inverse=True)
                dyad = dyad.reshape(-1)
                counts = np.bincount(dyad, minlength=len(members)).astype(np.float64)
                correct = simulate_videos(rng, mu, icc, first, second, videos, reps)
                by_dyad = np.stack([np.bincount(dyad, weights=row_c, minlength=len(counts))
                                    for row_c in correct]).astype(np.float64)
                by_first = np.stack([np.bincount(first, weights=row_c, minlength=videos)
                                     for row_c in correct]).astype(np.float64)
                first_counts = np.bincount(first, minlength=videos).astype(np.float64)
                got = {
                    METHODS_VIDEO[0]: np.array([small_sample.rate(s, counts, LEVEL, None, members)[:2]
                                                for s in by_dyad], dtype=np.float64).T,
                    METHODS_VIDEO[1]: np.array(report_rate(by_first, first_counts, checks=checks)[:2]),
                    METHODS_VIDEO[2]: np.array(report_rate(by_dyad, counts, checks=checks)[:2]),
                    METHODS_VIDEO[3]: np.array(wilson_unclustered(by_first, first_counts)),
                    METHODS_VIDEO[4]: np.array(old_dyadic(by_dyad, counts, members))}
                for i in range(min(CHECKED, reps)):  # the report's own path: cluster_mean(…, second=…)
                    report = intervals.cluster_mean(correct[i], first, second=second, kind="rate")
                    checks.append(max(abs(report.low - got[METHODS_VIDEO[0]][0][i]),
                                      abs(report.high - got[METHODS_VIDEO[0]][1][i]))
                                  if report.low is not None and report.high is not None else math.inf)
                for name, (low, high) in got.items():
                    _record(row, name, videos, (low, high), mu)
            rows.append(row)
    say(f"  by video (dyadic) done (load {load()})")
    return rows


def video_lines(rows: list[dict[str, Any]]) -> list[str]:
    head = (f"{'truth':<6} {'ICC':>4}  {'method':<38}" + "".join(f"{'V=' + str(v):>8}" for v in VIDEOS)
            + "   mean width, points")
    lines = [head, "-" * len(head)]
    for row in rows:
        for i, (name, cells) in enumerate(row["methods"].items()):
            left = f"{row['truth']:<6.2f} {row['icc']:>4.1f}" if i == 0 else " " * 11
            lines.append(f"{left}  {name:<38}" + "".join(
                f"{cells[v]:>7.1f}{'*' if _outside(cells[v], v, '[report]' in name) else ' '}" for v in VIDEOS)
                + "  " + " ".join(f"{row['widths'][name][v]:5.1f}" for v in VIDEOS))
    return lines


# --- section 3: Holm over 17 judges ----------------------------------------------------------------------------

JUDGES = np.linspace(0.45, 0.85, 17)  # 2.5 points apart: every one of the 136 pairs truly differs
NULL_ACCURACY = 0.65
HOLM_ICC, HOLM_KAPPA, HOLM_CONCORD = 0.1, 0.5, 0.5
HOLM_DESIGNS = ((28, "28 playlists (7 domains × 4)"), (20, "20 question clusters"))
OLD_DRAWS = 2000
TESTS = ("MOVER, beta-binomial sides [report]", "exact sign flip [check]",
         f"Monte-Carlo sign flip, {OLD_DRAWS:,} draws [old]", "cluster-robust t, CR2, K−1 df [old]")


def monte_carlo_sign_flip(d: Array, rng: np.random.Generator, draws: int = OLD_DRAWS) -> Array:
    """The old p of each row of ``d`` (pairs × K cluster totals): (hits + 1)/(draws + 1) over random signs."""
    signs = 2.0 * rng.integers(0, 2, size=(draws, d.shape[1])) - 1.0
    observed = np.abs(d.sum(axis=1))
    tolerance = 1e-9 * np.maximum(1.0, np.abs(d).sum(axis=1))
    hits = np.count_nonzero(np.abs(signs @ d.T) >= (observed - tolerance)[None, :], axis=0)
    return (hits + 1.0) / (draws + 1.0)


def exact_sign_flip_p(d: Array) -> Array:
    """The exact two-sided sign-flip p of every row of ``d`` (rows × K integer cluster totals), by the
    distribution of Σ ±|d_g| built one cluster at a time for all rows at once (probabilities are
    multiples of 2^−K: exact in floating point). An independent computation of what
    ``sign_flips.sign_flip`` returns; checked equal to it on the first studies (``holm_cells``)."""
    a = np.abs(np.rint(d)).astype(np.int64)
    if not np.array_equal(a, np.abs(d)):
        raise ValueError("exact_sign_flip_p needs integer cluster totals")
    top = int(a.sum(axis=1).max())
    grid = np.arange(top + 1)
    dist = np.zeros((len(a), top + 1))
    dist[:, 0] = 1.0  # P(the + subset's sum = s)
    for column in a.T:
        source = grid[None, :] - column[:, None]
        shifted = np.take_along_axis(dist, np.maximum(source, 0), axis=1) * (source >= 0)
        dist = 0.5 * dist + 0.5 * shifted
    total = a.sum(axis=1)
    reached = np.abs(2 * grid[None, :] - total[:, None]) >= np.abs(np.rint(d).sum(axis=1))[:, None]
    p = np.minimum(1.0, np.sum(dist * reached, axis=1))
    p[np.rint(d).sum(axis=1) == 0] = 1.0
    return np.asarray(p, dtype=np.float64)


def cluster_t_p(d: Array, counts: Array) -> Array:
    """``small_sample.difference``'s p against 0 of every row of ``d`` (rows × K cluster totals) at once:
    CR2 variance, t on K − 1 df; a row whose clusters all have the same mean (CR2 se 0) goes to the
    library itself. Checked against the library on the first studies (``holm_cells``)."""
    total = float(counts.sum())
    mean = d.sum(axis=-1) / total
    residual = d - mean[..., None] * counts
    se = np.sqrt(np.sum(residual**2 / (1.0 - counts / total), axis=-1)) / total
    flat = se > 1e-12 * np.maximum(1.0, np.abs(mean))
    t = np.divide(np.abs(mean), se, out=np.zeros_like(mean), where=flat)
    p = np.minimum(1.0, 2 * stats.t.sf(t, len(counts) - 1))
    p[flat & (t == 0)] = 1.0
    for index in zip(*np.nonzero(~flat), strict=True):
        p[index] = small_sample.difference(d[index], counts, LEVEL, 0.0)[2]
    return np.asarray(p, dtype=np.float64)


def mover_p(sums: Array, first: NDArray[np.int64], second: NDArray[np.int64], counts: Array,
            checks: list[float], chunk: int = 20) -> Array:
    """The report's judge − judge p (``mover.paired``) of every pair of every study (``sums``: studies ×
    judges × K), a chunk of studies per call — each judge's side fitted once per study; checked against
    ``intervals.paired_from_sums`` on the first study's first pairs."""
    reps, pairs, k = len(sums), len(first), sums.shape[2]
    p = np.empty((reps, pairs))
    for start in range(0, reps, chunk):
        a, b = sums[start:start + chunk][:, first], sums[start:start + chunk][:, second]
        got = mover.paired(*canonical_sides(a.reshape(-1, k), b.reshape(-1, k), counts), np.full(a.size // k, k),
                           LEVEL)
        p[start:start + chunk] = got.p.reshape(-1, pairs)
    one = intervals.paired_from_sums([(sums[0, first[q]], sums[0, second[q]], counts, None)
                                      for q in range(min(CHECKED, pairs))], level=LEVEL)
    checks.append(max(abs(float(iv.p_value or 0.0) - p[0, q]) for q, iv in enumerate(one)))
    return p


def holm_cells(rng: np.random.Generator, reps: int, checks: list[float], say: Callable[[str], None]
               ) -> list[dict[str, Any]]:
    first, second = np.triu_indices(len(JUDGES), 1)
    gaps = np.abs(JUDGES[first] - JUDGES[second])
    widest = int(np.argmax(gaps))
    rows: list[dict[str, Any]] = []
    for k, design in HOLM_DESIGNS:
        sizes = cluster_sizes(k)
        n = sizes.astype(np.float64)
        row: dict[str, Any] = {"design": design, "clusters": k, "tests": {name: {} for name in TESTS}}
        for scenario, mus in (("different", JUDGES), ("global null", np.full(len(JUDGES), NULL_ACCURACY))):
            sums, _ = simulate_paired(rng, mus.tolist(), HOLM_ICC, sizes, reps, HOLM_KAPPA, HOLM_CONCORD)
            d = sums[:, first] - sums[:, second]  # reps × 136 × K
            rejected = {name: np.zeros((reps, len(first)), dtype=bool) for name in TESTS}
            raw = {name: np.zeros((reps, len(first)), dtype=bool) for name in TESTS}
            cluster_t = cluster_t_p(d, n)
            moved = mover_p(sums, first, second, n, checks)
            exact = np.stack([exact_sign_flip_p(study) for study in d])
            for r in range(min(CHECKED, reps)):
                checks.append(max(abs(cluster_t[r, q] - small_sample.difference(d[r, q], n, LEVEL, 0.0)[2])
                                  for q in range(len(first))))
                checks.append(max(abs(exact[r, q] - sign_flips.sign_flip(d[r, q])[0]) for q in range(len(first))))
            for r in range(reps):
                p = {TESTS[0]: moved[r].tolist(), TESTS[1]: exact[r].tolist(),
                     TESTS[2]: monte_carlo_sign_flip(d[r], rng).tolist(), TESTS[3]: cluster_t[r].tolist()}
                for name, values in p.items():
                    adjusted = multiplicity.holm_adjust(values)
                    rejected[name][r] = np.array([a is not None and a <= 1 - LEVEL for a in adjusted])
                    raw[name][r] = np.array(values) < 1 - LEVEL
            for name in TESTS:
                got = row["tests"][name]
                if scenario == "different":
                    got["rejected_of_136"] = float(rejected[name].sum(axis=1).mean())
                    got["widest_pair_rejected_pct"] = 100.0 * float(rejected[name][:, widest].mean())
                    got["ge_20_points_rejected_pct"] = 100.0 * float(rejected[name][:, gaps >= 0.2 - 1e-9].mean())
                else:
                    got["fwer_pct"] = 100.0 * float(rejected[name].any(axis=1).mean())
                    got["size_unadjusted_pct"] = 100.0 * float(raw[name].mean())
            say(f"  Holm: {design}, {scenario} done (load {load()})")
        rows.append(row)
    return rows


# --- section 4: correlation of n judges ---------------------------------------------------------------------

CORR_N = (4, 6, 10, 20)
RHOS = (0.0, 0.5, 0.8, 0.95)
CORR_METHODS = ("Pearson, Fisher-z [report]", "Pearson, percentile bootstrap [naive]",
                "Spearman, Fisher-z Bonett–Wright [report]")


def bootstrap_pearson(x: Array, y: Array, seed: int, resamples: int, block: int = 250) -> Interval:
    """``correlation.bootstrap_correlations``' Pearson percentile interval of every study (rows), the judges
    put in the library's canonical order first; a block of studies shares one set of resampled judges."""
    order = np.lexsort((y, x), axis=1)  # by x, then y: the order correlation._paired puts judges in
    xs, ys = np.take_along_axis(x, order, 1), np.take_along_axis(y, order, 1)
    n = x.shape[1]
    lows, highs = np.empty(len(x)), np.empty(len(x))
    for start in range(0, len(x), block):
        draws = np.random.default_rng([int(seed + start // block) % 2**63, 31]).integers(0, n, size=(resamples, n))
        counts = np.bincount((draws + n * np.arange(resamples)[:, None]).reshape(-1),
                             minlength=resamples * n).reshape(resamples, n).astype(np.float64)
        counts = counts[counts.max(axis=1) < n]  # a resample of one judge repeated has no spread: skipped
        a, b = xs[start:start + block], ys[start:start + block]
        sx, sy = a @ counts.T, b @ counts.T
        sxx, syy, sxy = (a * a) @ counts.T, (b * b) @ counts.T, (a * b) @ counts.T
        r = (n * sxy - sx * sy) / np.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))
        lows[start:start + block], highs[start:start + block] = percentile_rows(np.clip(r, -1.0, 1.0))
    return lows, highs


def correlation_cells(rng: np.random.Generator, reps: int, resamples: int, seed: int, checks: list[float]
                      ) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    permutation: dict[int, float] = {}
    for rho in RHOS:
        row: dict[str, Any] = {"rho": rho, "methods": {name: {} for name in CORR_METHODS}}
        spearman_truth = 6 / math.pi * math.asin(rho / 2)
        for n in CORR_N:
            x = rng.standard_normal((reps, n))
            y = rho * x + math.sqrt(1 - rho * rho) * rng.standard_normal((reps, n))
            r = np.clip(_row_pearson(x, y), -1.0, 1.0)
            rs = np.clip(_row_pearson(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)), -1.0, 1.0)
            fz = np.array([correlation.fisher_z_interval(float(v), n, LEVEL) for v in r], dtype=np.float64)
            fs = np.array([correlation.fisher_z_interval(float(v), n, LEVEL, spearman=True) for v in rs],
                          dtype=np.float64)
            boot = bootstrap_pearson(x, y, seed, resamples)
            for i in range(min(CHECKED, reps)):
                got, _, _ = correlation.bootstrap_correlations(x[i], y[i], seed=seed + i // 250, resamples=resamples)
                low, high = bootstrap.percentile_interval(got, LEVEL)
                checks.append(max(abs(low - boot[0][i]), abs(high - boot[1][i])))
            row["methods"][CORR_METHODS[0]][n] = covered(fz[:, 0], fz[:, 1], rho)
            row["methods"][CORR_METHODS[1]][n] = covered(*boot, rho)
            row["methods"][CORR_METHODS[2]][n] = covered(fs[:, 0], fs[:, 1], spearman_truth)
            if rho == 0.0 and n <= correlation.EXACT_UP_TO:
                p = [correlation.permutation_p(x[i], y[i], seed=seed)["pearson"] for i in range(reps)]
                permutation[n] = 100.0 * float(np.mean(np.array(p) < 1 - LEVEL))
        rows.append(row)
    return {"rows": rows, "permutation_size_pct": permutation}


def _row_pearson(a: Array, b: Array) -> Array:
    ac, bc = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    return np.asarray(np.einsum("ij,ij->i", ac, bc) / np.sqrt(np.einsum("ij,ij->i", ac, ac)
                                                             * np.einsum("ij,ij->i", bc, bc)), dtype=np.float64)


# --- printing ------------------------------------------------------------------------------------------------

def _outside(value: float, k: int, report: bool) -> bool:
    """A report method's cell at K ≥ 10 outside the target, judged on the printed figure (one decimal)."""
    return report and k >= TARGET_K and not TARGET[0] <= round(value, 1) <= TARGET[1]


def coverage_lines(rows: list[dict[str, Any]]) -> list[str]:
    head = (f"{'interval':<22} {'truth':<10} {'sizes':<7} {'ICC':>4}  {'method':<30}"
            + "".join(f"{'K=' + str(k):>8}" for k in CLUSTERS))
    lines = [head, "-" * len(head)]
    for row in rows:
        for i, (name, cells) in enumerate(row["methods"].items()):
            left = (f"{row['interval']:<22} {row['label']:<10} {row['sizes']:<7} {row['icc']:>4.1f}" if i == 0
                    else " " * 45)
            lines.append(f"{left}  {name:<30}" + "".join(
                f"{cells[k]:>7.1f}{'*' if _outside(cells[k], k, '[report]' in name) else ' '}" for k in CLUSTERS))
    return lines


def null_lines(rows: list[dict[str, Any]]) -> list[str]:
    head = f"{'sizes':<7} {'ICC':>4}  {'test of the rate against 50 %':<30}" + "".join(
        f"{'K=' + str(k):>8}" for k in CLUSTERS)
    lines = [head, "-" * len(head)]
    for row in rows:
        for i, (name, cells) in enumerate(row["methods"].items()):
            left = f"{row['sizes']:<7} {row['icc']:>4.1f}" if i == 0 else " " * 12
            lines.append(f"{left}  {name:<30}" + "".join(
                f"{cells[k]:>7.1f}{'*' if _outside(100 - cells[k], k, '[report]' in name) else ' '}"
                for k in CLUSTERS))
    return lines


def holm_lines(rows: list[dict[str, Any]]) -> list[str]:
    head = (f"{'design':<30} {'test':<42} {'rejected/136':>12} {'40-pt pair':>10} {'≥20 pts':>8} "
            f"{'FWER null':>9} {'size raw':>8}")
    lines = [head, "-" * len(head)]
    for row in rows:
        for i, (name, got) in enumerate(row["tests"].items()):
            lines.append(f"{row['design'] if i == 0 else '':<30} {name:<42} {got['rejected_of_136']:>12.1f} "
                         f"{got['widest_pair_rejected_pct']:>9.1f}% {got['ge_20_points_rejected_pct']:>7.1f}% "
                         f"{got['fwer_pct']:>8.1f}% {got['size_unadjusted_pct']:>7.1f}%")
    return lines


def correlation_lines(result: dict[str, Any]) -> list[str]:
    head = f"{'interval':<42} {'ρ':>5}" + "".join(f"{'n=' + str(n):>8}" for n in CORR_N)
    lines = [head, "-" * len(head)]
    for name in CORR_METHODS:
        for i, row in enumerate(result["rows"]):
            lines.append(f"{name if i == 0 else '':<42} {row['rho']:>5.2f}" + "".join(
                f"{row['methods'][name][n]:>8.1f}" for n in CORR_N))
    sizes = result["permutation_size_pct"]
    lines.append(f"{'exact permutation p: size at ρ = 0 (%)':<42} {'0.00':>5}" + "".join(
        f"{sizes[n]:>8.1f}" if n in sizes else f"{'—':>8}" for n in CORR_N))
    return lines


def verdict(rows: list[dict[str, Any]], null_rows: list[dict[str, Any]], tag: str = "[report]",
            video_rows: Sequence[dict[str, Any]] = ()) -> tuple[int, list[str]]:
    """How many cells at K ≥ 10 the methods tagged ``tag`` have, and those outside 93–97 % (a rate's test
    against 50 %: size outside 3–7 %)."""
    total, out = 0, []
    for row in video_rows:
        for name, cells in row["methods"].items():
            for v in VIDEOS:
                if tag in name and v >= TARGET_K:
                    total += 1
                    if _outside(cells[v], v, True):
                        out.append(f"rate {row['truth']:.2f} by video (dyadic), ICC {row['icc']}, V={v}: "
                                   f"{cells[v]:.1f} %")
    for row in rows:
        for name, cells in row["methods"].items():
            for k in CLUSTERS:
                if tag in name and k >= TARGET_K:
                    total += 1
                    if _outside(cells[k], k, True):
                        out.append(f"{row['interval']} {row['label']}, {row['sizes']} sizes, ICC {row['icc']}, "
                                   f"K={k}: {cells[k]:.1f} %")
    for row in null_rows:
        for name, cells in row["methods"].items():
            for k in CLUSTERS:
                if tag in name and k >= TARGET_K:
                    total += 1
                    if _outside(100 - cells[k], k, True):
                        out.append(f"rate vs 50 %, {row['sizes']} sizes, ICC {row['icc']}, K={k}: "
                                   f"size {cells[k]:.1f} %")
    return total, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench science", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000, help="simulated studies per coverage cell")
    parser.add_argument("--holm-reps", type=int, default=1000, help="simulated studies per Holm scenario")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of the naive peers")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("build/bench/science.json"))
    parser.add_argument("--only", default="", help="comma-separated sections to run (coverage, video, null, holm, "
                        "correlation; default all): a quicker look while iterating — its JSON is not the table")
    args = parser.parse_args(argv)
    t0, load0 = time.perf_counter(), load()
    rng = np.random.default_rng(args.seed)
    mc = 100 * 2 * math.sqrt(LEVEL * (1 - LEVEL) / args.reps)
    print(f"SIMULATED studies of known truth (issue 40) — nothing here is measured on real judges. "
          f"seed {args.seed}, {args.reps:,} studies a coverage cell (Monte-Carlo error of a 95 % coverage "
          f"±{mc:.1f} points at 2 SE), {args.holm_reps:,} a Holm scenario, {args.resamples:,} bootstrap resamples; "
          f"{os.cpu_count()} CPUs, load {load0} at the start", flush=True)
    checks: list[float] = []
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    if only - set(SECTIONS):
        parser.error(f"unknown sections {sorted(only - set(SECTIONS))}: choose from {', '.join(SECTIONS)}")

    def wanted(section: str) -> bool:
        return not only or section in only

    def say(message: str) -> None:
        print(f"{message} — {time.perf_counter() - t0:.1f} s", flush=True)

    with one_blas_thread():  # small products: OpenBLAS's threads cost more than they give (index/blas.py)
        # each section draws from its own stream, so that running some of them (--only) gives those the
        # numbers the full run gives
        streams = dict(zip(SECTIONS, rng.spawn(len(SECTIONS)), strict=True))
        cov = coverage_cells(streams["coverage"], args.reps, args.resamples, args.seed, checks, say) \
            if wanted("coverage") else []
        by_video = video_cells(streams["video"], args.reps, checks, say) if wanted("video") else []
        nulls = null_cells(streams["null"], args.reps, args.resamples, args.seed, checks) if wanted("null") else []
        say(f"  rate vs 50 % done (load {load()})")
        holm = holm_cells(streams["holm"], args.holm_reps, checks, say) if wanted("holm") else []
        corr = correlation_cells(streams["correlation"], args.reps, args.resamples, args.seed, checks) \
            if wanted("correlation") else {"rows": [], "permutation_size_pct": {}}
        say(f"  correlation done (load {load()})")
    wall = time.perf_counter() - t0
    total, outside = verdict(cov, nulls, video_rows=by_video)
    proto_total, proto_outside = verdict(cov, nulls, "[prototype]")
    results: dict[str, Any] = {
        "simulated": True, "seed": args.seed, "reps": args.reps, "holm_reps": args.holm_reps,
        "resamples": args.resamples, "pairs": PAIRS, "cpus": os.cpu_count(), "load_start": load0,
        "load_end": load(), "wall_s": round(wall, 1), "small_k": SMALL_K_NOTE,
        "peers_checked": {"cells_studies": len(checks), "max_abs_difference": max(checks, default=0.0)},
        "coverage": cov, "by_video": by_video, "null": nulls, "holm": holm, "correlation": corr,
        "report_cells_at_k_ge_10": total, "report_cells_outside_target": outside,
        "prototype_cells_outside_target": proto_outside}
    print()
    print(f"1. SIMULATED coverage (%) of nominal 95 % intervals: {PAIRS} pairs in K clusters (equal sizes, or "
          f"unequal: largest {UNEQUAL_RATIO:g}× smallest), beta-binomial cluster difficulty of ICC 0–0.3; "
          f"target {TARGET[0]:g}–{TARGET[1]:g} % at K ≥ {TARGET_K} (* outside it, report methods only)")
    print(f"   {SMALL_K_NOTE}")
    print("   paired: judges' cluster accuracies correlate κ = 0.5 (retrieved − uniform 0.8); one draw decides "
          "both sides of a pair with probability 0.5 (0.7)")
    print("   judge − judge [report]: MOVER from the two judges' beta-binomial intervals (analytics/mover.py), "
          "r = 0 below 10 clusters; [old]: the CR2 t of the per-cluster differences it replaced (retrieved − "
          "uniform's [report] still)")
    print("   [prototype]: the cluster bootstrap-t (each resample studentised by its CR2 se), NOT what the report "
          "prints — measured beside it as a candidate for the cells the report's method misses")
    print("\n".join(coverage_lines(cov)))
    print("\n   where the report's interval misses the target: mean width (points) beside the prototype's")
    print("\n".join(f"   {line}" for line in width_lines(cov)))
    print(f"\n1b. SIMULATED coverage (%) when the clusters are V videos and a pair cites two of them "
          f"({SAME_VIDEO:.0%} of pairs: both segments from one video); {PAIRS} pairs, probit video effects "
          "(latent ICC ρ: pairs sharing one video correlate ρ/2, sharing both ρ); * outside 93–97 % (report)")
    print("\n".join(video_lines(by_video)))
    print(f"\n2. SIMULATED size (%) of a rate's test against 50 % when the truth is 50 % (nominal 5 %; * outside "
          f"3–7 % at K ≥ {TARGET_K}); peers: their interval excludes 50 %")
    print("\n".join(null_lines(nulls)))
    print(f"\n3. SIMULATED 17 judges {JUDGES[0]:.0%}–{JUDGES[-1]:.0%} accurate (every one of 136 pairs differs; "
          f"the widest by 40 points) on {PAIRS} pairs, ICC {HOLM_ICC}, Holm at 0.05 over the 136 pairs; "
          f"FWER: all 17 at {NULL_ACCURACY:.0%} (global null); size raw: share of null pairs with unadjusted "
          f"p < 0.05. {args.holm_reps:,} studies each. The old sign flip's p ≥ 1/{OLD_DRAWS + 1:,}, so Holm's "
          f"smallest adjusted p is ≥ 136/{OLD_DRAWS + 1:,} = {136 / (OLD_DRAWS + 1):.3f}")
    print("\n".join(holm_lines(holm)))
    print(f"\n4. SIMULATED correlation of n judges' two scores (bivariate normal of known ρ; Spearman against "
          f"(6/π)·asin(ρ/2)): coverage (%) of 95 % intervals, {args.reps:,} studies a cell")
    print("\n".join(correlation_lines(corr)))
    print(f"\nvectorised copies checked against the library (analytics/bootstrap.py, "
          f"correlation.bootstrap_correlations, small_sample.difference's p, small_sample.rate's beta-binomial, "
          f"MOVER as intervals.paired_from_sums gives it) on "
          f"the first {CHECKED} studies of "
          f"every cell: {len(checks)} checks, "
          f"largest |difference| {max(checks, default=0.0):.1e}")
    print(f"report methods at K ≥ {TARGET_K}: {total - len(outside)} of {total} cells within "
          f"{TARGET[0]:g}–{TARGET[1]:g} % (tests: size 3–7 %)" + ("" if not outside else "; outside:"))
    for line in outside:
        print(f"  {line}")
    print(f"the cluster bootstrap-t PROTOTYPE (not in the report) at K ≥ {TARGET_K}: "
          f"{proto_total - len(proto_outside)} of {proto_total} cells within {TARGET[0]:g}–{TARGET[1]:g} %"
          + ("" if not proto_outside else "; outside: " + "; ".join(proto_outside)))
    print(f"wall {wall:.1f} s on {os.cpu_count()} CPUs; load {load0} at the start, {load()} at the end", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {args.out}")
    return 0 if max(checks, default=0.0) < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
