"""What a judge run stands at (RunSummary): its pairs, judgments, errors, outcomes and accuracy by domain, as
`eval judge` prints them after a pass and `--json` gives them."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.benchmark.pairs import pair_texts
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.runs import run_counts, state_of
from playlisteval.eval.verdicts import VERDICT
from playlisteval.models.call_rate import CallRate
from playlisteval.store.engine import transaction
from playlisteval.store.tables import JudgeError, JudgeRun, Judgment


@dataclass
class RunSummary:
    run_id: int
    judge: str
    options: JudgeOptions
    pairs: int  # the benchmark's pairs
    judged_now: int  # judgments made by this pass
    accuracy: float | None  # over the judged pairs (no verdict scores 0.5); None when none is judged
    judged: int = 0
    errors: int = 0  # pairs whose call failed: no judgment, asked again by the next pass
    outcomes: dict[str, int] = field(default_factory=dict)
    by_domain: dict[str, float] = field(default_factory=dict)
    stopped: str = ""  # budget / quota / unavailable: why this pass stopped asking
    calls: CallRate | None = None  # this pass's calls: in flight, calls/s, 429s (issue 43); None: no pass ran here
    error_messages: list[str] = field(default_factory=list)  # distinct, most frequent first
    finished_at: float = 0.0

    @property
    def no_verdict(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != VERDICT)

    @property
    def pending(self) -> int:
        return max(0, self.pairs - self.judged - self.errors)

    @property
    def state(self) -> str:
        return state_of(self.finished_at, self.pairs, self.judged, self.errors)


def summarize(engine: Engine, run_id: int, options: JudgeOptions, judged_now: int = 0) -> RunSummary:
    with transaction(engine) as s:
        run = s.get(JudgeRun, run_id)
        assert run is not None
        rows = s.exec(select(Judgment.pair_id, Judgment.score, Judgment.outcome).where(Judgment.run_id == run_id)).all()
        messages = s.exec(select(JudgeError.error).where(JudgeError.run_id == run_id)).all()
    counts = run_counts(engine, [run_id])[run_id]
    texts = pair_texts(engine, [int(p) for p, _, _ in rows])
    per_domain: dict[str, list[float]] = defaultdict(list)
    for pair_id, value, _ in rows:
        per_domain[texts[int(pair_id)].domain].append(float(value))
    scores = [float(v) for _, v, _ in rows]
    return RunSummary(
        run_id=run_id, judge=run.judge, options=options, pairs=counts.pairs, judged_now=judged_now,
        accuracy=sum(scores) / len(scores) if scores else None, judged=len(rows), errors=counts.errors,
        outcomes=dict(Counter(str(o) for _, _, o in rows)),
        by_domain={d: sum(v) / len(v) for d, v in sorted(per_domain.items())},
        error_messages=[m for m, _ in Counter(str(m) for m in messages).most_common()],
        finished_at=run.finished_at,
    )
