"""External validity (issue 20 deliverable 5; paper Fig. 7): the judges' accuracy here against a published
score of the same judges on another long-video benchmark.

The input is a CSV of ``judge, published score`` (a header line is allowed, ``#`` lines are comments). A
line that cannot be read is named (file and line) and skipped; the rest is used. The input is kept in the
store (``external_score``, replaced whole by the next input) so the report can draw the scatter later
without the file. Each judge's accuracy is its main run's (forward, full-domain scope, retrieved evidence,
the benchmark's default options); judges on one side only are named, not guessed. The statistics are
analytics/correlation.py's: Pearson and Spearman with Fisher-z intervals and permutation p-values.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from playlisteval.analytics.correlation import correlate
from playlisteval.analytics.runner import Analytics
from playlisteval.store import transaction


class CorrelateInputError(ValueError):
    """The file as a whole cannot be used (unreadable, or no line with a judge and a number)."""


@dataclass
class Published:
    scores: dict[str, float]
    problems: list[str] = field(default_factory=list)  # "FILE: line N: why", one per skipped line


def read_scores(path: Path) -> Published:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorrelateInputError(f"cannot read {path}: {exc}") from None
    out = Published({})
    for n, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        where = f"{path}: line {n}"
        if len(row) < 2:
            out.problems.append(f"{where}: expected 'judge, score', got {','.join(row)!r}")
            continue
        judge, value = row[0].strip(), row[1].strip().rstrip("%")
        try:
            score = float(value)
        except ValueError:
            if n == 1 or not out.scores and not out.problems:  # a header line
                continue
            out.problems.append(f"{where}: {row[1].strip()!r} is not a number")
            continue
        if not judge or not math.isfinite(score):
            out.problems.append(f"{where}: needs a judge name and a finite score")
        elif judge in out.scores:
            out.problems.append(f"{where}: judge {judge!r} is listed twice (the first is kept)")
        else:
            out.scores[judge] = score
    if not out.scores:
        raise CorrelateInputError(f"{path}: no line with a judge and a number"
                                  + (f" ({out.problems[0]})" if out.problems else ""))
    return out


def store_scores(engine: Engine, published: Published, source: str) -> None:
    """Replace the stored input with this one (the report draws the last one given)."""
    from sqlalchemy import delete

    from playlisteval.store.tables import ExternalScore  # here: the report imports this module, never the classes

    with transaction(engine) as s:
        s.exec(delete(ExternalScore))
        for judge, score in sorted(published.scores.items()):
            s.add(ExternalScore(judge=judge, score=score, source=source))


def stored_scores(engine: Engine) -> tuple[dict[str, float], str]:
    from sqlmodel import col, select

    from playlisteval.store.tables import ExternalScore

    with transaction(engine) as s:
        rows = s.exec(select(ExternalScore).order_by(col(ExternalScore.judge))).all()
    return {r.judge: float(r.score) for r in rows}, (rows[0].source if rows else "")


def main_accuracy(an: Analytics, benchmark_id: int | None = None) -> dict[str, dict[str, Any]]:
    """judge → {accuracy, n, run_id} of its main run (forward, full domain, retrieved evidence)."""
    where = "AND m.benchmark_id = ?" if benchmark_id is not None else ""
    rows = an.rows(f"""
        SELECT m.judge, m.run_id, avg(f.score) AS accuracy, count(*) AS n
        FROM main_run AS m JOIN judgment_facts AS f ON f.run_id = m.run_id
        WHERE NOT m.swapped AND m.scope = 'domain' AND m.evidence = 'retrieved' {where}
        GROUP BY m.judge, m.run_id ORDER BY m.judge, m.run_id""", [benchmark_id] if benchmark_id is not None else [])
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out.setdefault(str(r["judge"]), {"accuracy": float(r["accuracy"]), "n": int(r["n"]),
                                         "run_id": int(r["run_id"])})
    return out


def correlation(accuracy: dict[str, dict[str, Any]], published: dict[str, float], *, seed: int) -> dict[str, Any]:
    """The judges on both sides, those on one side only, and the correlation (or why there is none)."""
    both = sorted(set(accuracy) & set(published))
    out: dict[str, Any] = {
        "judges": [{"judge": j, "accuracy": accuracy[j]["accuracy"], "pairs": accuracy[j]["n"],
                    "run_id": accuracy[j]["run_id"], "published": published[j]} for j in both],
        "missing_here": sorted(set(published) - set(accuracy)),  # in the file, no main run here
        "missing_in_file": sorted(set(accuracy) - set(published)),  # a main run here, not in the file
        "correlation": None, "why_none": "",
    }
    try:
        out["correlation"] = correlate([accuracy[j]["accuracy"] for j in both], [published[j] for j in both],
                                       seed=seed)
    except ValueError as exc:
        out["why_none"] = str(exc)
    return out
