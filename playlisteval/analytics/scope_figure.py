"""Accuracy by corpus scope, one line per evidence protocol (paper Fig. 4; issue 20 deliverable 2).

A protocol is (evidence, scope): retrieved evidence over the full domain, a frozen 24-h or 10-h corpus or
the oracle pair of segments is one line (solid in the figure); uniform evidence over the same scopes is
another (dashed); *oracle evidence* (the two gold segments handed over, no search at all) is its own point,
never merged with retrieved evidence at the oracle scope; an agentic run (options ``agentic = true``, the
judge looks for its own evidence) is its own point too, when there is one.

Steps are paired: the change from one scope to the next larger one on the same line, over the pairs judged
in both runs — each pair once (one main run per judge, evidence, scope and side order), so a 44-pair
benchmark has at most 44 pairs in both — with a cluster-bootstrap interval and a sign-flip p-value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from playlisteval.analytics import judgment_matrix
from playlisteval.analytics.judgment_matrix import RunFacts
from playlisteval.analytics.rates import Bootstrap, Row
from playlisteval.analytics.runner import Analytics

ORACLE_EVIDENCE = "oracle evidence"
AGENTIC = "agentic"
#: the lines of the figure, in the legend's order; the first two are drawn over the scopes
LINES = ("retrieved", "uniform", ORACLE_EVIDENCE, AGENTIC)
DASHED = frozenset({"uniform"})


def _line(r: RunFacts) -> str:
    return AGENTIC if r.agentic else ORACLE_EVIDENCE if r.evidence == "oracle" else r.evidence


def _runs(m: judgment_matrix.Matrix) -> dict[tuple[str, str, str], list[RunFacts]]:
    """(judge, line, scope) → its runs: every main forward run, and each judge's first agentic forward run
    per scope, with its line."""
    out: dict[tuple[str, str, str], list[RunFacts]] = defaultdict(list)
    for r in m.runs:
        if not r.swapped and (r.main or r.agentic):
            out[(r.judge, _line(r), r.scope)].append(r)
    return out


def protocol_accuracy(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap) -> list[Row]:
    """Accuracy per judge, line and scope, with its interval and pair count."""
    m = judgment_matrix.of(an, bench, boot.unit)
    sums = judgment_matrix.single(m, {key: [r.run_id for r in runs] for key, runs in _runs(m).items()})
    groups = sorted(sums.items())
    cis = boot.intervals([(s, 0, None) for _, s in groups])
    return [{"judge": j, "line": line, "scope": scope, "n": s.n, "accuracy_ci": ci}
            for ((j, line, scope), s), ci in zip(groups, cis, strict=True)]


def ordered(scopes: set[str], order: Sequence[str]) -> list[str]:
    return [s for s in order if s in scopes] + sorted(scopes - set(order))


def protocol_steps(an: Analytics, bench: dict[str, Any] | None, boot: Bootstrap, points: list[Row],
                   order: Sequence[str]) -> list[Row]:
    """Per judge and line, each scope against the next larger one on that line, paired over the pairs judged
    in both runs (each pair once)."""
    present: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in points:
        present[(r["judge"], r["line"])].add(str(r["scope"]))
    wanted = [(judge, line, small, large) for (judge, line), have in sorted(present.items())
              for small, large in zip(ordered(have, order), ordered(have, order)[1:], strict=False)]
    if not wanted:
        return []
    # each step's smaller scope's runs against the larger one's of the same benchmark, on the pairs both judged
    m = judgment_matrix.of(an, bench, boot.unit)
    runs = _runs(m)
    sums = judgment_matrix.paired(m, {(judge, line, small, large): [
        (s.run_id, t.run_id) for s in runs[(judge, line, small)] for t in runs[(judge, line, large)]
        if s.benchmark_id == t.benchmark_id] for judge, line, small, large in wanted}, judgment_matrix.difference)
    diffs = boot.intervals([(sums.get(step), 0, 0.0) for step in wanted])
    return [{"judge": judge, "line": line, "from": small, "to": large, "n": diff.n, "difference_ci": diff}
            for (judge, line, small, large), diff in zip(wanted, diffs, strict=True) if diff is not None]
