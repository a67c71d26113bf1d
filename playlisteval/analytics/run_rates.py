"""Rates that set one judge run against another, with intervals (issue 9): position bias (a main forward
run against its swapped twin) and sweeps (a run with other options against the judge's main run). Both
compare the same pairs judged twice, so their differences are paired, with a sign-flip p-value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from playlisteval.analytics import judgment_matrix
from playlisteval.analytics.multiplicity import adjust_family
from playlisteval.analytics.rates import Bootstrap, Row, aggregate, bench_filter
from playlisteval.analytics.runner import Analytics

BIAS_RATES = ("accuracy_forward", "accuracy_reversed", "picked_a_forward", "picked_a_reversed", "letter_agreement",
              "solved_both", "wrong_both", "forward_minus_reversed")


def _bias_values(fwd: np.ndarray, rev: np.ndarray, fwd_verdict: np.ndarray, rev_verdict: np.ndarray
                 ) -> list[np.ndarray]:
    """Per pair judged both ways, BIAS_RATES' values (the shares 14_position_bias.sql averages)."""
    a = judgment_matrix.VERDICT_A
    return [fwd, rev, (fwd_verdict == a).astype(np.float64), (rev_verdict == a).astype(np.float64),
            ((fwd_verdict != 0) & (fwd_verdict == rev_verdict)).astype(np.float64),
            ((fwd == 1) & (rev == 1)).astype(np.float64), ((fwd == 0) & (rev == 0)).astype(np.float64), fwd - rev]


def position_bias(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """The position_bias view's rows with an interval per share (``<share>_ci``) and the paired
    ``forward_minus_reversed_ci`` (accuracy forward − reversed over the same pairs, with its p-value)."""
    where, params = bench_filter(bench, "")
    rows = an.rows(f"SELECT * FROM position_bias WHERE {where} ORDER BY letter_agreement, judge", params)
    if not rows or "forward_run" not in rows[0]:
        return rows
    # per pair, the same shares the view averages (see 14_position_bias.sql)
    # the forward rows joined to their couple first, then the reversed ones by run and pair (rates.JOINS);
    # the couples are the rows' own (not the view computed again)
    couples = sorted({(int(r["forward_run"]), int(r["reversed_run"])) for r in rows})
    m = judgment_matrix.of(an, bench, boot.unit)
    sums = judgment_matrix.paired(m, {couple: [couple] for couple in couples}, _bias_values)
    cis = iter(boot.intervals([(sums.get((r["forward_run"], r["reversed_run"])), i,
                                0.0 if rate == "forward_minus_reversed" else None)
                               for r in rows for i, rate in enumerate(BIAS_RATES)]))
    for r in rows:
        for rate in BIAS_RATES:
            r[f"{rate}_ci"] = next(cis)
    tested = adjust_family([r["forward_minus_reversed_ci"] for r in rows], "forward − swapped")
    for r, iv in zip(rows, tested, strict=True):
        r["forward_minus_reversed_ci"] = iv
    return rows


def sweeps(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """The judge_sweeps view's rows with ``accuracy_ci``, ``main_accuracy_ci`` and the paired
    ``difference_ci`` (sweep − main run over the pairs both judged, with its p-value)."""
    where, params = bench_filter(bench, "")
    # a sweep is a run that is not a main one (judge_sweeps reads run_status): none, no need to aggregate
    # every judgment per run and domain to find out
    if not an.rows(f"SELECT run_id FROM run_status WHERE NOT main AND {where} LIMIT 1", params):
        return []
    rows = an.rows(f"SELECT *, CASE WHEN swapped THEN 'swapped' ELSE 'forward' END AS sides FROM judge_sweeps "
                   f"WHERE {where} ORDER BY judge, evidence, scope, swapped, varies, run_id", params)
    if not rows:
        return rows
    runs = {r["run_id"] for r in rows} | {r["main_run_id"] for r in rows if r.get("main_run_id") is not None}
    marks = ", ".join("?" for _ in runs)
    single = aggregate(an, f"SELECT * FROM judgment_facts WHERE run_id IN ({marks})", sorted(runs), ("run_id",),
                       boot)
    paired = aggregate(an, f"""
        WITH c AS MATERIALIZED (
            SELECT c.run_id, c.main_run_id, s.pair_id, s.item_id, s.score
            FROM (SELECT DISTINCT run_id, main_run_id FROM judge_sweeps WHERE {where}) AS c
            JOIN judgment_facts AS s ON s.run_id = c.run_id)
        SELECT c.run_id AS sweep, c.item_id, c.score - m.score AS d
        FROM c
        JOIN judgment_core AS m ON m.run_id = c.main_run_id AND m.pair_id = c.pair_id""",
                       params, ("sweep",), boot, ("d",))
    cis = boot.intervals([want for r in rows for want in (
        (single.get((r["run_id"],)), 0, None), (single.get((r.get("main_run_id"),)), 0, None),
        (paired.get((r["run_id"],)), 0, 0.0))])
    differences = adjust_family(cis[2::3], "sweep − main run")
    for i, r in enumerate(rows):
        r["accuracy_ci"], r["main_accuracy_ci"], r["difference_ci"] = cis[3 * i], cis[3 * i + 1], differences[i]
    return rows
