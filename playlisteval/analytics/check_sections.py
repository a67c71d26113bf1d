"""The report's failure attribution (paper Figs 9–12 analogue) and external validity (paper Fig. 7)
sections (issue 20 deliverables 4, 5): both made from what `eval attribute` and `eval correlate` compute.

Attribution reads the losses from the analytics file's judgments and, for the few that need one (a wrong
verdict, an example), their evidence records from the store (the analytics copy leaves those bulky columns
out: attribution_losses.py); its inputs are the judgment rows, so an unchanged store gives the same section. The
correlation reads the last `eval correlate` input (``external_score``, copied beside the other tables) and
each judge's main-run accuracy; with no input given it says how to give one.
"""

from __future__ import annotations

from typing import Any

from playlisteval.analytics import plots
from playlisteval.analytics.attribution import CATEGORIES, LABELS, HopSource, attribute_runs
from playlisteval.analytics.correlation import summary
from playlisteval.analytics.external import correlation, main_accuracy
from playlisteval.analytics.rates import Bootstrap, bench_filter, shown_name
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.scatter import scatter
from playlisteval.analytics.tabular import DisplayTable, Section, fmt
from playlisteval.store.engine import read_core


def attribution(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    where, params = bench_filter(bench, "")
    # shortcut judges are shown nothing (or a transcript only): "not retrieved" would say nothing about them
    runs = an.rows(f"SELECT run_id, judge, evidence, scope FROM main_run WHERE NOT swapped AND {where} "
                   "AND judge NOT LIKE 'shortcut/%' ORDER BY judge, evidence, scope", params)
    section = Section("attribution", "Failure attribution (paper Sec. 4.5, Figs 9–12)",
                      "Each main run's wrong and no-verdict judgments by cause, from the gold answer's cited ranges "
                      "and what the judgment was served: cited evidence not retrieved (a hop's cited chunks were not "
                      "served), retrieved but not sampled (the chunks were, no frame of the cited moment was), "
                      "served but still wrong, no verdict. Shares of the run's failures; "
                      f"{boot.label}. Shortcut judges are left out (they are shown no frames). "
                      "`playlisteval eval attribute RUN` lists examples by pair.")
    if not runs:
        return section
    table = DisplayTable(headers=["Run", "Judge", "Evidence", "Scope", "Judged", "Failed",
                                  *(f"{LABELS[c]} % [CI]" for c in CATEGORIES), "Examples (pair)"],
                         numeric=[True, False, False, False, True, True, *([True] * len(CATEGORIES)), False])
    labels: list[str] = []
    series: dict[str, list[plots.Value]] = {LABELS[c]: [] for c in CATEGORIES}
    with read_core(an.engine) as s:  # every run's losses look up the same questions' hops: read once (no write lock)
        source = HopSource.for_every_pair(s)
    # every run's losses in one query of the analytics file's judgments (per run, 75 queries of the store were
    # most of the section; one query of the store, 300k rows as tuples, ~0.6 CPU-s at 1M judgments)
    results = attribute_runs(an.engine, [int(r["run_id"]) for r in runs], seed=boot.seed, source=source, an=an)
    for r, result in zip(runs, results, strict=True):
        examples = [f"{e['pair_id']} ({c.replace('_', ' ')})" for c in CATEGORIES for e in result.examples[c][:1]]
        table.rows.append([str(r["run_id"]), shown_name(str(r["judge"])), str(r["evidence"]), str(r["scope"]),
                           str(result.judged), str(result.failed),
                           *(f"{result.counts[c]}: {fmt(result.shares[c], 'ci')}" for c in CATEGORIES),
                           ", ".join(examples)])
        labels.append(f"{shown_name(str(r['judge']))} ({r['evidence']}, {r['scope']})")
        for c in CATEGORIES:
            series[LABELS[c]].append(result.shares[c])
    section.tables.append(("", table))
    section.figures.append(("Failure attribution with 95 % intervals", plots.grouped_bars(
        labels, series, ylabel="% of failed judgments", title="Why judgments failed")))
    return section


def external(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    published = {str(r["judge"]): float(r["score"]) for r in an.rows("SELECT judge, score FROM external_score")}
    source = next(iter(an.rows("SELECT source FROM external_score LIMIT 1")), {}).get("source", "")
    section = Section("external", "External validity (paper Fig. 7)",
                      "Each judge's main-run accuracy (retrieved evidence, full domain, forward) against a published "
                      "score of the same judge: Pearson and Spearman, each with its Fisher-z interval and a "
                      "permutation p-value (exact over all orderings of the judges up to 9). "
                      + (f"Published scores from {source}." if published else
                         "No published scores given yet: run `playlisteval eval correlate FILE` "
                         "(a CSV of judge, score)."))
    if not published:
        return section
    bid = bench.get("id") if bench else None
    out = correlation(main_accuracy(an, int(bid) if bid is not None else None), published, seed=boot.seed)
    table = DisplayTable(headers=["Judge", "Accuracy %", "Pairs", "Published"], numeric=[False, True, True, True])
    for j in out["judges"]:
        table.rows.append([shown_name(j["judge"]), fmt(j["accuracy"], "pct"), str(j["pairs"]), f"{j['published']:g}"])
    section.tables.append(("", table))
    c = out["correlation"]
    if c is None:
        section.note += f" No correlation: {out['why_none']}."
    else:
        stats = [summary(c, name, digits=2) for name in ("pearson", "spearman")]
        section.note += f" n = {c['n']} judges: " + "; ".join(stats) + "."
        title = f"Pearson r = {c['pearson']['estimate']:.2f}, Spearman ρ = {c['spearman']['estimate']:.2f}"
        section.figures.append(("Accuracy here against the published score", scatter(
            [(shown_name(j["judge"]), 100 * j["accuracy"], j["published"]) for j in out["judges"]],
            xlabel="accuracy here (%)", ylabel="published score", title=title)))
    for key, said in (("missing_here", "in the file without a main run here"),
                      ("missing_in_file", "with a main run here, not in the file")):
        if out[key]:
            section.note += f" Judges {said}: {', '.join(out[key])}."
    return section
