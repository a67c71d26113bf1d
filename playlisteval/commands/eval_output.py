"""What `select`, `eval judge` and `eval retrieve` print, and the exit status each ends with (issue 9).

A run with errors is never shown as a plain result: its accuracy is over the pairs it judged, with the
errors counted beside it, a line says how to ask them again, and the command exits INCOMPLETE (3) —
PAUSED (4) when the budget stopped it — so a script can tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, err_console

if TYPE_CHECKING:
    from playlisteval.analytics.rates import RunIntervals
    from playlisteval.eval.judge import RunSummary
    from playlisteval.eval.options import JudgeOptions
    from playlisteval.eval.retrieval import RetrievalSummary
    from playlisteval.select.difficulty import GateReport

MESSAGES_SHOWN = 3  # distinct error messages printed per run; `eval runs --json` has them all


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def ci(value: Any) -> str:
    """A rate with its interval (analytics/intervals.py): "62.5% [51.0, 73.2]"."""
    from playlisteval.analytics.tabular import fmt

    return "-" if value is None else fmt(value, "ci").replace(" ", "% ", 1)


def judge_json(s: RunSummary, intervals: RunIntervals | None = None) -> dict[str, Any]:
    overall, by_domain = intervals or (None, {})
    return {"run_id": s.run_id, "judge": s.judge, "state": s.state, "pairs": s.pairs, "judged": s.judged,
            "accuracy_ci": overall.as_dict() if overall else None,
            "by_domain_ci": {d: v.as_dict() if v else None for d, v in by_domain.items()},
            "judged_now": s.judged_now, "no_verdict": s.no_verdict, "ties": s.outcomes.get("tie", 0),
            "errors": s.errors, "pending": s.pending,
            "accuracy": s.accuracy, "outcomes": s.outcomes, "by_domain": s.by_domain, "stopped": s.stopped,
            "error_messages": s.error_messages, "options_hash": s.options.options_hash,
            "settings": s.options.as_settings()}


def print_judge_table(summaries: list[RunSummary], options: JudgeOptions,
                      intervals: dict[int, RunIntervals] | None = None) -> None:
    """The runs' accuracies, each with its 95 % interval (bootstrap over questions) when ``intervals``:
    a row per run, then a row per domain (rows, not columns: a panel over seven domains still fits)."""
    cis = intervals or {}
    sides = "swapped" if options.swap else "forward"
    table = Table(title=f"{options.evidence} evidence, scope {options.scope}, {options.modality}, {sides}")
    for column in ("run", "judge", "domain", "judged", "accuracy", "no verdict", "errors", "state"):
        # long names fold; numbers wrap at spaces
        table.add_column(column, justify="left" if column in ("judge", "domain", "state") else "right",
                         overflow="fold" if column in ("judge", "domain") else "ellipsis")
    for s in sorted(summaries, key=lambda x: (x.accuracy is None, -(x.accuracy or 0.0), x.judge)):
        overall, by_domain = cis.get(s.run_id, (None, {}))
        table.add_row(str(s.run_id), Text(s.judge), "all", f"{s.judged}/{s.pairs}",
                      ci(overall) if overall else pct(s.accuracy),
                      str(s.no_verdict) + (f" ({s.outcomes['tie']} tie)" if s.outcomes.get("tie") else ""),
                      str(s.errors), s.state)
        for d in sorted(s.by_domain):
            shown = by_domain.get(d)
            table.add_row("", "", Text(d), str(shown.n) if shown else "", ci(shown) if shown else pct(s.by_domain[d]),
                          "", "", "")
    console.print(table)
    console.print(Text("accuracy is over the judged pairs (no verdict counts 0.5); errors are not judged"
                       + ("; [95 % interval] from a bootstrap over questions" if cis else ""), style="dim"))
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


def judge_exit(summaries: list[RunSummary]) -> int:
    if any(s.stopped == "budget" for s in summaries):
        return exitcodes.PAUSED
    return exitcodes.DONE if all(s.state == "finished" for s in summaries) else exitcodes.INCOMPLETE


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
    """The run's rates, each with its 95 % interval (bootstrap over questions) when ``intervals``."""
    cis = intervals or {}
    named = f"variant {s.variant} = {s.embedder}" if s.variant else s.embedder
    table = Table(title=f"retriever {named} (run {s.run_id})")
    columns = ("questions", "errors", "segments (mean)", f"Hit_both@{s.k}", f"Hit_any@{s.k}", f"nDCG@{s.k}", "ms/query",
               "p50 / p95 ms", "dims", "index MB")
    for column in columns:
        table.add_column(column, justify="right", overflow="fold")
    table.add_row(str(s.questions), str(s.errors), "-" if s.mean_segments is None else f"{s.mean_segments:.0f}",
                  ci(cis["hit_both"]) if cis.get("hit_both") else pct(s.hit_both),
                  ci(cis["hit_any"]) if cis.get("hit_any") else pct(s.hit_any),
                  ci(cis["ndcg"]) if cis.get("ndcg") else "-" if s.ndcg is None else f"{s.ndcg:.3f}",
                  f"{s.latency_ms:.1f}", f"{s.latency_p50_ms:.1f} / {s.latency_p95_ms:.1f}", str(s.dims),
                  f"{s.index_bytes / 1e6:.2f}")
    console.print(table)
    if cis:
        console.print(Text("[95 % interval] from a bootstrap over questions; nDCG in %", style="dim"))
    if s.errors:
        err_console.print(f"[yellow]{s.errors} question(s) could not be ranked[/] (errors, left out of the means):",
                          highlight=False)
        for message in s.error_messages[:MESSAGES_SHOWN]:
            err_console.print(Text(f"  {message}"))


def retrieval_exit(s: RetrievalSummary) -> int:
    return exitcodes.INCOMPLETE if s.errors else exitcodes.DONE
