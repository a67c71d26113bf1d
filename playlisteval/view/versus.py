"""Judge against judge (issue 41, deliverable 5): the pairs where one of two judges is right and the other
wrong, each a link to its card.

Why pair by pair: the leaderboard's judge − judge table says by how much A beats B and how sure that is,
not where: a researcher wants to read the pairs behind the number. The judges are compared as that table
compares them (analytics/trust.paired_table): each judge's main run at one evidence setting, full-domain
scope, sides as drawn, on the pairs both judged. Which run is main is the analytics' own rule (the
``main_run`` view); the verdicts are read here from the store's judgments, so the counts shown are a
second reading of the same data, and a test holds them equal to the table's discordant cells.

A no-verdict (score 0.5) is neither right nor wrong: a pair with one is not listed, as the table's
discordant cells leave it out too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics
from playlisteval.config import Settings


@dataclass
class Versus:
    """Two judges' main runs compared on the pairs both judged."""

    judge_a: str
    judge_b: str
    run_a: int
    run_b: int
    evidence: str
    common: int = 0  # pairs both judged
    both_right: int = 0
    both_wrong: int = 0
    no_verdict: int = 0  # pairs where either gave no verdict
    a_only: list[dict[str, Any]] = field(default_factory=list)  # A right, B wrong
    b_only: list[dict[str, Any]] = field(default_factory=list)  # B right, A wrong


def main_runs(engine: Engine, settings: Settings, benchmark_id: int, evidence: str) -> dict[str, int]:
    """judge → its main run on the benchmark at ``evidence`` (full-domain scope, sides as drawn), by the
    analytics' ``main_run`` view, as the leaderboard and the paired table choose it."""
    with Analytics(engine, settings) as an:
        rows = an.rows("SELECT r.judge, r.run_id FROM main_run AS r WHERE r.benchmark_id = ? AND r.evidence = ? "
                       "AND r.scope = 'domain' AND NOT r.swapped ORDER BY r.judge, r.run_id", [benchmark_id, evidence])
    return {str(r["judge"]): int(r["run_id"]) for r in rows}


_COMPARED = ("SELECT p.id, d.name AS domain, p.better_rating, p.worse_rating, q.question, "
             "ja.score AS score_a, jb.score AS score_b "
             "FROM judgment AS ja JOIN judgment AS jb ON jb.pair_id = ja.pair_id AND jb.run_id = :rb "
             "JOIN pair AS p ON p.id = ja.pair_id JOIN item AS i ON i.id = p.item_id "
             "JOIN seed AS s ON s.id = i.seed_id JOIN domain AS d ON d.id = s.domain_id "
             "JOIN distractor_set AS ds ON ds.id = p.set_id JOIN qa AS q ON q.id = ds.qa_id "
             "WHERE ja.run_id = :ra ORDER BY p.id")


def _right(score: Any) -> bool | None:
    """1 right, 0 wrong, anything between no verdict (SPEC G4)."""
    value = float(score)
    return True if value >= 1 else False if value <= 0 else None


def compare(engine: Engine, runs: dict[str, int], judge_a: str, judge_b: str, evidence: str) -> Versus:
    """``judge_a`` against ``judge_b`` over their main runs ``runs`` (``main_runs``); KeyError naming the judge
    when one has no main run there."""
    for judge in (judge_a, judge_b):
        if judge not in runs:
            raise KeyError(f"{judge!r} has no main run at {evidence} evidence on this benchmark")
    out = Versus(judge_a, judge_b, runs[judge_a], runs[judge_b], evidence)
    with engine.connect() as conn:
        for r in conn.execute(text(_COMPARED), {"ra": out.run_a, "rb": out.run_b}):
            out.common += 1
            a, b = _right(r.score_a), _right(r.score_b)
            if a is None or b is None:
                out.no_verdict += 1
            elif a and b:
                out.both_right += 1
            elif not a and not b:
                out.both_wrong += 1
            else:
                (out.a_only if a else out.b_only).append(
                    {"id": int(r.id), "domain": str(r.domain), "better_rating": r.better_rating,
                     "worse_rating": r.worse_rating, "question": str(r.question or "")})
    return out


def every_pair(engine: Engine, runs: dict[str, int], evidence: str) -> list[Versus]:
    """Every two judges with a main run, in name order (as the paired table orders them)."""
    return [compare(engine, runs, a, b, evidence) for a, b in combinations(sorted(runs), 2)]
