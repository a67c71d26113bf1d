"""SPEC D2: each wrong answer has a response and ≥ 1 degradation entry, at least one visual_only."""

from __future__ import annotations

from typing import Any

from playlisteval.gates import GateVerdict


def check(payload: dict[str, Any]) -> GateVerdict:
    for rating in (4, 3, 2, 1):
        entry = payload.get(f"rating_{rating}") or {}
        if not str(entry.get("response", "")).strip():
            return GateVerdict.reject("D2", f"rating {rating} has an empty response")
        elements = [e for d in entry.get("attribute_degradations", []) for e in d.get("degradation_by_elements", [])]
        if not elements:
            return GateVerdict.reject("D2", f"rating {rating} records no degradation")
        if not any(e.get("modality") == "visual_only" for e in elements):
            return GateVerdict.reject("D2", f"rating {rating} has no visual_only degradation")
    return GateVerdict.ok("D2", "four well-formed answers with visual-only degradations")
