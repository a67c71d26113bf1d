"""The report's sections that show rates, each with its interval (issue 9): the leaderboard and judge
differences, accuracy by rating gap (weak judges and every judge run), by corpus scope, position bias,
the shortcut audit and the retrievers. Intervals are drawn as error bars in the figures.
"""

from __future__ import annotations

from typing import Any

from playlisteval.analytics import plots, rates, run_cost, run_rates, science, scope_figure, verdict_health
from playlisteval.analytics.rates import Bootstrap, Row, shown_name
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.tabular import LEADERBOARD_COLS, Col, DisplayTable, Section, display, fmt

DIFF_COLS = [Col("judge_a_shown", "Judge A"), Col("judge_b_shown", "Judge B"), Col("n", "Pairs in both", "int"),
             Col("difference_ci", "A − B pts [CI]", "cipts"), Col("difference_ci", "p", "p")]


def ci_pivot(rows: list[Row], row_key: str, col_key: str, value_key: str, cols: list[Any], row_header: str,
             col_name: Any = str) -> DisplayTable:
    """A row_key × col_key table of intervals (cells "62.5 [51.0, 73.2]")."""
    seen: dict[str, dict[Any, Any]] = {}
    for r in rows:
        seen.setdefault(str(r[row_key]), {})[r[col_key]] = r[value_key]
    table = DisplayTable(headers=[row_header, *(col_name(c) for c in cols)], numeric=[False] + [True] * len(cols))
    for name, values in seen.items():
        table.rows.append([name, *(fmt(values.get(c), "ci") for c in cols)])
    return table


def shown(rows: list[Row], key: str = "judge") -> list[Row]:
    for r in rows:
        r[f"{key}_shown"] = shown_name(str(r[key]))
    return rows


def leaderboard(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    rows = shown(rates.leaderboard(an, bench, boot, domains=True))
    overall = [r for r in rows if r["domain"] == "All"]
    rank = {r["judge"]: i for i, r in enumerate(overall)}
    by_domain = sorted((r for r in rows if r["domain"] != "All"), key=lambda r: (rank.get(r["judge"], 0), r["domain"]))
    section = Section("leaderboard", "Judge leaderboard (paper Table 1)",
                      "Pairwise accuracy on the full-domain scope, main forward pass, with retrieved and with "
                      "uniform evidence; no verdict counts 0.5. Δ = retrieved − uniform over the pairs judged both "
                      f"ways, p from a paired test. {boot.label}. {verdict_health.rule(an.settings)}.")
    section.tables.append(("Overall", display(overall, LEADERBOARD_COLS)))
    domains = sorted({r["domain"] for r in by_domain})
    for evidence in ("retrieved", "uniform"):
        if any(r[f"{evidence}_ci"] is not None for r in by_domain):
            section.tables.append((f"By domain, {evidence} evidence (% [CI])",
                                   ci_pivot(by_domain, "judge_shown", "domain", f"{evidence}_ci", domains, "Judge")))
    diffs = shown(shown(rates.judge_differences(an, bench, boot, [r["judge"] for r in overall]), "judge_a"), "judge_b")
    if diffs:
        # the method on the page (issue 40: MOVER for 0/1 verdicts, the CR2 t where a no-verdict scores 0.5)
        methods = "; ".join(sorted({r["difference_ci"].method for r in diffs}))
        section.tables.append((f"Judge A − judge B (retrieved evidence, pairs judged by both; {methods})",
                               display(diffs, DIFF_COLS)))
    if overall:
        section.figures.append(("Accuracy per judge with 95 % intervals", plots.grouped_bars(
            [r["judge_shown"] for r in overall], {"retrieved": [r["retrieved_ci"] for r in overall],
                                                  "uniform": [r["uniform_ci"] for r in overall]},
            ylabel="accuracy (%)", title="Pairwise accuracy")))
    return section


def gap(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    weak = science.weak_gap_curves(an, bench, boot)
    runs = science.judge_gap_curves(an, bench, boot)
    section = Section("gap", "Accuracy by rating gap (paper Fig. 3)",
                      "A larger gap between the two ratings should be an easier pair (SPEC F2). Weak judges: the "
                      "difficulty gate over every pair of the sampled questions, before it kept the hard ones. "
                      f"Judge runs: every run on this benchmark. {boot.label}.")
    gaps = sorted({r["gap"] for r in weak + runs if r["gap"] is not None})

    def header(g: Any) -> str:
        return "all gaps" if g is None else f"gap {g}"

    if weak:
        section.tables.append(("Weak judges of the difficulty gate (% [CI])",
                               ci_pivot(weak, "label", "gap", "accuracy_ci", [*gaps, None], "Weak judge", header)))
    if runs:
        section.tables.append(("Every judge run (% [CI])",
                               ci_pivot(runs, "label", "gap", "accuracy_ci", [*gaps, None], "Run", header)))
    # the figure: weak judges and each judge's main forward, full-domain, retrieved pass (shortcuts aside)
    drawn = weak + [r for r in runs if r["main"] and not r["swapped"] and r["scope"] == "domain"
                    and r["evidence"] == "retrieved" and not r["judge"].startswith("shortcut/")]
    if drawn and gaps:
        series: dict[str, list[Any]] = {}
        for r in drawn:
            if r["gap"] is not None:
                name = r["label"] if "role" in r else shown_name(r["judge"])
                series.setdefault(name, [None] * len(gaps))[gaps.index(r["gap"])] = r["accuracy_ci"]
        section.figures.append(("Accuracy by rating gap with 95 % intervals", plots.lines(
            [str(g) for g in gaps], series, xlabel="rating gap", ylabel="accuracy (%)",
            title="Accuracy by rating gap")))
    return section


STEP_COLS = [Col("judge_shown", "Judge"), Col("from", "From"), Col("to", "To"), Col("n", "Pairs in both", "int"),
             Col("difference_ci", "Δ pts [CI]", "cipts"), Col("difference_ci", "p", "p")]


SCOPE_STEP_COLS = [Col("judge_shown", "Judge"), Col("line", "Evidence"), Col("from", "From"), Col("to", "To"),
                   Col("n", "Pairs in both", "int"), Col("difference_ci", "Δ pts [CI]", "cipts"),
                   Col("difference_ci", "p", "p")]


def scope(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, order: list[str]) -> Section:
    """Paper Fig. 4, one line per evidence protocol (analytics/scope_figure.py, issue 20)."""
    points = shown(scope_figure.protocol_accuracy(an, bench, boot))
    section = Section("scope", "Accuracy by corpus scope (paper Fig. 4)",
                      "Each (evidence, scope) protocol its own point: retrieved evidence (solid) and uniform evidence "
                      "(dashed) over corpora of growing size; oracle evidence (the two gold segments handed over) and "
                      "an agentic run (the judge searches itself), when present, apart. Steps: the change from one "
                      "scope to the next larger one on the same line, paired over the pairs judged in both runs "
                      f"(each pair once). {boot.label}.")
    if points:
        scopes = {str(r["scope"]) for r in points if r["line"] != scope_figure.ORACLE_EVIDENCE}
        xs = ([scope_figure.ORACLE_EVIDENCE] if any(r["line"] == scope_figure.ORACLE_EVIDENCE for r in points)
              else []) + scope_figure.ordered(scopes, order)
        for r in points:
            r["x"] = scope_figure.ORACLE_EVIDENCE if r["line"] == scope_figure.ORACLE_EVIDENCE else str(r["scope"])
            r["series"] = f"{r['judge_shown']} · {r['line']}"
        section.tables.append(("Accuracy (%) by evidence and scope", ci_pivot(points, "series", "x", "accuracy_ci",
                                                                               xs, "Judge · evidence")))
        steps = shown(scope_figure.protocol_steps(an, bench, boot, points, order))
        if steps:
            section.tables.append(("Scope steps", display(steps, SCOPE_STEP_COLS)))
        series: dict[str, list[Any]] = {}
        for r in sorted(points, key=lambda r: (r["judge_shown"], scope_figure.LINES.index(r["line"]))):
            series.setdefault(r["series"], [None] * len(xs))[xs.index(r["x"])] = r["accuracy_ci"]
        dashed = [name for name in series if name.endswith(" · uniform")]
        section.figures.append(("Accuracy by scope with 95 % intervals", plots.lines(
            xs, series, xlabel="scope", ylabel="accuracy (%)", title="Accuracy by corpus scope", dashed=dashed)))
    return section


BIAS_COLS = [Col("judge_shown", "Judge"), Col("evidence", "Evidence"), Col("scope", "Scope"), Col("n", "Pairs", "int"),
             Col("accuracy_forward_ci", "Acc. fwd % [CI]", "ci"), Col("accuracy_reversed_ci", "Acc. rev % [CI]", "ci"),
             Col("forward_minus_reversed_ci", "Fwd − rev pts [CI]", "cipts"),
             Col("forward_minus_reversed_ci", "p", "p"),
             Col("picked_a_forward_ci", "Picked A fwd % [CI]", "ci"),
             Col("picked_a_reversed_ci", "Picked A rev % [CI]", "ci"),
             Col("letter_agreement_ci", "Letter agreement % [CI]", "ci"),
             Col("solved_both_ci", "Solved both % [CI]", "ci"), Col("wrong_both_ci", "Wrong both % [CI]", "ci"),
             Col("consistent", "Consistent", "bool"), Col("status", "Status")]


def bias(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    rows = shown(run_rates.position_bias(an, bench, boot))
    section = Section("bias", "Position bias (paper Table 14)",
                      "Each judge's forward pass against the pass with the answers' sides swapped (same options), "
                      "over the pairs judged in both. Letter agreement: the same letter both times, i.e. the slot, "
                      f"not the answer. Fwd − rev: paired over those pairs. {boot.label}.")
    section.tables.append(("", display(rows, BIAS_COLS)))
    if rows:
        labels = [f"{r['judge_shown']} ({r['evidence']}, {r['scope']})" for r in rows]
        section.figures.append(("Position bias with 95 % intervals", plots.grouped_bars(labels, {
            "letter agreement": [r.get("letter_agreement_ci", r["letter_agreement"]) for r in rows],
            "picked A, forward": [r.get("picked_a_forward_ci", r["picked_a_forward"]) for r in rows],
            "picked A, reversed": [r.get("picked_a_reversed_ci", r["picked_a_reversed"]) for r in rows]},
            ylabel="% of pairs", title="Position bias")))
    return section


AUDIT_COLS = [Col("shortcut", "Shortcut"), Col("looks_at", "Looks at"), Col("source", "Source"),
              Col("n", "Pairs", "int"), Col("accuracy_ci", "Accuracy % [CI]", "ci"),
              Col("accuracy_ci", "p (vs 50 %)", "p"), Col("flag", "Flag")]


def shortcuts(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    rows = science.shortcut_audit(an, bench, boot)
    for r in rows:
        r["flag"] = "—" if r["flagged"] is None else "FLAGGED" if r["flagged"] else "ok"
    section = Section("shortcuts", "Shortcut audit",
                      "Judges that look at nothing a real judge should rely on. A sound benchmark keeps each near "
                      "50 %; FLAGGED when the interval excludes 50 %. Slot A and longer answer are computed from "
                      "the benchmark when no run of theirs exists. A judge's blind run (`--modality none`: the "
                      f"question and answers only) is audited the same way. {boot.label}.")
    section.tables.append(("", display(rows, AUDIT_COLS)))
    measured = [r for r in rows if r["accuracy_ci"] is not None]
    if measured:
        section.figures.append(("Shortcut audit with 95 % intervals", plots.grouped_bars(
            [r["shortcut"].removeprefix("shortcut/") for r in measured],
            {"accuracy": [r["accuracy_ci"] for r in measured]}, ylabel="accuracy (%)", title="Shortcut audit")))
    return section


RETRIEVAL_COLS = [Col("run_id", "Run", "int"), Col("embedder", "Retriever"), Col("domain", "Domain"),
                  Col("n", "Questions", "int"), Col("mean_segments", "Segments", "num"), Col("k", "k", "int"),
                  Col("hit_both_ci", "Hit_both % [CI]", "ci"), Col("hit_any_ci", "Hit_any % [CI]", "ci"),
                  Col("hit_seg1_ci", "Hit seg 1 % [CI]", "ci"), Col("hit_seg2_ci", "Hit seg 2 % [CI]", "ci"),
                  Col("ndcg_ci", "nDCG % [CI]", "ci"), Col("chance_both", "Chance both %", "pct2"),
                  Col("chance_any", "Chance any %", "pct"), Col("chance_ndcg", "Chance nDCG %", "pct")]


def retrieval(an: Analytics, boot: Bootstrap) -> Section:
    return Section("retrieval", "Retrievers (paper Tables 2 and 15)",
                   "Gold segments' ranks among the domain's segments; chance floors of a random ranking (SPEC R3). "
                   f"{boot.label}.", tables=[("", display(rates.retrieval(an, boot), RETRIEVAL_COLS))])


SWEEP_COLS = [Col("run_id", "Run", "int"), Col("judge_shown", "Judge"), Col("evidence", "Evidence"),
              Col("scope", "Scope"), Col("sides", "Sides"), Col("varies", "Varies"), Col("n", "Pairs", "int"),
              Col("errors", "Errors", "int"), Col("accuracy_ci", "Accuracy % [CI]", "ci"),
              Col("main_accuracy_ci", "Main run % [CI]", "ci"), Col("difference_ci", "Δ pts [CI]", "cipts"),
              Col("difference_ci", "p (Δ)", "p"),
              # paper Tables 3, 16, 17: what each setting costs beside what it scores (analytics/run_cost.py)
              Col("prompt_tokens", "Prompt tok./pair", "int"), Col("output_tokens", "Output tok./pair", "int"),
              Col("usd", "$", "usd3"), Col("main_prompt_tokens", "Main prompt tok./pair", "int"),
              Col("main_output_tokens", "Main output tok./pair", "int"), Col("main_usd", "Main $", "usd3"),
              Col("status", "Status"),
              # issue 40: how each run's replies ended, and the flag of a run over [analytics] max_*_share
              Col("verdicts_mix", "Verdicts"), Col("health", "Verdict health"), Col("main_health", "Main run health")]


def sweeps(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> Section:
    """Runs with other options than the configured defaults (SPEC G6): only here, labelled by what they vary."""
    rows = shown(run_cost.with_costs(an, run_rates.sweeps(an, bench, boot)))
    simulated = any(r.get("simulated") or r.get("main_simulated") for r in rows)
    return Section("sweeps", "Sweeps (SPEC G6)",
                   "Runs made with other options than the configured [eval] defaults, each labelled by what it "
                   "changes, beside the judge's main run; they appear in no other table. Accuracy over the judged "
                   "pairs; a failed call is an error, never scored. Δ = sweep − main run over the pairs both "
                   f"judged, p from a paired test. {boot.label}. Tokens are per judged pair (output includes "
                   "thinking), $ the run's total from the ledger"
                   + (" (simulated calls: the price table applied to the sim's token counts, no provider's bill)"
                      if simulated else "") + f". {verdict_health.rule(an.settings)}.",
                   tables=[("", display(rows, SWEEP_COLS))])
