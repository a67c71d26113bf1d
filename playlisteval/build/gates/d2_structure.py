"""SPEC D2: the causal attributes' importance scores sum to 1 ± 0.01 (SPEC D1.1), and each wrong answer
has a non-empty response and ≥ 1 degradation entry, at least one of them ``visual_only``. No model;
reasons start with a stable kind for the funnel."""

from __future__ import annotations

import math
from typing import Any

from playlisteval.build.gates import GateVerdict

#: SPEC D1.1: "importance_score (sum 1)", read with this tolerance for rounding.
IMPORTANCE_TOLERANCE = 0.01


def importance_total(payload: dict[str, Any]) -> float | None:
    """The sum of the causal attributes' importance scores; None when one is not a number."""
    total = 0.0
    for attribute in payload.get("causal_attributes") or []:
        score = attribute.get("importance_score") if isinstance(attribute, dict) else None
        if isinstance(score, bool) or not isinstance(score, int | float):
            return None
        total += float(score)
    return total


def check(payload: dict[str, Any]) -> GateVerdict:
    total = importance_total(payload)
    if total is None:
        return GateVerdict.reject("D2", "importance scores do not sum to 1: a score is not a number")
    if not math.isfinite(total) or abs(total - 1.0) > IMPORTANCE_TOLERANCE:  # NaN compares as False
        shown = round(total, 6) if math.isfinite(total) else str(total)  # JSON columns take no NaN
        return GateVerdict.reject("D2", f"importance scores do not sum to 1: {total:.3f} "
                                  f"(1 ± {IMPORTANCE_TOLERANCE} required)", importance_total=shown)
    for rating in (4, 3, 2, 1):
        entry = payload.get(f"rating_{rating}") or {}
        if not str(entry.get("response", "")).strip():
            return GateVerdict.reject("D2", f"empty response: rating {rating}", rating=rating)
        elements = [e for d in entry.get("attribute_degradations") or []
                    for e in (d.get("degradation_by_elements") or [])]
        if not elements:
            return GateVerdict.reject("D2", f"no degradation recorded: rating {rating}", rating=rating)
        if not any(e.get("modality") == "visual_only" for e in elements):
            return GateVerdict.reject("D2", f"no visual-only degradation: rating {rating}", rating=rating)
    return GateVerdict.ok("D2", "four well-formed answers with visual-only degradations")
