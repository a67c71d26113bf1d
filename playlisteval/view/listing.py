"""Paged, filtered lists of the store's items and of a benchmark's pairs (issue 22: 10k items stay fast).

Each page is one LIMIT/OFFSET query plus one COUNT with the same filters, over joins on primary keys and
indexed foreign keys; filters are EXISTS subqueries on indexed columns (gate_result.item_id,
judgment.run_id). Portable SQL: it runs on SQLite and PostgreSQL alike, and orders by ids, never by
anything a backend may order differently. Every value reaches the SQL as a bound parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class Filters:
    """What a list page can be narrowed to; empty strings mean "any"."""

    domain: str = ""
    gate: str = ""  # a build gate (C1 … D4) that rejected an attempt of the item
    judge: str = ""  # pairs judged by this judge (in any run of the benchmark)
    wrong: bool = False  # pairs some judgment (of ``judge``, if given) did not get right: wrong or no verdict
    state: str = ""  # items in this state

    def query(self) -> dict[str, str]:
        """The filters as URL parameters (links to other pages keep them)."""
        out = {k: v for k, v in (("domain", self.domain), ("gate", self.gate), ("judge", self.judge),
                                 ("state", self.state)) if v}
        if self.wrong:
            out["wrong"] = "1"
        return out


@dataclass
class Page:
    rows: list[dict[str, Any]]
    total: int
    page: int
    size: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def first(self) -> int:
        return (self.page - 1) * self.size + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0


def page_args(page: Any, size: Any) -> tuple[int, int]:
    """The page number (1-based) and size from the query string, clamped to what is allowed."""
    try:
        number = max(1, int(page))
    except (TypeError, ValueError):
        number = 1
    try:
        per = min(MAX_PAGE_SIZE, max(1, int(size)))
    except (TypeError, ValueError):
        per = PAGE_SIZE
    return number, per


def benchmarks(engine: Engine) -> list[dict[str, Any]]:
    """Every benchmark, the one with the latest judge run first (the report's choice), then the newest."""
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT b.id, b.name, (SELECT COUNT(*) FROM benchmark_pair AS bp WHERE bp.benchmark_id = b.id) AS pairs, "
            "(SELECT MAX(r.id) FROM judge_run AS r WHERE r.benchmark_id = b.id) AS last_run FROM benchmark AS b")).all()
    out = [dict(r._mapping) for r in rows]
    out.sort(key=lambda r: (r["last_run"] is None, -(r["last_run"] or 0), -r["id"]))
    return out


def choose(engine: Engine, name: str | None) -> dict[str, Any] | None:
    """The benchmark named ``name``; else the default one; None when the store has none (or no such name)."""
    found = benchmarks(engine)
    if name:
        return next((b for b in found if b["name"] == name), None)
    return found[0] if found else None


def domains(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [str(r[0]) for r in conn.execute(text("SELECT name FROM domain ORDER BY name"))]


def judges(engine: Engine, benchmark_id: int) -> list[str]:
    with engine.connect() as conn:
        return [str(r[0]) for r in conn.execute(text(
            "SELECT DISTINCT judge FROM judge_run WHERE benchmark_id = :b ORDER BY judge"), {"b": benchmark_id})]


_ITEM_FROM = ("FROM item AS i JOIN seed AS s ON s.id = i.seed_id JOIN domain AS d ON d.id = s.domain_id "
              "LEFT JOIN qa AS q ON q.id = i.current_qa_id")
_REJECTED_AT = ("EXISTS (SELECT 1 FROM gate_result AS g WHERE g.item_id = {item} AND g.gate = :gate "
                "AND g.verdict = 'reject')")


def _item_where(f: Filters) -> tuple[str, dict[str, Any]]:
    where: list[str] = ["1 = 1"]
    params: dict[str, Any] = {}
    if f.domain:
        where.append("d.name = :domain")
        params["domain"] = f.domain
    if f.state:
        where.append("i.state = :state")
        params["state"] = f.state
    if f.gate:
        where.append(_REJECTED_AT.format(item="i.id"))
        params["gate"] = f.gate
    return " AND ".join(where), params


def items(engine: Engine, f: Filters, page: int, size: int) -> Page:
    """The items (every state), by id, with their domain, state, attempts and current question."""
    where, params = _item_where(f)
    with engine.connect() as conn:
        total = int(conn.execute(text(f"SELECT COUNT(*) {_ITEM_FROM} WHERE {where}"), params).scalar_one())
        rows = conn.execute(text(
            f"SELECT i.id, i.state, d.name AS domain, i.phase1_attempts, i.phase2_attempts, i.error, "
            f"q.question {_ITEM_FROM} WHERE {where} ORDER BY i.id LIMIT :limit OFFSET :offset"),
            {**params, "limit": size, "offset": (page - 1) * size}).all()
        found = [dict(r._mapping) for r in rows]
        rejections = _rejections(conn, [r["id"] for r in found])
    for r in found:
        r["rejections"] = rejections.get(r["id"], {})
    return Page(found, total, page, size)


def _rejections(conn: Any, item_ids: list[int]) -> dict[int, dict[str, int]]:
    """Rejections per gate of the shown items only (one grouped query for the page)."""
    if not item_ids:
        return {}
    marks = ", ".join(f":i{n}" for n in range(len(item_ids)))
    out: dict[int, dict[str, int]] = {}
    for item_id, gate, n in conn.execute(text(
            f"SELECT item_id, gate, COUNT(*) FROM gate_result WHERE verdict = 'reject' AND item_id IN ({marks}) "
            "GROUP BY item_id, gate ORDER BY item_id, gate"), {f"i{n}": v for n, v in enumerate(item_ids)}):
        out.setdefault(int(item_id), {})[str(gate)] = int(n)
    return out


_PAIR_FROM = ("FROM benchmark_pair AS bp JOIN pair AS p ON p.id = bp.pair_id JOIN item AS i ON i.id = p.item_id "
              "JOIN seed AS s ON s.id = i.seed_id JOIN domain AS d ON d.id = s.domain_id "
              "JOIN distractor_set AS ds ON ds.id = p.set_id JOIN qa AS q ON q.id = ds.qa_id")


def _pair_where(benchmark_id: int, f: Filters) -> tuple[str, dict[str, Any]]:
    where: list[str] = ["bp.benchmark_id = :b"]
    params: dict[str, Any] = {"b": benchmark_id}
    if f.domain:
        where.append("d.name = :domain")
        params["domain"] = f.domain
    if f.gate:
        where.append(_REJECTED_AT.format(item="p.item_id"))
        params["gate"] = f.gate
    if f.judge or f.wrong:
        judged = ["j.pair_id = p.id"]
        if f.judge:
            judged.append("r.judge = :judge")
            params["judge"] = f.judge
        if f.wrong:
            judged.append("j.score < 1")
        where.append("EXISTS (SELECT 1 FROM judgment AS j JOIN judge_run AS r ON r.id = j.run_id "
                     f"WHERE r.benchmark_id = :b AND {' AND '.join(judged)})")
    return " AND ".join(where), params


def pairs(engine: Engine, benchmark_id: int, f: Filters, page: int, size: int) -> Page:
    """A benchmark's pairs, by pair id, with the question, ratings and how its judgments went."""
    where, params = _pair_where(benchmark_id, f)
    with engine.connect() as conn:
        total = int(conn.execute(text(f"SELECT COUNT(*) {_PAIR_FROM} WHERE {where}"), params).scalar_one())
        rows = conn.execute(text(
            f"SELECT p.id, p.item_id, d.name AS domain, p.better_rating, p.worse_rating, p.gap, q.question "
            f"{_PAIR_FROM} WHERE {where} ORDER BY p.id LIMIT :limit OFFSET :offset"),
            {**params, "limit": size, "offset": (page - 1) * size}).all()
        found = [dict(r._mapping) for r in rows]
        scores = _scores(conn, benchmark_id, [r["id"] for r in found])
    for r in found:
        r["judged"], r["right"] = scores.get(r["id"], (0, 0))
    return Page(found, total, page, size)


def _scores(conn: Any, benchmark_id: int, pair_ids: list[int]) -> dict[int, tuple[int, int]]:
    """Judgments and right ones (score 1) per shown pair, over the benchmark's runs."""
    if not pair_ids:
        return {}
    marks = ", ".join(f":p{n}" for n in range(len(pair_ids)))
    rows = conn.execute(text(
        "SELECT j.pair_id, COUNT(*), SUM(CASE WHEN j.score >= 1 THEN 1 ELSE 0 END) FROM judgment AS j "
        f"JOIN judge_run AS r ON r.id = j.run_id WHERE r.benchmark_id = :b AND j.pair_id IN ({marks}) "
        "GROUP BY j.pair_id"), {"b": benchmark_id, **{f"p{n}": v for n, v in enumerate(pair_ids)}})
    return {int(p): (int(n), int(right or 0)) for p, n, right in rows}
