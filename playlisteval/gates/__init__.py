"""Gates decide; they do not raise (DESIGN 5). Each returns a GateVerdict with its reason."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


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
