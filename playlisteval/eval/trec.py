"""Score retrieval runs in TREC format against TREC qrels (issue 6 item 4; SPEC R2).

    run line:    qid Q0 docid rank score tag       (whitespace separated, 6 fields)
    qrels line:  qid 0 docid rel                   (4 fields; rel > 0 is relevant, binary)

A query's documents are ordered by the run's score, highest first; equal scores are ordered by the
run's rank column, then by the order of the lines. Means are taken over the queries of the qrels
that have at least one relevant document (a query with nothing relevant cannot be hit or ranked);
such a query with no line in the run scores 0 on every metric. Run queries absent from the qrels are
ignored. A malformed or duplicated line is an error naming the file and the line: a scorer that
skips what it cannot read reports a number for a run it never saw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from playlisteval.errors import PlaylistEvalError
from playlisteval.eval import metrics


class ScoreInputError(PlaylistEvalError):
    """A run, qrels or verdicts file that cannot be scored as it is."""


@dataclass(frozen=True)
class RunEntry:
    docid: str
    rank: int
    score: float
    line: int  # tie-break of last resort: the order of the lines


@dataclass(frozen=True)
class RetrievalScores:
    n_queries: int
    hit_all: float
    hit_any: float
    ndcg: float
    k: int
    answered: int = 0  # of the n_queries, how many the run ranks anything for (the rest score 0)

    def as_json(self) -> dict[str, float | int | list[str]]:
        return {"n_queries": self.n_queries, "hit_all": self.hit_all, "hit_any": self.hit_any, "ndcg": self.ndcg,
                "answered": self.answered, "warnings": self.warnings()}

    def warnings(self) -> list[str]:
        """What makes the means misleading: a run that answers none (or only some) of the queries scores 0
        there, which reads as a retriever that failed rather than a run file that is empty or mismatched."""
        if self.answered == 0:
            return [f"the run ranks nothing for any of the {self.n_queries} qrels queries (an empty run, or qids "
                    "that do not match the qrels'): every score is 0"]
        if self.answered < self.n_queries:
            return [f"the run ranks nothing for {self.n_queries - self.answered} of the {self.n_queries} qrels "
                    "queries: they score 0"]
        return []


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreInputError(f"cannot read {path}: {exc}") from None
    # blank lines carry nothing (a trailing newline is common); everything else must parse
    return [(n, raw.split()) for n, raw in enumerate(text.splitlines(), start=1) if raw.strip()]


def read_run(path: Path) -> dict[str, list[RunEntry]]:
    """The run's entries per query, in the order the file lists them."""
    run: dict[str, list[RunEntry]] = {}
    seen: set[tuple[str, str]] = set()
    for n, fields in _lines(path):
        where = f"{path}:{n}"
        if len(fields) != 6:
            raise ScoreInputError(f"{where}: a run line has 6 fields (qid Q0 docid rank score tag), got {len(fields)}")
        qid, _q0, docid, rank_text, score_text, _tag = fields
        try:
            rank = int(rank_text)
        except ValueError:
            raise ScoreInputError(f"{where}: rank {rank_text!r} is not an integer") from None
        try:
            score = float(score_text)
        except ValueError:
            raise ScoreInputError(f"{where}: score {score_text!r} is not a number") from None
        if math.isnan(score):
            raise ScoreInputError(f"{where}: score is NaN")
        if (qid, docid) in seen:
            raise ScoreInputError(f"{where}: document {docid!r} is listed twice for query {qid!r}")
        seen.add((qid, docid))
        run.setdefault(qid, []).append(RunEntry(docid, rank, score, n))
    return run


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Relevance per query and document, as judged (0 = judged not relevant)."""
    qrels: dict[str, dict[str, int]] = {}
    for n, fields in _lines(path):
        where = f"{path}:{n}"
        if len(fields) != 4:
            raise ScoreInputError(f"{where}: a qrels line has 4 fields (qid 0 docid rel), got {len(fields)}")
        qid, _iteration, docid, rel_text = fields
        try:
            rel = int(rel_text)
        except ValueError:
            raise ScoreInputError(f"{where}: relevance {rel_text!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise ScoreInputError(f"{where}: document {docid!r} is judged twice for query {qid!r}")
        judged[docid] = rel
    return qrels


def ranked_docids(entries: list[RunEntry]) -> list[str]:
    """Documents by score (highest first), ties by the rank column, then by line order."""
    return [e.docid for e in sorted(entries, key=lambda e: (-e.score, e.rank, e.line))]


def score_run(run: dict[str, list[RunEntry]], qrels: dict[str, dict[str, int]], k: int) -> RetrievalScores:
    if k < 1:
        raise ScoreInputError(f"k must be at least 1, got {k}")
    relevant = {q: frozenset(d for d, rel in docs.items() if rel > 0) for q, docs in qrels.items()}
    queries = sorted(q for q, rel in relevant.items() if rel)
    if not queries:
        raise ScoreInputError("the qrels hold no query with a relevant document")
    hit_all: dict[str, float] = {}
    hit_any: dict[str, float] = {}
    ndcg: dict[str, float] = {}
    for q in queries:
        if q not in run:
            continue  # scores 0 on every metric (mean_over fills it in)
        ranked = ranked_docids(run[q])
        hit_all[q] = metrics.hit_all_at_k(ranked, relevant[q], k)
        hit_any[q] = metrics.hit_any_at_k(ranked, relevant[q], k)
        ndcg[q] = metrics.ndcg_at_k(ranked, relevant[q], k)
    return RetrievalScores(
        n_queries=len(queries),
        hit_all=metrics.mean_over(queries, hit_all),
        hit_any=metrics.mean_over(queries, hit_any),
        ndcg=metrics.mean_over(queries, ndcg),
        k=k,
        answered=len(hit_all),
    )


def score_files(run_path: Path, qrels_path: Path, k: int) -> RetrievalScores:
    """Read both files (errors name file and line) and score the run at ``k``."""
    return score_run(read_run(run_path), read_qrels(qrels_path), k)
