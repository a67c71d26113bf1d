"""`python -m bench science` (bench/science.py): the table's shape on a tiny run, and the bench's vectorised
copies held to independent computations (brute-force enumeration, numpy's quantile, the library)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from bench import science
from playlisteval.analytics import bootstrap, intervals, mover, small_sample


def test_a_tiny_run_prints_every_section_labelled_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # every section and every kind of cell, on fewer truths (the full grid took 70-97 s of the suite): the
    # lowest and the highest ICC, a middling and a near-ceiling rate, both kinds of difference
    monkeypatch.setattr(science, "ICCS", (0.0, 0.3))
    monkeypatch.setattr(science, "RATES", (0.5, 0.97))
    monkeypatch.setattr(science, "DIFFERENCES", science.DIFFERENCES[1:])
    monkeypatch.setattr(science, "VIDEO_RATES", (0.9,))
    monkeypatch.setattr(science, "VIDEO_ICCS", (0.3,))
    out = tmp_path / "science.json"
    assert science.main(["--reps", "12", "--holm-reps", "2", "--resamples", "60", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("SIMULATED") and "seed 40" in printed and "12 studies a coverage cell" in printed
    assert science.SMALL_K_NOTE in printed
    for title in ("1. SIMULATED coverage", "1b. SIMULATED coverage", "2. SIMULATED size", "3. SIMULATED 17 judges",
                  "4. SIMULATED correlation"):
        assert title in printed
    got = json.loads(out.read_text())
    assert got["simulated"] is True and got["reps"] == 12 and got["seed"] == 40
    rows = got["coverage"]
    kinds = len(science.RATES) + len(science.DIFFERENCES)
    assert len(rows) == 2 * len(science.ICCS) * kinds
    for row in rows:
        kind = (science.METHODS_RATE if row["interval"].endswith("(rate)") else
                science.METHODS_JUDGES if row["interval"] == "judge − judge" else science.METHODS_DIFF)
        assert list(row["methods"]) == list(kind) and row["widths"].keys() == row["methods"].keys()
        for cells in row["methods"].values():
            assert sorted(int(k) for k in cells) == list(science.CLUSTERS)
            assert all(0 <= v <= 100 for v in cells.values())
    assert len(got["null"]) == 2 * len(science.ICCS)
    assert len(got["by_video"]) == len(science.VIDEO_RATES) * len(science.VIDEO_ICCS)
    for row in got["by_video"]:
        assert sorted(int(v) for v in row["methods"][science.METHODS_VIDEO[0]]) == list(science.VIDEOS)
    assert [r["clusters"] for r in got["holm"]] == [k for k, _ in science.HOLM_DESIGNS]
    for row in got["holm"]:
        for test in row["tests"].values():
            assert set(test) == {"rejected_of_136", "widest_pair_rejected_pct", "ge_20_points_rejected_pct",
                                 "fwer_pct", "size_unadjusted_pct"}
    # the old Monte-Carlo sign flip cannot reject after Holm: 136/2001 > 0.05
    assert all(r["tests"][science.TESTS[2]]["rejected_of_136"] == 0 for r in got["holm"])
    corr = got["correlation"]
    assert [r["rho"] for r in corr["rows"]] == list(science.RHOS)
    assert sorted(int(n) for n in corr["permutation_size_pct"]) == [n for n in science.CORR_N if n <= 9]
    assert got["peers_checked"]["max_abs_difference"] < 1e-9
    assert got["report_cells_at_k_ge_10"] == (len(rows) + len(got["null"])) * 2 + len(got["by_video"]) * 3


def test_the_exact_sign_flip_matches_brute_force_enumeration() -> None:
    rng = np.random.default_rng(7)
    for k in (1, 2, 5, 9):
        d = rng.integers(-4, 5, size=(30, k)).astype(np.float64)
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=k)))
        brute = [float(np.mean(np.abs(signs @ row) >= abs(row.sum()) - 1e-9)) for row in d]
        assert science.exact_sign_flip_p(d) == pytest.approx(brute, abs=1e-15)


def test_the_vectorised_cluster_t_is_small_sample_difference() -> None:
    rng = np.random.default_rng(8)
    counts = science.cluster_sizes(12, unequal=True).astype(np.float64)
    d = rng.integers(-5, 6, size=(40, 12)).astype(np.float64)
    d[0] = 2.0  # every cluster the same total, so not the same mean (unequal sizes): still the t branch
    d[1] = 0.0  # no difference anywhere: p = 1
    want = [small_sample.difference(row, counts, 0.95, 0.0)[2] for row in d]
    assert science.cluster_t_p(d, counts) == pytest.approx(want, abs=1e-12)


def test_the_batched_rate_is_small_sample_rate_study_by_study() -> None:
    """The bench computes a cell's beta-binomial intervals in one array; each study alone through the
    library gives the very same numbers (the sums are left to right, so padding and batch size cannot
    change a rounding — and with it a search's path)."""
    rng = np.random.default_rng(12)
    for k, unequal in ((4, False), (10, True)):
        counts = science.cluster_sizes(k, unequal=unequal).astype(np.float64)
        sums = science.simulate_rate(rng, 0.9, 0.3, counts.astype(np.int64), 6)
        sums[0] = counts  # every pair right
        low, high, p = science.report_rate(sums, counts, null=0.5)
        for i, row in enumerate(sums):
            assert (low[i], high[i], p[i]) == small_sample.rate(row, counts, 0.95, 0.5)[:3]


def test_percentiles_and_bootstrap_are_the_library_s() -> None:
    rng = np.random.default_rng(9)
    for b in (60, 999, 2000):
        x = rng.random((3, b))
        low, high = science.percentile_rows(x)
        for i in range(3):
            assert (low[i], high[i]) == bootstrap.percentile_interval(x[i])
    counts = science.cluster_sizes(4).astype(np.float64)
    sums = science.simulate_rate(rng, 0.8, 0.3, counts.astype(np.int64), 300)
    low, high = science.cluster_bootstrap(sums, counts, seed=5, resamples=500)
    for i in (0, 1, 251):
        want = bootstrap.percentile_interval(bootstrap.bootstrap_distribution(sums[i], counts, seed=5 + i // 250,
                                                                              resamples=500))
        assert (low[i], high[i]) == pytest.approx(want, abs=1e-12)


def test_the_simulated_truth_is_what_the_bench_says_it_is() -> None:
    """Each side of a paired design keeps its mean, and a rate's clusters have the stated ICC."""
    rng = np.random.default_rng(10)
    sizes = science.cluster_sizes(40, unequal=True)
    assert sizes.sum() == science.PAIRS and sizes.max() / sizes.min() == pytest.approx(6, rel=0.15)
    sums, discordant = science.simulate_paired(rng, (0.97, 0.6), 0.3, sizes, 400, 0.5, 0.5)
    means = sums.sum(axis=(0, 2)) / (400 * science.PAIRS)
    assert means == pytest.approx([0.97, 0.6], abs=0.006)
    assert np.all(discordant >= np.abs(sums[:, 0] - sums[:, 1]).sum(axis=1) - 1e-9)
    equal = science.cluster_sizes(40)
    rates = science.simulate_rate(rng, 0.7, 0.3, equal, 400) / equal  # cluster means of a beta-binomial
    m = float(equal.mean())
    icc = (rates.var(ddof=1) - 0.7 * 0.3 / m) / (0.7 * 0.3 * (1 - 1 / m))
    assert icc == pytest.approx(0.3, abs=0.03)


def test_the_bootstrap_t_prototype_is_its_definition_study_by_study() -> None:
    """Each resample's copies taken as clusters, studentised by small_sample.cr2_variance of those copies."""
    rng = np.random.default_rng(11)
    counts = science.cluster_sizes(10, unequal=True).astype(np.float64)
    sums = science.simulate_rate(rng, 0.9, 0.3, counts.astype(np.int64), 4)
    low, high = np.zeros(4), np.ones(4)
    got = science.cluster_bootstrap_t(sums, counts, low, high, seed=3, resamples=300, bounds=(0.0, 1.0))
    draws = np.random.default_rng([3, 3]).integers(0, 10, size=(300, 10))
    for i, s in enumerate(sums):
        p = s.sum() / counts.sum()
        se = np.sqrt(small_sample.cr2_variance(s, counts))
        t = []
        for row in draws:
            ds, dn = s[row], counts[row]
            p_star = ds.sum() / dn.sum()
            v = small_sample.cr2_variance(ds, dn)
            t.append((p_star - p) / np.sqrt(v) if v > 1e-24 else np.sign(p_star - p) * np.inf)
        t_low, t_high = np.quantile(np.nan_to_num(np.array(t)), [0.025, 0.975], method="inverted_cdf")
        want = (min(1.0, max(0.0, p - t_high * se)), min(1.0, max(0.0, p - t_low * se)))
        assert (got[0][i], got[1][i]) == pytest.approx(want, abs=1e-9)


def test_the_report_judge_difference_is_mover_as_the_library_gives_it() -> None:
    """The bench's judge − judge row is what trust and the leaderboard compute (intervals.paired_from_sums:
    MOVER), study by study, and its Holm p the same; the CR2 t stays beside it as [old]."""
    rng = np.random.default_rng(13)
    counts = science.cluster_sizes(10, unequal=True).astype(np.float64)
    both, _ = science.simulate_paired(rng, (0.97, 0.92), 0.3, counts.astype(np.int64), 6, 0.5, 0.5)
    low, high, p = science.report_difference(both, counts)
    for i in range(6):
        iv = intervals.paired_from_sums([(both[i, 0], both[i, 1], counts, None)])[0]
        assert (iv.low, iv.high, iv.p_value) == pytest.approx((low[i], high[i], p[i]), abs=1e-9)
        assert iv.method in (mover.METHOD, small_sample.DIFFERENCE_METHOD)
    assert science.METHODS_JUDGES[0].endswith("[report]") and science.METHODS_JUDGES[-1] == "CR2 t(K−1) [old]"
    sums, _ = science.simulate_paired(rng, [0.5, 0.6, 0.8], 0.1, counts.astype(np.int64), 3, 0.5, 0.5)
    first, second = np.triu_indices(3, 1)
    checks: list[float] = []
    got = science.mover_p(sums, first, second, counts, checks)
    for r in range(3):
        for q in range(3):
            iv = intervals.paired_from_sums([(sums[r, first[q]], sums[r, second[q]], counts, None)])[0]
            assert iv.p_value == pytest.approx(got[r, q], abs=1e-9)
    assert max(checks) < 1e-9
