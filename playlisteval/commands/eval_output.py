"""What `select`, `eval judge` and `eval retrieve` print, and the exit status each ends with (issue 9).

A run with errors is never shown as a plain result: its accuracy is over the pairs it judged, with the
errors counted beside it, a line says how to ask them again, and the command exits INCOMPLETE (3) —
PAUSED (4) when the budget stopped it — so a script can tell. Nor is a broken judge (issue 40): each run's
verdict mix stands beside its accuracy, a run flagged unhealthy (analytics/verdict_health.py) gets a loud
warning naming it and its share, and one flagged for replies without a verdict exits FLAGGED (6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, err_console

if TYPE_CHECKING:
    from playlisteval.analytics.rates import RunIntervals
    from playlisteval.analytics.verdict_health import Health
    from playlisteval.eval.options import JudgeOptions
    from playlisteval.eval.retrieval import RetrievalSummary
    from playlisteval.eval.run_summary import RunSummary
    from playlisteval.select.difficulty import GateReport

MESSAGES_SHOWN = 3  # distinct error messages printed per run; `eval runs --json` has them all


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def ci(value: Any) -> str:
    """A rate with its interval (analytics/intervals.py): "62.5% [51.0, 73.2]"."""
    from playlisteval.analytics.tabular import fmt

    return "-" if value is None else fmt(value, "ci").replace(" ", "% ", 1)


def judge_json(s: RunSummary, intervals: RunIntervals | None = None, health: Health | None = None) -> dict[str, Any]:
    overall, by_domain = intervals or (None, {})
    return {"health": health.as_dict() if health else None,
            "run_id": s.run_id, "judge": s.judge, "state": s.state, "pairs": s.pairs, "judged": s.judged,
            "accuracy_ci": overall.as_dict() if overall else None,
            "by_domain_ci": {d: v.as_dict() if v else None for d, v in by_domain.items()},
            "judged_now": s.judged_now, "no_verdict": s.no_verdict, "ties": s.outcomes.get("tie", 0),
            "errors": s.errors, "pending": s.pending,
            "accuracy": s.accuracy, "outcomes": s.outcomes, "by_domain": s.by_domain, "stopped": s.stopped,
            "error_messages": s.error_messages, "options_hash": s.options.options_hash,
            "settings": s.options.as_settings(), "calls": s.calls.as_dict() if s.calls else None}


def print_judge_table(summaries: list[RunSummary], options: JudgeOptions,
                      intervals: dict[int, RunIntervals] | None = None,
                      health: dict[int, Health] | None = None) -> None:
    """The runs' accuracies, each with its 95 % interval (clustered by question) when ``intervals``
    and its verdict mix when ``health``: a row per run, then a row per domain (rows, not columns: a panel
    over seven domains still fits)."""
    cis = intervals or {}
    mixes = health or {}
    sides = "swapped" if options.swap else "forward"
    table = Table(title=f"{options.evidence} evidence, scope {options.scope}, {options.modality}, {sides}")
    for column in ("run", "judge", "domain", "judged", "accuracy", "verdicts", "errors", "state"):
        # long names fold; numbers wrap at spaces; an accuracy with its interval stays on one line (the
        # verdict mix beside it wraps instead: "33.3% [5.0, 82.6]" cut in three was unreadable at 80 columns)
        table.add_column(column, justify="left" if column in ("judge", "domain", "state") else "right",
                         overflow="fold" if column in ("judge", "domain", "verdicts") else "ellipsis",
                         no_wrap=column == "accuracy")
    for s in sorted(summaries, key=lambda x: (x.accuracy is None, -(x.accuracy or 0.0), x.judge)):
        overall, by_domain = cis.get(s.run_id, (None, {}))
        h = mixes.get(s.run_id)
        # the mix ('2/44 no verdict (1 refusal) · A 52 %'); a flagged run's accuracy and state in red
        mix = Text(h.verdicts_mix if h else f"{s.no_verdict} no verdict"
                   + (f" ({s.outcomes['tie']} tie)" if s.outcomes.get("tie") else ""),
                   style="bold red" if h and h.flagged else "")
        flagged = "bold red" if h and h.flagged else ""
        table.add_row(Text(f"{s.run_id}" + (" !" if flagged else ""), style=flagged), Text(s.judge), "all",
                      f"{s.judged}/{s.pairs}", Text(ci(overall) if overall else pct(s.accuracy), style=flagged), mix,
                      str(s.errors), s.state)
        for d in sorted(s.by_domain):
            shown = by_domain.get(d)
            table.add_row("", "", Text(d), str(shown.n) if shown else "", ci(shown) if shown else pct(s.by_domain[d]),
                          "", "", "")
    console.print(table)
    console.print(Text("accuracy is over the judged pairs (no verdict counts 0.5); errors are not judged"
                       + ("; [95 % interval] clustered by question" if cis else ""), style="dim"))
    for s in summaries:
        if s.calls is not None and s.calls.tries:  # how close the pass ran to the provider's capacity (issue 43)
            console.print(Text(f"run {s.run_id} ({s.judge}) calls: {s.calls.line()}", style="dim"))
    for s in summaries:
        report_problems(s)


def report_problems(s: RunSummary) -> None:
    """One warning per run that did not finish: what failed and how to go on."""
    if s.state == "finished":
        return
    what = [f"{s.errors} error(s)"] if s.errors else []
    if s.pending:
        what.append(f"{s.pending} pair(s) not asked")
    why = {"budget": "the budget is spent", "quota": "the provider's quota is used up",
           "unavailable": "the provider is not available"}.get(s.stopped, "")
    err_console.print(f"[yellow]run {s.run_id} ({s.judge}) is incomplete:[/] " + ", ".join(what)
                      + (f" — stopped asking: {why}" if why else "")
                      + "; run the same command again to ask those pairs again", highlight=False)
    for message in s.error_messages[:MESSAGES_SHOWN]:
        err_console.print(Text(f"  {message}"))


def report_unhealthy(summaries: list[RunSummary], health: dict[int, Health]) -> None:
    """One loud warning per run flagged unhealthy (issue 40), naming the run and the share, on stderr
    (the JSON lines stay alone on stdout)."""
    from playlisteval.analytics.verdict_health import consequence

    for s in summaries:
        h = health.get(s.run_id)
        if h is None or not h.flagged:
            continue
        err_console.print(Text(f"! UNHEALTHY JUDGE RUN {s.run_id} ({s.judge}): "
                               f"{h.health.removeprefix('unhealthy: ')}", style="bold red"))
        err_console.print(Text(f"  {consequence(h)}. Look at its replies (`playlisteval eval attribute "
                               f"{s.run_id}`, `playlisteval show ITEM`) before reading its accuracy."))


def judge_exit(summaries: list[RunSummary], health: dict[int, Health] | None = None) -> int:
    """PAUSED, INCOMPLETE, then FLAGGED when a run's replies are mostly without a verdict (issue 40:
    its accuracy would read as chance); one-letter answering is warned about, not an exit status."""
    if any(s.stopped == "budget" for s in summaries):
        return exitcodes.PAUSED
    if not all(s.state == "finished" for s in summaries):
        return exitcodes.INCOMPLETE
    flagged = [s.run_id for s in summaries if (h := (health or {}).get(s.run_id)) and h.no_verdict_flagged]
    return exitcodes.FLAGGED if flagged else exitcodes.DONE


def print_gate_problems(gate: GateReport) -> None:
    if not gate.undecided:
        return
    why = " — stopped asking: the budget is spent" if gate.stopped == "budget" else ""
    err_console.print(f"[yellow]difficulty gate incomplete:[/] {gate.undecided} pair(s) without a decision, "
                      f"{gate.errors} weak-judge fault(s){why}; run `playlisteval select` again", highlight=False)
    for message in gate.messages[:MESSAGES_SHOWN]:
        err_console.print(Text(f"  {message}"))


def gate_exit(gate: GateReport) -> int:
    if gate.stopped == "budget":
        return exitcodes.PAUSED
    return exitcodes.INCOMPLETE if gate.undecided else exitcodes.DONE


def print_retrieval(s: RetrievalSummary, intervals: dict[str, Any] | None = None) -> None:
    """The run's rates, each with its 95 % interval (clustered by question) when ``intervals``."""
    cis = intervals or {}
    named = f"variant {s.variant} = {s.embedder}" if s.variant else s.embedder
    # one figure a row: ten columns with three intervals could not fit 80 columns (issue 44: piped, the
    # table was rows of wrapped digits)
    table = Table(title=f"retriever {named} (run {s.run_id})")
    table.add_column("figure")
    table.add_column("value", justify="right", no_wrap=True)
    for figure, value in (
            ("questions", str(s.questions)), ("errors", str(s.errors)),
            ("segments (mean)", "-" if s.mean_segments is None else f"{s.mean_segments:.0f}"),
            (f"Hit_both@{s.k}", ci(cis["hit_both"]) if cis.get("hit_both") else pct(s.hit_both)),
            (f"Hit_any@{s.k}", ci(cis["hit_any"]) if cis.get("hit_any") else pct(s.hit_any)),
            (f"nDCG@{s.k}", ci(cis["ndcg"]) if cis.get("ndcg") else "-" if s.ndcg is None else f"{s.ndcg:.3f}"),
            ("ms/query", f"{s.latency_ms:.1f}"), ("p50 / p95 ms", f"{s.latency_p50_ms:.1f} / {s.latency_p95_ms:.1f}"),
            ("dims", str(s.dims)), ("index MB", f"{s.index_bytes / 1e6:.2f}")):
        table.add_row(figure, value)
    console.print(table)
    if cis:
        console.print(Text("[95 % interval] clustered by question; nDCG in %", style="dim"))
    if s.errors:
        err_console.print(f"[yellow]{s.errors} question(s) could not be ranked[/] (errors, left out of the means):",
                          highlight=False)
        for message in s.error_messages[:MESSAGES_SHOWN]:
            err_console.print(Text(f"  {message}"))


def retrieval_exit(s: RetrievalSummary) -> int:
    return exitcodes.INCOMPLETE if s.errors else exitcodes.DONE
