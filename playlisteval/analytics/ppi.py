"""Prediction-powered inference of a mean (PPI++; Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference").

Why: human labels are few and dear; a model's predictions are many and cheap but biased. PPI uses the
predictions on a large unlabelled set and corrects their bias with the small labelled set, where both the
human label Y and the prediction f exist. With a tuning weight λ the estimator

    θ̂_λ = mean_j(λ·f̃_j) + mean_i(Y_i − λ·f_i)

is unbiased for E[Y] for any fixed λ (the λ terms cancel in expectation), and its variance

    Var(θ̂_λ) = λ²·Var(f̃)/N + Var(Y − λ·f)/n

is smallest at λ* = Cov(Y, f) / ((1 + n/N)·Var(f)) ("power tuning"). λ̂ is clipped to [0, 1]: at 0 the
interval is the classical one from the labels alone, so a useless model cannot make it wider; at 1 it is
the original PPI. Var(f) in λ̂ pools the predictions of both sets (they share a distribution; the
reference implementation, ``ppi_py``, does the same). Variances use ddof = 1; the interval is the normal
(Wald) one, ``θ̂ ± z·SE``; for shares it is shown within [0, 1], the unclipped bounds kept beside it
with a note (clipping alone would hide that n is too small).

The classical interval beside it is the same normal interval of mean(Y) (so λ = 0 reproduces it exactly
and the widths compare like with like); for 0/1 labels the Wilson interval is given too, which behaves
far better than Wald when n is small or the rate is near 0 or 1.

Assumptions: the labelled items are a uniform random sample of the same population as the unlabelled
ones, and items are independent (no cluster adjustment: pairs of one question count as independent here).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

LEVEL = 0.95


def _values(values: ArrayLike, what: str) -> NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: every entry must be a finite number (no None or NaN)")
    return x


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} is not between 0 and 1")
    return NormalDist().inv_cdf(0.5 + level / 2)


def tuned_lambda(labels: ArrayLike, predictions: ArrayLike, unlabelled: ArrayLike) -> float:
    """The power-tuned λ̂ = Cov(Y, f) / ((1 + n/N)·Var(f)), clipped to [0, 1]. Constant predictions carry
    no information and every λ gives the same estimate: λ̂ = 0 then."""
    y, f, g = _values(labels, "labels"), _values(predictions, "predictions"), _values(unlabelled, "unlabelled")
    n, big_n = len(y), len(g)
    var_f = float(np.var(np.concatenate([f, g]), ddof=1))
    if var_f == 0:
        return 0.0
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    return float(min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f))))


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a binomial proportion."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"a proportion of {successes} successes in {n} trials")
    z, p = _z(level), successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _normal(estimate: float, se: float, z: float) -> tuple[float | None, float | None]:
    """θ̂ ± z·SE; None when SE is 0 (the sample shows no variation: a zero-width interval would be false)."""
    return (None, None) if se <= 0 else (estimate - z * se, estimate + z * se)


def _bounded(out: dict[str, Any]) -> dict[str, Any]:
    """A share's interval within [0, 1] (issue 40: "87.5 [74.0, 101.0]" was printed): the normal interval
    is kept as ``normal_low``/``normal_high`` and a note says it reached past the bounds — the sign that n
    is too small for it, which clipping alone would hide."""
    low, high = out["low"], out["high"]
    if low is None or high is None or (low >= 0.0 and high <= 1.0):
        return out
    note = "the normal interval reached past [0, 100] %: too few labels for it; shown clipped"
    return {**out, "normal_low": low, "normal_high": high, "low": max(0.0, low), "high": min(1.0, high),
            "note": f"{out['note']}; {note}" if out.get("note") else note}


def classical_mean(labels: ArrayLike, level: float = LEVEL) -> dict[str, Any]:
    """The human-only estimate: mean(Y) with its normal interval (and Wilson's, for 0/1 labels)."""
    y = _values(labels, "labels")
    if len(y) < 2:
        raise ValueError(f"an interval needs at least 2 labelled items (got {len(y)})")
    z, estimate = _z(level), float(y.mean())
    se = float(np.std(y, ddof=1)) / math.sqrt(len(y))
    low, high = _normal(estimate, se, z)
    binary = bool(np.all((y == 0) | (y == 1)))
    wilson = wilson_interval(int(y.sum()), len(y), level) if binary else None
    out = {"estimate": estimate, "low": low, "high": high, "standard_error": se, "n": len(y), "level": level,
           "method": "normal interval of the labels' mean (ddof 1)",
           "wilson": None if wilson is None else {"low": wilson[0], "high": wilson[1]}}
    return _bounded(out) if binary else out


def ppi_mean(labels: ArrayLike, predictions: ArrayLike, unlabelled: ArrayLike, *, level: float = LEVEL,
             lam: float | None = None) -> dict[str, Any]:
    """PPI++ estimate and normal interval of E[Y] from ``labels`` (Y) and ``predictions`` (f) on the same
    n labelled items and ``unlabelled`` predictions (f̃) on N other items; ``lam`` None: power-tuned λ̂,
    else that fixed λ (0 gives the classical interval)."""
    y, f, g = _values(labels, "labels"), _values(predictions, "predictions"), _values(unlabelled, "unlabelled")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} labels but {len(f)} predictions on the labelled items")
    if len(y) < 2:
        raise ValueError(f"PPI needs at least 2 labelled items (got {len(y)})")
    if len(g) < 2:
        raise ValueError(f"PPI needs at least 2 unlabelled predictions (got {len(g)})")
    if lam is not None and not math.isfinite(lam):
        raise ValueError(f"lambda {lam} is not a number")
    n, big_n = len(y), len(g)
    tuned = lam is None
    weight = tuned_lambda(y, f, g) if lam is None else float(lam)
    estimate = float(weight * g.mean() + (y - weight * f).mean())
    variance = weight**2 * float(np.var(g, ddof=1)) / big_n + float(np.var(y - weight * f, ddof=1)) / n
    se = math.sqrt(variance)
    low, high = _normal(estimate, se, _z(level))
    classical = classical_mean(y, level)
    gain = None if se <= 0 or classical["standard_error"] <= 0 else n * (classical["standard_error"] / se) ** 2
    method = (f"PPI++ mean ({'power-tuned lambda clipped to [0, 1]' if tuned else f'fixed lambda {weight:g}'}), "
              "normal interval, variance lambda^2 Var(f~)/N + Var(Y - lambda f)/n (ddof 1)")
    out = {"estimate": estimate, "low": low, "high": high, "standard_error": se, "lambda": weight,
           "lambda_tuned": tuned, "n_labelled": n, "n_unlabelled": big_n, "level": level,
           "effective_labelled_n": gain, "method": method, "classical": classical}
    if low is None:
        out["note"] = "no interval: the labelled residuals and the unlabelled predictions show no variation"
    shares = all(bool(np.all((x >= 0) & (x <= 1))) for x in (y, f, g))
    return _bounded(out) if shares else out
