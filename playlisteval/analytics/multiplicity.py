"""Holm's step-down adjustment of a family of p-values.

Why: a report that tests many judges (or many judges against many baselines) will find some "significant"
differences by chance. Holm (1979) controls the family-wise error rate under any dependence between the
tests, like Bonferroni, but rejects at least as much; the adjusted p-values let each comparison be read
against the report's own alpha.

Adjusted p-values: sort the m p-values ascending, p(1) ≤ … ≤ p(m); then
``p̃(i) = max_{j ≤ i} min(1, (m − j + 1)·p(j))`` — monotone in the sorted order and capped at 1. A None
(a comparison that could not be tested) is kept as None and is not counted in m: it cannot be rejected,
and counting it would penalise the tests that exist for one that does not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from playlisteval.analytics.intervals import Interval

METHOD = "Holm step-down (family-wise error rate), None entries excluded from the family"


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the input order; None entries stay None (and are not counted in m)."""
    present = [(i, _checked(p, i)) for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if not present:
        return out
    index = np.array([i for i, _ in present], dtype=np.int64)
    p = np.array([v for _, v in present], dtype=np.float64)
    order = np.argsort(p, kind="stable")  # ties: any order gives the same adjusted values
    m = len(p)
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(stepped)
    for position, value in zip(index[order].tolist(), adjusted.tolist(), strict=True):
        out[position] = float(value)
    return out


def holm(p_values: Sequence[float | None], alpha: float = 0.05) -> dict[str, Any]:
    """The adjusted p-values with, for each, whether Holm rejects it at family-wise level ``alpha``
    (None where the p-value is None)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha} is not between 0 and 1")
    adjusted = holm_adjust(p_values)
    return {"method": METHOD, "alpha": alpha, "m": sum(p is not None for p in p_values), "adjusted": adjusted,
            "rejected": [None if a is None else a <= alpha for a in adjusted]}


def _checked(p: float, i: int) -> float:
    value = float(p)
    if math.isnan(value) or not 0 <= value <= 1:
        raise ValueError(f"p-value #{i} is {p!r}, not a number between 0 and 1 (use None for an untested one)")
    return value


def adjust_family(tests: Sequence[Interval | None], family: str) -> list[Interval | None]:
    """Each interval with its p Holm-adjusted within the named ``family`` (issue 40: every p-value a page
    prints belongs to a family with its correction); intervals without a p are returned as they are."""
    adjusted = holm_adjust([None if iv is None else iv.p_value for iv in tests])
    m = sum(a is not None for a in adjusted)
    name = f"{family}: Holm over {m}"
    return [iv if iv is None or a is None else dataclasses.replace(iv, p_holm=a, family=name)
            for iv, a in zip(tests, adjusted, strict=True)]
