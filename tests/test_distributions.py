"""analytics/distributions.py gives scipy.stats's floats, bit for bit, without importing scipy.stats."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy import stats

from playlisteval.analytics import distributions

Q = np.array([1e-12, 1e-6, 0.001, 0.025, 0.05, 0.2, 0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-9, 0.0, 1.0])
X = np.array([-40.0, -3.0, -1.0, -1e-9, 0.0, 1e-9, 0.5, 1.0, 1.96, 2.5, 5.0, 12.0, 40.0, np.inf, -np.inf])
DF = np.array([1.0, 1.5, 2.0, 3.0, 9.0, 29.0, 99.0, 1000.0, 1e6, 1e300, np.inf])


def same(a: object, b: object) -> bool:
    return bool(np.array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), equal_nan=True))


def test_t_and_normal_as_scipy_stats() -> None:
    q, x, df = Q[:, None], X[:, None], DF[None, :]
    assert same(distributions.t_ppf(q, df), stats.t.ppf(q, df))
    assert same(distributions.t_sf(x, df), stats.t.sf(x, df))
    assert same(distributions.norm_ppf(Q), stats.norm.ppf(Q))
    assert same(distributions.norm_sf(X), stats.norm.sf(X))
    for qq, d in ((0.975, 9), (0.8, 4.0), (0.5, 1e300)):  # scalars: NumPy scalars, as scipy.stats gives
        got, want = distributions.t_ppf(qq, d), stats.t.ppf(qq, d)
        assert type(got) is type(want) and got == want


def test_noncentral_t_as_scipy_stats() -> None:
    for df in (1, 2, 3, 9, 29, 200):
        for nc in (0.0, 0.5, 2.8, 7.0, 15.0, 40.0):
            for x in (-12.7, -2.0, 0.0, 1.7, 2.26, 12.7):
                assert same(distributions.nct_cdf(x, df, nc), stats.nct.cdf(x, df, nc))  # NaN where scipy's is
                assert same(distributions.nct_sf(x, df, nc), stats.nct.sf(x, df, nc))


def test_the_report_s_statistics_import_no_scipy_stats() -> None:
    """What a cold report imports while the store is copied (section_threads.import_sections) leaves
    scipy.stats out: that import was ~0.3 s of the copy's time."""
    code = ("import sys; from playlisteval.analytics.section_threads import import_sections; import_sections(); "
            "print(sorted(m for m in sys.modules if m == 'scipy.stats' or m.startswith('scipy.stats.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
