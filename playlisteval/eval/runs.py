"""Judge runs as things a user can see and manage (issue 9): their state, their counts, listing, dropping.

A run's pairs are its benchmark's. Each has a *judgment* (a reply: with a verdict, or none, which
scores 0.5), an *error* (the call failed: no judgment, no score, asked again next pass), or neither
yet. The state says what that adds up to:

- ``finished``: every pair judged;
- ``incomplete``: a pass ended with errors, or with pairs not asked — run the same command again;
- ``running``: a pass is under way (or was cut short: running it again continues).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import runkey
from playlisteval.store import protocol
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Benchmark, BenchmarkPair, JudgeError, JudgeRun, Judgment, now

FINISHED, INCOMPLETE, RUNNING = "finished", "incomplete", "running"


def state_of(finished_at: float, pairs: int, judged: int, errors: int) -> str:
    if errors > 0:
        return INCOMPLETE
    if judged >= pairs:
        return FINISHED
    return RUNNING if not finished_at else INCOMPLETE


@dataclass
class RunCounts:
    pairs: int = 0  # the benchmark's pairs
    judged: int = 0  # pairs with a judgment (with or without a verdict)
    no_verdict: int = 0  # of them, replies without a verdict (scored 0.5)
    errors: int = 0  # pairs whose call failed: not judged, asked again by the next pass
    finished_at: float = 0.0

    @property
    def pending(self) -> int:
        return max(0, self.pairs - self.judged - self.errors)

    @property
    def state(self) -> str:
        return state_of(self.finished_at, self.pairs, self.judged, self.errors)


def run_counts(engine: Engine, run_ids: list[int]) -> dict[int, RunCounts]:
    with transaction(engine) as s:
        runs = s.exec(select(JudgeRun.id, JudgeRun.benchmark_id, JudgeRun.finished_at)
                      .where(col(JudgeRun.id).in_(run_ids))).all()
        sizes = dict(s.exec(select(BenchmarkPair.benchmark_id, func.count())
                            .where(col(BenchmarkPair.benchmark_id).in_({int(b) for _, b, _ in runs}))
                            .group_by(col(BenchmarkPair.benchmark_id))).all())
        judged = s.exec(select(Judgment.run_id, Judgment.verdict, func.count())
                        .where(col(Judgment.run_id).in_(run_ids))
                        .group_by(col(Judgment.run_id), col(Judgment.verdict))).all()
        errors = dict(s.exec(select(JudgeError.run_id, func.count()).where(col(JudgeError.run_id).in_(run_ids))
                             .group_by(col(JudgeError.run_id))).all())
    out = {int(r or 0): RunCounts(pairs=int(sizes.get(b, 0)), errors=int(errors.get(int(r or 0), 0)),
                                  finished_at=float(f))
           for r, b, f in runs}
    for run_id, verdict, n in judged:
        c = out[int(run_id)]
        c.judged += int(n)
        if verdict not in ("A", "B"):
            c.no_verdict += int(n)
    return out


def record(engine: Engine, run_id: int, item_id: int, rows: list[Judgment], failed: dict[int, tuple[str, bool]]) -> int:
    """Store one question's judgments and errors (pair → (error text, whether a call was made)); a
    judgment replaces the pair's error. Returns the judgments added (another process may have raced us)."""
    pairs = [r.pair_id for r in rows] + list(failed)
    with transaction(engine) as s:
        have = set(s.exec(select(Judgment.pair_id).where(Judgment.run_id == run_id,
                                                         col(Judgment.pair_id).in_(pairs))).all())
        new = [r for r in rows if r.pair_id not in have]
        s.add_all(new)
        judged = have | {r.pair_id for r in new}
        if judged:
            s.execute(delete(JudgeError).where(col(JudgeError.run_id) == run_id,
                                               col(JudgeError.pair_id).in_(judged)))
        known = {e.pair_id: e for e in s.exec(select(JudgeError).where(
            JudgeError.run_id == run_id, col(JudgeError.pair_id).in_(list(failed)))).all()}
        for pair_id, (error, asked) in failed.items():
            if pair_id in judged:
                continue
            row = known.get(pair_id) or JudgeError(run_id=run_id, pair_id=pair_id, item_id=item_id, attempts=0)
            row.error, row.created_at = error, now()
            row.attempts += 1 if asked else 0
            s.add(row)
    return len(new)


@dataclass
class RunInfo:
    run_id: int
    benchmark: str
    judge: str
    options_hash: str
    settings: dict[str, Any]
    varies: str  # "" for the configured default options
    main: bool  # the judge's main run for its benchmark, evidence, scope and side order
    counts: RunCounts
    created_at: float
    accuracy: float | None = None  # over judged pairs (no verdict 0.5)
    errors: list[str] = field(default_factory=list)  # the distinct errors, most frequent first

    def as_json(self) -> dict[str, Any]:
        c = self.counts
        return {"run_id": self.run_id, "benchmark": self.benchmark, "judge": self.judge,
                "options_hash": self.options_hash, "settings": self.settings, "varies": self.varies,
                "main": self.main, "state": c.state, "pairs": c.pairs, "judged": c.judged,
                "no_verdict": c.no_verdict, "errors": c.errors, "pending": c.pending, "accuracy": self.accuracy,
                "error_messages": self.errors, "imported": self.imported}

    @property
    def imported(self) -> bool:
        """Made by `eval import` from verdicts given elsewhere (eval/imported.py), not asked here."""
        return runkey.is_imported(self.settings)


def list_runs(settings: Settings, engine: Engine, benchmark: str | None = None,
              judge: str | None = None) -> list[RunInfo]:
    """Every judge run (of one benchmark, of one judge), in the order they were made."""
    from playlisteval.eval.options import default_settings  # the options module pulls in evidence code

    protocols = protocol.every(engine)  # main or sweep by each benchmark's stored protocol (issue 22)
    by_benchmark: dict[int, dict[str, dict[str, Any]]] = {}
    query = select(JudgeRun, Benchmark.name).join(Benchmark, col(Benchmark.id) == col(JudgeRun.benchmark_id))
    if benchmark is not None:
        query = query.where(Benchmark.name == benchmark)
    if judge is not None:
        query = query.where(JudgeRun.judge == judge)
    with transaction(engine) as s:
        runs = s.exec(query.order_by(col(JudgeRun.id))).all()
        scores = dict(s.exec(select(Judgment.run_id, func.avg(Judgment.score))
                             .where(col(Judgment.run_id).in_([r.id for r, _ in runs]))
                             .group_by(col(Judgment.run_id))).all())
        messages = s.exec(select(JudgeError.run_id, JudgeError.error)
                          .where(col(JudgeError.run_id).in_([r.id for r, _ in runs]))).all()
    counts = run_counts(engine, [int(r.id or 0) for r, _ in runs])
    errors: dict[int, Counter[str]] = {}
    for run_id, message in messages:
        errors.setdefault(int(run_id), Counter())[str(message)] += 1
    out: list[RunInfo] = []
    main_seen: set[tuple[Any, ...]] = set()
    for run, name in runs:
        run_id = int(run.id or 0)
        recorded = runkey.parse_settings(run.settings) or {}
        if run.benchmark_id not in by_benchmark:
            by_benchmark[run.benchmark_id] = default_settings(
                protocol.applied(settings, protocols.get(run.benchmark_id)))
        varies = runkey.varies(recorded, by_benchmark[run.benchmark_id].get(run.evidence))
        key = (run.benchmark_id, run.judge, run.evidence, run.scope, run.swapped)
        main = varies == "" and key not in main_seen  # the first run with the defaults, as the views say
        if main:
            main_seen.add(key)
        score = scores.get(run_id)
        out.append(RunInfo(run_id, str(name), run.judge, run.options_hash, recorded, varies, main, counts[run_id],
                           run.created_at, None if score is None else float(score),
                           [m for m, _ in errors.get(run_id, Counter()).most_common()]))
    return out


def drop_run(engine: Engine, run_id: int) -> tuple[JudgeRun, int, int]:
    """Delete a run with its judgments and errors; its calls stay on the ledger (the money was spent).
    Returns the run as it was, the judgments and the errors deleted."""
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        if run is None:
            raise ConfigError(f"no judge run {run_id}: `playlisteval eval runs` lists them")
        snapshot = JudgeRun.model_validate(run.model_dump())
        judged = s.execute(delete(Judgment).where(col(Judgment.run_id) == run_id)).rowcount  # type: ignore[attr-defined]
        errors = s.execute(delete(JudgeError).where(col(JudgeError.run_id) == run_id)).rowcount  # type: ignore[attr-defined]
        s.delete(run)
    return snapshot, int(judged or 0), int(errors or 0)
