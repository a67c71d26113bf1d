"""The science checks run on every benchmark, real or simulated (issue 9, item 8).

- Accuracy by rating gap (paper Fig. 3, SPEC F2): the difficulty gate's weak judges over every pair of
  the benchmark's sampled questions (before the gate kept the hard ones), and every judge run of the
  benchmark; a larger gap between the two ratings should be an easier pair.
- The shortcut audit (eval/shortcuts.py): judges that look at nothing a real judge should rely on — a
  coin, always Model A, the longer answer, the answer sharing more words with the transcript. A sound
  benchmark keeps each near 50 %; one whose interval excludes 50 % is flagged. Slot A and longer answer
  are properties of the benchmark itself and are computed from it when no run of theirs exists; the
  coin and transcript overlap need a run (`eval judge --judge shortcut/…`).

Both appear in the report and in the exported dataset card (``card_section``), with intervals from
``rates.Bootstrap``. Numbers the sim made are labelled simulated (``rates.is_simulated``).
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.engine import Engine

from playlisteval.analytics import judgment_matrix
from playlisteval.analytics.intervals import Interval
from playlisteval.analytics.multiplicity import adjust_family
from playlisteval.analytics.rates import (
    Bootstrap,
    Row,
    Sums,
    aggregate,
    bench_filter,
    is_simulated,
    main_sql,
    pick,
    shown_name,
)
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.tabular import fmt
from playlisteval.benchmark.names import markdown_text
from playlisteval.config import Settings

CHANCE = 0.5
# (judge spec, what it looks at) in the audit's order
SHORTCUTS = (("shortcut/random", "a seeded coin"), ("shortcut/always-a", "slot A: always Model A"),
             ("shortcut/longer-answer", "the longer answer"),
             ("shortcut/transcript-overlap", "more words shared with the served transcript"))
COMPUTABLE = ("shortcut/always-a", "shortcut/longer-answer")  # from the benchmark alone, without a run
_FAILED = ("error",)  # a weak judge's call that failed is no evidence about the pair: left out


def run_name(r: Row) -> str:
    """A run as a judge and what it was shown: unique among a benchmark's main runs, the same on any store."""
    sides = ", swapped" if r["swapped"] else ""
    sweep = "" if r["main"] else ", sweep"
    return f"{shown_name(r['judge'])} ({r['evidence']}, {r['scope']}{sides}{sweep})"


def judge_gap_curves(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy by gap of every judge run of the benchmark, and over all its gaps (gap None)."""
    m = judgment_matrix.of(an, bench, boot.unit)  # every run with judgments, each summed per gap
    runs: list[Row] = [{"run_id": r.run_id, "judge": r.judge, "evidence": r.evidence, "scope": r.scope,
                        "swapped": r.swapped, "main": r.main} for r in m.runs if r.judged]
    sums = judgment_matrix.single(m, {(r["run_id"],): [r["run_id"]] for r in runs}, "gap")
    gaps_of: dict[Any, list[Any]] = {}
    for run_id, gap in sums:
        gaps_of.setdefault(run_id, []).append(gap)
    out, groups = [], []
    for run in runs:
        head = {**run, "name": run_name(run), "label": f"run {run['run_id']}: {run_name(run)}"}
        gaps = sorted(gaps_of.get(run["run_id"], []))
        for gap in [*gaps, None]:
            group = sums[(run["run_id"], gap)] if gap is not None else pick(sums, (run["run_id"],), "All")
            out.append({**head, "gap": gap, "n": group.n if group else 0})
            groups.append(group)
    for row, ci in zip(out, boot.intervals([(g, 0, None) for g in groups]), strict=True):
        row["accuracy_ci"] = ci
    return out


# The difficulty gate's record (select/difficulty.py): {"a_is_better": …, "<role>": {"model", "verdict",
# "outcome", …}, …}, in the sides the weak judges saw. One row per pair and weak judge, scored as SPEC G4.
# Read from each benchmark's own copy (benchmark_gate, store/benchmark_gate.py), never ``pair.difficulty``:
# another draw's gate rewrites that, also for the pairs this benchmark's gate dropped (issue 41). Over
# every benchmark, a record two benchmarks share counts once (DISTINCT).
WEAK_SQL = """
WITH d AS (
    SELECT DISTINCT g.pair_id, p.item_id, p.gap, CAST(g.difficulty AS JSON) AS j
    FROM benchmark_gate AS g JOIN pair AS p ON p.id = g.pair_id
    WHERE g.difficulty IS NOT NULL AND {where}
),
r AS (SELECT d.*, t.role, '$."' || t.role || '"' AS jpath FROM d, unnest(json_keys(d.j)) AS t(role))
SELECT pair_id, item_id, gap, role,
       json_extract_string(j, jpath || '.model') AS model,
       CASE WHEN json_extract_string(j, jpath || '.verdict') NOT IN ('A', 'B')
                 OR json_extract_string(j, jpath || '.verdict') IS NULL THEN 0.5
            WHEN (json_extract_string(j, jpath || '.verdict') = 'A') = CAST(json_extract(j, '$.a_is_better') AS BOOLEAN)
                 THEN 1.0
            ELSE 0.0 END AS score
FROM r
WHERE json_type(j, jpath) = 'OBJECT' AND json_extract_string(j, jpath || '.model') IS NOT NULL
  AND json_type(j, '$.a_is_better') = 'BOOLEAN'
  AND coalesce(json_extract_string(j, jpath || '.outcome'), '') NOT IN ({failed})
"""


def weak_gap_curves(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy by gap of the difficulty gate's weak judges over every pair of the benchmark's sampled
    questions (a failed call is no evidence about the pair: left out)."""
    where, params = ("g.benchmark_id = ?", [bench["id"]]) if bench else ("true", [])
    sql = WEAK_SQL.format(where=where, failed=", ".join(f"'{f}'" for f in _FAILED))
    sums = aggregate(an, sql, params, ("role", "model", "gap"), boot)
    out, groups = [], []
    for role, model in sorted({(r, m) for r, m, _ in sums}):
        label = f"{role}: {shown_name(model)}"
        gaps = sorted(g for r, m, g in sums if (r, m) == (role, model))
        for gap in [*gaps, None]:
            group = sums[(role, model, gap)] if gap is not None else pick(sums, (role, model), "All")
            out.append({"label": label, "role": role, "model": model, "gap": gap, "n": group.n if group else 0})
            groups.append(group)
    for row, ci in zip(out, boot.intervals([(g, 0, None) for g in groups]), strict=True):
        row["accuracy_ci"] = ci
    return out


def _computed(an: Analytics, bench: dict[str, Any], boot: Bootstrap, spec: str) -> Sums | None:
    """What a forward run of an always-A or longer-answer judge would score, from the benchmark itself
    (ties in length count ½, the coin's expectation)."""
    score = ("CASE WHEN bp.a_is_better THEN 1.0 ELSE 0.0 END" if spec == "shortcut/always-a" else
             "CASE WHEN coalesce(f.better_words, 0) > coalesce(f.worse_words, 0) THEN 1.0 "
             "WHEN coalesce(f.better_words, 0) < coalesce(f.worse_words, 0) THEN 0.0 ELSE 0.5 END")
    sums = aggregate(an, f"SELECT f.item_id, 'all' AS everything, {score} AS score FROM benchmark_pair AS bp "
                         "JOIN pair_facts AS f ON f.pair_id = bp.pair_id WHERE bp.benchmark_id = ?",
                     [bench["id"]], ("everything",), boot)
    return sums.get(("all",))


def shortcut_audit(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """One row per shortcut (per main forward run of it, or computed, or "not run"): accuracy with its
    interval and its p against 50 % (the interval's own score test); ``flagged`` when the interval excludes 50 %."""
    if bench is None:
        return []
    base, params = main_sql(bench, "f.judge LIKE 'shortcut/%'")
    runs = aggregate(an, base, params, ("judge", "run_id", "evidence", "scope"), boot)
    out = []
    for spec, looks_at in SHORTCUTS:
        sources = [(f"main run ({evidence}, {scope})", sums)  # no store id: the card is the same from any store
                   for (judge, run_id, evidence, scope), sums in sorted(runs.items()) if judge == spec]
        if not sources and spec in COMPUTABLE:
            computed = _computed(an, bench, boot, spec)
            sources = [("computed from the benchmark", computed)] if computed else []
        if not sources:
            out.append({"shortcut": spec, "looks_at": looks_at, "n": 0, "accuracy_ci": None, "flagged": None,
                        "source": f"not run: playlisteval eval judge --judge {spec}"})
        for source, sums in sources:
            ci = boot.interval(sums, null=CHANCE)
            out.append({"shortcut": spec, "looks_at": looks_at, "source": source, "n": sums.n, "accuracy_ci": ci,
                        "flagged": ci is not None and ci.excludes(CHANCE)})
    rows = out + blind_audit(an, bench, boot)
    # one family: every shortcut and blind run tested against 50 % on this page (flags stay the intervals')
    tested = [cast(Interval | None, r["accuracy_ci"]) for r in rows]
    for r, iv in zip(rows, adjust_family(tested, "shortcuts and blind runs against 50 %"), strict=True):
        r["accuracy_ci"] = iv
    return rows


#: a judge's first forward `--modality none` run per evidence and scope (issue 21): the same model with the
#: question and answers only, so the video cannot be what it scores on
BLIND_RUNS = ("SELECT min(id) FROM judge_run WHERE modality = 'none' AND NOT swapped "
              "GROUP BY benchmark_id, judge, evidence, scope")


def blind_audit(an: Analytics, bench: dict[str, Any], boot: Bootstrap) -> list[Row]:
    """The shortcut audit's rows for each judge's blind run (``--modality none``): a benchmark a model
    answers well from the question and answers alone does not need its videos; flagged as the shortcuts
    are, when the interval excludes 50 %."""
    b, params = bench_filter(bench)
    runs = aggregate(an, f"SELECT f.* FROM judgment_facts AS f WHERE f.run_id IN ({BLIND_RUNS}) AND {b}", params,
                     ("judge", "evidence", "scope"), boot)
    out = []
    for (judge, evidence, scope), sums in sorted(runs.items()):
        ci = boot.interval(sums, null=CHANCE)
        out.append({"shortcut": f"{shown_name(judge)}, blind", "judge": judge, "blind": True,
                    "looks_at": "the question and answers only (no video)",
                    "source": f"--modality none run ({evidence}, {scope})", "n": sums.n, "accuracy_ci": ci,
                    "flagged": ci is not None and ci.excludes(CHANCE)})
    return out


def _gap_table(rows: list[Row], head: str) -> list[str]:
    gaps = sorted({r["gap"] for r in rows if r["gap"] is not None})
    lines = [f"| {head} | " + " | ".join(f"gap {g}" for g in gaps) + " | all gaps |",
             "|---|" + "---|" * (len(gaps) + 1)]
    cells: dict[str, dict[int | None, str]] = {}
    for r in rows:
        cells.setdefault(r["label"], {})[r["gap"]] = fmt(r["accuracy_ci"], "ci") + f" (n={r['n']})"
    for label, cell in cells.items():  # a judge's name as given (issue 44): one line, its markup shown literally
        lines.append(f"| {markdown_text(label)} | " + " | ".join(cell.get(g, "—") for g in [*gaps, None]) + " |")
    return lines


def card_section(settings: Settings, engine: Engine, benchmark_id: int) -> str:
    """The science checks as Markdown for the dataset card of benchmark ``benchmark_id``."""
    boot = Bootstrap.of(settings)
    with Analytics(engine, settings) as an:
        rows = an.rows("SELECT id, name FROM benchmark WHERE id = ?", [benchmark_id])
        bench = rows[0] if rows else {"id": benchmark_id, "name": ""}
        audit = shortcut_audit(an, bench, boot)
        weak = weak_gap_curves(an, bench, boot)
        judged = judge_gap_curves(an, bench, boot)
    simulated = " (simulated)" if is_simulated(engine) else ""
    lines = [f"## Science checks{simulated}", "",
             f"Accuracy in %, with {boot.label}. Computed by playlisteval when the dataset was exported.", "",
             "### Shortcut audit", "",
             "Judges that look at nothing a real judge should rely on. A sound benchmark keeps each near 50 %; "
             "**flagged** when the interval excludes 50 % (p: against 50 %).", "",
             "| Shortcut | Looks at | Source | Pairs | Accuracy % [CI] | p | Flag |", "|---|---|---|---|---|---|---|"]
    for r in audit:
        flag = "—" if r["flagged"] is None else "**flagged**" if r["flagged"] else "ok"
        lines.append(f"| `{r['shortcut']}` | {r['looks_at']} | {r['source']} | {r['n']} | "
                     f"{fmt(r['accuracy_ci'], 'ci')} | {fmt(r['accuracy_ci'], 'p')} | {flag} |")
    lines += ["", "### Accuracy by rating gap: the difficulty gate's weak judges", "",
              "Over every pair of the sampled questions, before the gate kept those a weak judge got wrong "
              "(SPEC F2: accuracy should rise with the gap)."]
    lines += ["", *_gap_table(weak, "Weak judge")] if weak else ["", "No difficulty-gate verdicts recorded."]
    lines += ["", "### Accuracy by rating gap: judge runs on this benchmark", "",
              "The main run of each judge, evidence, scope and side order (sweeps are in the report)."]
    main = [{**r, "label": r["name"]} for r in judged if r["main"]]
    lines += ["", *_gap_table(main, "Run")] if main else ["", "No judge has run on this benchmark yet."]
    return "\n".join(lines) + "\n"
