"""What a judge run cost, from the ledger (SPEC K1, K4; paper Tables 3, 16, 17: prompt and output tokens
and dollars per setting beside its accuracy).

Every model call of an evaluation pass carries its run's id (``model_call.run_id``, purpose ``eval``), so a
run's cost is the sum over its calls: prompt tokens (input) and output tokens (output + thinking, as the
providers bill them) per judged pair — the paper's "84k / 1,447" — and the dollars the ledger charged. A
reward model pays two calls per pair; a cache hit is counted with the tokens it replays but costs nothing;
a run whose calls were all sim calls says so (``simulated``): its dollars are the price table applied to
the sim's token counts, never a provider's bill.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from playlisteval.analytics.rates import Row
from playlisteval.analytics.runner import Analytics

COST_KEYS = ("prompt_tokens", "output_tokens", "usd", "calls", "simulated")


def run_costs(an: Analytics, run_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """run id → prompt and output tokens per judged pair, dollars, calls and whether every call was simulated."""
    runs = sorted({int(r) for r in run_ids})
    if not runs:
        return {}
    marks = ", ".join("?" for _ in runs)
    rows = an.rows(f"""
        WITH c AS (
            SELECT run_id, CAST(sum(calls) AS BIGINT) AS calls, sum(input_tokens) AS prompt,
                sum(output_tokens + thinking_tokens) AS output, sum(usd) AS usd, bool_and(provider = 'sim') AS simulated
            FROM call_groups WHERE purpose = 'eval' AND status <> 'in_flight' AND run_id IN ({marks}) GROUP BY run_id),
        j AS (SELECT run_id, count(*) AS pairs FROM judgment WHERE run_id IN ({marks}) GROUP BY run_id)
        SELECT c.*, coalesce(j.pairs, 0) AS pairs FROM c LEFT JOIN j USING (run_id)""", [*runs, *runs])
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        pairs = int(r["pairs"]) or None
        out[int(r["run_id"])] = {
            "prompt_tokens": None if pairs is None else float(r["prompt"] or 0) / pairs,
            "output_tokens": None if pairs is None else float(r["output"] or 0) / pairs,
            "usd": float(r["usd"] or 0.0), "calls": int(r["calls"]), "simulated": bool(r["simulated"])}
    return out


def with_costs(an: Analytics, rows: list[Row]) -> list[Row]:
    """The sweeps' rows with each run's cost and its main run's (``main_<key>``); a run without a model call
    (a shortcut judge) has none (None, shown "—"), never a made-up 0."""
    costs = run_costs(an, [r["run_id"] for r in rows] + [r["main_run_id"] for r in rows if r.get("main_run_id")])
    for r in rows:
        mine, main = costs.get(int(r["run_id"]), {}), costs.get(int(r.get("main_run_id") or 0), {})
        for key in COST_KEYS:
            r[key], r[f"main_{key}"] = mine.get(key), main.get(key)
    return rows
