"""Score pairwise verdicts produced elsewhere (issue 6 item 4; SPEC G4, G8).

One JSON object per line: ``{"pair_id": …, "verdict": "A" | "B" | null, "a_is_better": true | false}``.
Accuracy counts a no-verdict (null) as 0.5, as the judge runs do, and the no-verdicts are also counted
on their own. Blank lines are skipped; any other line that is not such an object — bad JSON, a missing
key, a verdict other than "A"/"B"/null, a non-boolean ``a_is_better``, a pair seen twice — is an error
naming its line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playlisteval.eval import metrics
from playlisteval.eval.trec import ScoreInputError


@dataclass(frozen=True)
class VerdictScores:
    n: int
    accuracy: float
    no_verdict: int

    def as_json(self) -> dict[str, float | int]:
        return {"n": self.n, "accuracy": self.accuracy, "no_verdict": self.no_verdict}


def _check(obj: Any, where: str) -> tuple[Any, str | None, bool]:
    if not isinstance(obj, dict):
        raise ScoreInputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [key for key in ("pair_id", "verdict", "a_is_better") if key not in obj]
    if missing:
        raise ScoreInputError(f"{where}: missing {', '.join(missing)}")
    pair_id, verdict, a_is_better = obj["pair_id"], obj["verdict"], obj["a_is_better"]
    if not isinstance(pair_id, str | int) or isinstance(pair_id, bool):
        raise ScoreInputError(f"{where}: pair_id must be a string or an integer, got {pair_id!r}")
    if verdict not in ("A", "B", None):
        raise ScoreInputError(f"{where}: verdict must be \"A\", \"B\" or null, got {verdict!r}")
    if not isinstance(a_is_better, bool):
        raise ScoreInputError(f"{where}: a_is_better must be true or false, got {a_is_better!r}")
    return pair_id, verdict, a_is_better


def score_lines(lines: list[str], source: str = "<verdicts>") -> VerdictScores:
    scores: list[float] = []
    no_verdict = 0
    seen: set[Any] = set()
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{source}: line {n}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ScoreInputError(f"{where}: not JSON ({exc.msg})") from None
        pair_id, verdict, a_is_better = _check(obj, where)
        if pair_id in seen:
            raise ScoreInputError(f"{where}: pair {pair_id!r} has a verdict already")
        seen.add(pair_id)
        no_verdict += verdict is None
        scores.append(metrics.pair_score(verdict, a_is_better))
    if not scores:
        raise ScoreInputError(f"{source}: no verdicts to score")
    return VerdictScores(n=len(scores), accuracy=metrics.accuracy(scores), no_verdict=no_verdict)


def score_file(path: Path) -> VerdictScores:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreInputError(f"cannot read {path}: {exc}") from None
    return score_lines(text.splitlines(), source=str(path))
