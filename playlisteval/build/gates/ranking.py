"""Read a ranking reply ({rankings: [{rank, candidate_index, reasoning}]}) into an order of ratings.

Only a permutation is a ranking: exactly one entry per shown candidate, ranks 1..n each once, candidate
numbers each once and in range, all integers. Anything else is unusable (the runner re-asks with the
problem named; a reply still unusable after that is a checker fault, never "order not recovered").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from playlisteval.build.gates import unusable
from playlisteval.errors import CheckerFault
from playlisteval.models.request import ModelResponse


def _ints(values: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def ranking_problem(parsed: dict[str, Any] | None, n: int, base: int = 1) -> str | None:
    """Why ``parsed`` is not a ranking of ``n`` candidates shown numbered from ``base``; None if it is."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("rankings"), list):
        return "no rankings list"
    entries = parsed["rankings"]
    if not all(isinstance(e, dict) for e in entries):
        return "a rankings entry is not an object"
    ranks = [e.get("rank") for e in entries]
    indices = [e.get("candidate_index") for e in entries]
    expected = set(range(base, base + n))
    problems: list[str] = []
    if len(entries) != n:
        problems.append(f"{len(entries)} entries for {n} candidates")
    if not _ints(ranks):
        problems.append("a rank is not an integer")
    elif sorted(ranks) != list(range(1, n + 1)):
        dup = sorted(r for r, k in Counter(ranks).items() if k > 1)
        problems.append(f"ranks must be 1..{n}, each once (got {sorted(ranks)}"
                        + (f"; repeated {dup}" if dup else "") + ")")
    if not _ints(indices):
        problems.append("a candidate_index is not an integer")
    else:
        dup = sorted(i for i, k in Counter(indices).items() if k > 1)
        missing, extra = sorted(expected - set(indices)), sorted(set(indices) - expected)
        if dup:
            problems.append(f"candidate(s) {dup} ranked more than once")
        if missing:
            problems.append(f"candidate(s) {missing} missing")
        if extra:
            problems.append(f"no candidate numbered {extra} (candidates are {base}..{base + n - 1})")
    return "; ".join(problems) or None


def validator(n: int, base: int = 1) -> Callable[[dict[str, Any]], str | None]:
    """The runner's semantic check for a ranking of ``n`` candidates (``Runner.call(validate=…)``)."""
    return lambda parsed: ranking_problem(parsed, n, base)


def ranked_ratings(parsed: dict[str, Any] | None, ratings_by_index: list[int], base: int = 1) -> list[int]:
    """The candidates' ratings from rank 1 down. Candidates are shown numbered from ``base`` (1: "Candidate
    1" is ``ratings_by_index[0]``). Raises ValueError, naming the problem, for anything but a permutation."""
    problem = ranking_problem(parsed, len(ratings_by_index), base)
    if problem is not None:
        raise ValueError(problem)
    assert parsed is not None
    entries = sorted(parsed["rankings"], key=lambda e: e["rank"])
    return [ratings_by_index[e["candidate_index"] - base] for e in entries]


def read_ranking(gate: str, role: str, response: ModelResponse, ratings_by_index: list[int],
                 call_ids: list[int] | None = None) -> list[int]:
    """The ranking in ``response``, or a CheckerFault when there is none to read (malformed after the
    runner's repairs, or a cached reply that is not a permutation)."""
    if response.malformed or response.parsed is None:
        raise unusable(gate, role, response, call_ids)
    try:
        return ranked_ratings(response.parsed, ratings_by_index)
    except ValueError as exc:
        ids = [response.call_id] if response.call_id else []
        raise CheckerFault(gate, role, f"not a ranking of the {len(ratings_by_index)} candidates: {exc}",
                           call_ids=list(call_ids or ids), unusable_call_ids=ids, reply=response.text[:2000]) from exc
