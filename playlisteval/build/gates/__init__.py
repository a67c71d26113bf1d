"""Gates decide; they do not raise for a bad candidate (DESIGN 5). Each returns a GateVerdict with its
reason. A gate whose own model gave no usable reply raises CheckerFault (``unusable``): no verdict at all,
since an unreadable check is evidence neither for nor against the candidate (issue 9, fail closed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from playlisteval.errors import CheckerFault
from playlisteval.models.request import ModelResponse


@dataclass
class GateVerdict:
    gate: str  # SPEC id: C1, C2.1, C2.2, C3, D2, D3, D4
    passed: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    call_ids: list[int] = field(default_factory=list)

    @classmethod
    def ok(cls, gate: str, reason: str = "", **details: Any) -> GateVerdict:
        return cls(gate, True, reason, details)

    @classmethod
    def reject(cls, gate: str, reason: str, **details: Any) -> GateVerdict:
        return cls(gate, False, reason, details)


def first_rejection(checks: Iterable[Callable[[], GateVerdict]]) -> list[GateVerdict]:
    """Run gates in order (cheapest first) and stop at the first rejection; return the verdicts run."""
    verdicts: list[GateVerdict] = []
    for gate in checks:
        verdicts.append(gate())
        if not verdicts[-1].passed:
            break
    return verdicts


def unusable(gate: str, role: str, response: ModelResponse, call_ids: list[int] | None = None) -> CheckerFault:
    """The fault to raise when ``role``'s reply stayed unusable after the runner's repairs."""
    unusable_ids = [response.call_id] if response.call_id else []
    return CheckerFault(gate, role, response.malformed_reason or "no parsed reply",
                        call_ids=list(call_ids or unusable_ids), unusable_call_ids=unusable_ids,
                        reply=response.text[:2000])
