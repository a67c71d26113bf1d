"""SPEC D2: each wrong answer has a non-empty response and ≥ 1 degradation entry, at least one of them
``visual_only``. No model; reasons start with a stable kind for the funnel."""

from __future__ import annotations

from typing import Any

from playlisteval.gates import GateVerdict


def check(payload: dict[str, Any]) -> GateVerdict:
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
