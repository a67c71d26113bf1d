"""The t, normal and noncentral-t functions the statistics use, from scipy.special rather than scipy.stats.

Why: importing scipy.stats costs ~0.3 s more than scipy.special (its distributions write their docstrings
at import), paid by every cold report while the store is copied (issue 43: a cold report at 1M judgments
in ~3 s). scipy.stats's own methods call these very functions after argument checks that the arguments
used here pass (scipy 1.17, stats/_continuous_distns.py): ``t.ppf`` is ``stdtrit(df, q)``, ``t.sf``
``stdtr(df, −x)``, ``norm.ppf`` ``ndtri``, ``norm.sf`` ``ndtr(−x)``, ``nct.cdf`` ``nctdtr(df, nc, x)`` and
``nct.sf`` Boost's complement clipped to [0, 1] — so the floats are the same (tests/test_distributions.py
compares them bit for bit over a grid, edges included). Boost's complement is private in scipy.special:
where a scipy lacks it, ``nct_sf`` asks scipy.stats instead, the same number more slowly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

try:  # what scipy.stats.nct.sf calls (scipy 1.17); private, hence the fallback in nct_sf
    from scipy.special._ufuncs import _nct_sf
except ImportError:  # pragma: no cover - another scipy
    _nct_sf = None


def _out(value: Any) -> Any:
    """A 0-d result as a NumPy scalar, an array as itself (as scipy.stats returns them)."""
    got = np.asarray(value, dtype=np.float64)
    return got[()] if got.ndim == 0 else got


def t_ppf(q: ArrayLike, df: ArrayLike) -> Any:
    """Student's t quantile (scipy.stats.t.ppf; at q = 0 its support's lower end, −∞, where stdtrit says +∞)."""
    p = np.asarray(q, dtype=np.float64)
    return _out(np.where(p == 0, -np.inf, special.stdtrit(np.asarray(df, dtype=np.float64), p)))


def t_sf(x: ArrayLike, df: ArrayLike) -> Any:
    """Student's t upper tail (scipy.stats.t.sf)."""
    return _out(special.stdtr(np.asarray(df, dtype=np.float64), -np.asarray(x, dtype=np.float64)))


def norm_ppf(q: ArrayLike) -> Any:
    """The standard normal quantile (scipy.stats.norm.ppf)."""
    return _out(special.ndtri(np.asarray(q, dtype=np.float64)))


def norm_sf(x: ArrayLike) -> Any:
    """The standard normal upper tail (scipy.stats.norm.sf)."""
    return _out(special.ndtr(-np.asarray(x, dtype=np.float64)))


def nct_cdf(x: float, df: float, nc: float) -> float:
    """The noncentral t's distribution function (scipy.stats.nct.cdf)."""
    return float(special.nctdtr(float(df), float(nc), float(x)))


def nct_sf(x: float, df: float, nc: float) -> float:
    """The noncentral t's upper tail (scipy.stats.nct.sf)."""
    if _nct_sf is None:  # pragma: no cover - another scipy
        from scipy import stats

        return float(stats.nct.sf(x, df, nc))
    with np.errstate(over="ignore"):  # as scipy.stats: its gh-17432
        return float(np.clip(_nct_sf(float(x), float(df), float(nc)), 0, 1))
