"""Holm's adjustment (analytics/multiplicity.py) against a case worked by hand and against the closed-testing
definition of Holm, enumerated by brute force. (statsmodels' multipletests(method='holm') is not in the
environment; it would be a further check.)"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from playlisteval.analytics.multiplicity import holm, holm_adjust


def _closed_testing(p: list[float]) -> list[float]:
    """Holm is the closed test of Bonferroni local tests: H_i's adjusted p-value is the largest, over every
    intersection hypothesis S containing i, of S's Bonferroni p-value min(1, |S| · min_{j∈S} p_j)."""
    m = len(p)
    out = []
    for i in range(m):
        worst = 0.0
        for r in range(1, m + 1):
            for subset in itertools.combinations(range(m), r):
                if i in subset:
                    worst = max(worst, min(1.0, r * min(p[j] for j in subset)))
        out.append(worst)
    return out


def test_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 × (4, 3, 2, 1) = 0.02, 0.03, 0.06, 0.04 → running max 0.02, 0.03, 0.06, 0.06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm_adjust([0.2]) == pytest.approx([0.2])
    assert holm_adjust([]) == []


def test_against_closed_testing_by_brute_force() -> None:
    rng = np.random.default_rng(5)
    for m in range(1, 9):
        for _ in range(20):
            p = rng.choice([rng.random(), rng.random() ** 4, 0.01, 0.05], size=m).tolist()  # ties included
            got = holm_adjust(p)
            assert got == pytest.approx(_closed_testing(p), abs=1e-12)
            order = np.argsort(p, kind="stable")
            sorted_adjusted = np.array(got)[order]
            assert np.all(np.diff(sorted_adjusted) >= -1e-15)  # monotone in the p-values' order
            assert all(a is not None and p_i <= a <= 1 for p_i, a in zip(p, got, strict=True))


def test_none_is_kept_and_not_counted() -> None:
    got = holm_adjust([None, 0.01, None, 0.04])
    assert got[0] is None and got[2] is None
    assert got[1:4:2] == pytest.approx(holm_adjust([0.01, 0.04]))  # m = 2, not 4
    assert holm_adjust([None, None]) == [None, None]
    report = holm([0.001, None, 0.03, 0.2], alpha=0.05)
    assert report["m"] == 3 and report["rejected"] == [True, None, False, False]
    adjusted = report["adjusted"]
    assert adjusted[1] is None
    assert [adjusted[0], adjusted[2], adjusted[3]] == pytest.approx([0.003, 0.06, 0.2])
    assert "Holm" in report["method"]


def test_rejections_match_the_step_down_procedure() -> None:
    rng = np.random.default_rng(9)
    for _ in range(50):
        p = (rng.random(6) ** 3).tolist()
        # step down: compare p(i) with alpha / (m − i + 1) until the first failure
        rejected = [False] * 6
        for rank, i in enumerate(np.argsort(p, kind="stable")):
            if p[i] > 0.05 / (6 - rank):
                break
            rejected[i] = True
        assert holm(p)["rejected"] == rejected


def test_invalid_p_values_are_refused() -> None:
    bad: list[Any]
    for bad in ([0.1, float("nan")], [1.2], [-0.01]):
        with pytest.raises(ValueError, match="between 0 and 1"):
            holm_adjust(bad)
    with pytest.raises(ValueError, match="alpha"):
        holm([0.1], alpha=0)


def test_adjust_family_names_the_family_and_adjusts_by_hand() -> None:
    from playlisteval.analytics.intervals import Interval
    from playlisteval.analytics.multiplicity import adjust_family

    ivs = [Interval(0.1, 0.0, 0.2, 10, 5, p_value=p) for p in (0.01, 0.04, 0.03)] + [None,
                                                                                     Interval(0.5, 0.4, 0.6, 10, 5)]
    got = adjust_family(ivs, "scope steps")
    # sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 → 0.03, 0.06, 0.04 → running max 0.03, 0.06, 0.06
    assert [g.p_holm if g else None for g in got] == pytest.approx([0.03, 0.06, 0.06, None, None])
    assert got[0] is not None and got[0].family == "scope steps: Holm over 3"
    assert got[0].as_dict()["family"] == "scope steps: Holm over 3" and got[4] is ivs[4] and got[3] is None
