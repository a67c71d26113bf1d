"""The leaderboard as one JSON document (`leaderboard --json`), with its provenance (issue 22).

Made here, once, so that `leaderboard --json` and the copy a benchmark version freezes when it is
superseded (select/versions.py) are the same document: `leaderboard --version N --json` of an older
version prints exactly what `leaderboard --json` printed while it was live.
"""

from __future__ import annotations

from typing import Any

from playlisteval.analytics.provenance import provenance
from playlisteval.analytics.rates import Bootstrap, is_simulated, json_ready, leaderboard
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.small_sample import DIFFERENCE_METHOD, RATE_METHOD
from playlisteval.config import Settings
from playlisteval.store import protocol


def leaderboard_document(an: Analytics, settings: Settings, bench: dict[str, Any] | None, *,
                         version: int | None = None) -> dict[str, Any]:
    """Every rate of the leaderboard with its interval, the bootstrap that made them, and provenance."""
    from playlisteval.analytics.trust_sections import leaderboard_keys  # issue 21: judge − judge, power
    from playlisteval.eval.imported import label_board

    boot = Bootstrap.of(settings)
    rows = leaderboard(an, bench, boot)
    # issue 40: rows whose run was imported (`eval import`) say so; a frozen version keeps the label
    imported = label_board(an.engine, int(bench["id"]) if bench else None, rows)
    # the main evidence of the benchmark's stored protocol, not this shell's [eval] (issue 22)
    proto = protocol.stored(an.engine, int(bench["id"])) if bench else None
    evidence = str((proto or {}).get("evidence") or settings.eval.evidence)
    return {"benchmark": bench["name"] if bench else None, "simulated": is_simulated(an.engine),
            "intervals": {"level": boot.level, "unit": boot.unit, "resamples": boot.resamples,
                          "seed": boot.seed, "rate": RATE_METHOD, "difference": DIFFERENCE_METHOD,
                          "p_value": f"each interval's own test over {boot.unit}s (paired differences also "
                                     f"p_sign_flip: exact sign flips of the {boot.unit}s' totals)"},
            "rows": [json_ready(r) for r in rows], "imported": imported,
            "provenance": provenance(an.engine, settings, bench["id"] if bench else None, version=version),
            **leaderboard_keys(an, bench, boot, evidence)}
