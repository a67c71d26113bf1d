"""The benchmark's annotations, released beside its pairs (issue 20 deliverable 9; SPEC D1.1, paper Table 13).

``data/annotations.jsonl`` holds one line per question of the benchmark, keyed by ``question_id`` (the
same content key as the pairs' rows): its domain and the domain's description, and the D1.1 causal record
in full — the five causal attributes with their importance weights, the gold's analysis, and for each
wrong answer (rating 4 → 1) its degraded weight, what it degrades (element, impact, modality), what it
keeps constant and what it upgrades, each with the elements that do so. A record stored before constant
and upgraded attributes carried their elements has names only; those come out as ``{"attribute_name":
name}`` with no elements, never invented ones.

A separate file, not new columns: ``data/test.parquet`` stays byte-identical for the same seed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from playlisteval.benchmark.keys import question_keys_of
from playlisteval.select.collector import paused
from playlisteval.store import transaction
from playlisteval.store.engine import read
from playlisteval.store.tables import Answer, Benchmark, BenchmarkPair, Domain, Item, Pair, Seed

ANNOTATIONS = "data/annotations.jsonl"
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>&])")
KINDS = {"constant_attributes": "stability_by_elements", "upgraded_attributes": "improvement_by_elements"}


def _attributes(entries: list[Any] | None, elements: str) -> list[dict[str, Any]]:
    """Constant / upgraded attributes as records; a legacy name alone stays a name, without elements."""
    out = []
    for entry in entries or []:
        if isinstance(entry, dict):
            out.append({"attribute_name": str(entry.get("attribute_name", "")), elements: entry.get(elements) or []})
        else:
            out.append({"attribute_name": str(entry)})
    return out


def markdown_text(text: str) -> str:
    """A description shown literally in the card's table: one line, Markdown and HTML characters escaped
    (a description is the user's text, a domain name could hold anything)."""
    return _MARKDOWN.sub(r"\\\1", " ".join(text.split()))


def domain_descriptions(engine: Engine) -> dict[str, str]:
    with transaction(engine) as s:
        return {d.name: d.description for d in s.exec(select(Domain).order_by(col(Domain.name))).all()}


def annotation_rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    """One row per question of ``bench``, in the pairs' order (domain, question key). Set-based (issue 43):
    the benchmark's items and sets are subqueries, not a parameter per row (SQLite's limit, issue 26), and
    plain columns are read, never table objects (recording a version at 100k pairs builds every row)."""
    with paused():  # no collector passes over the rows being built (select/collector.py)
        return _annotation_rows(engine, bench)


def _annotation_rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    in_bench = col(BenchmarkPair.benchmark_id) == bench.id
    of_bench = select(Pair.item_id).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)).where(in_bench)
    sets_of = select(Pair.set_id).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)).where(in_bench)
    with read(engine) as session:
        s = session.connection()  # Core rows: the ORM's per-row loading is not needed for plain columns
        # an item's answer set: its pairs' (one per item; were there two, the one of its last pair)
        sets = {int(item): int(set_id) for item, set_id, _ in s.execute(
            sa.select(col(Pair.item_id), col(Pair.set_id), func.max(col(Pair.id)).label("last_pair"))
            .join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)).where(in_bench)
            .group_by(col(Pair.item_id), col(Pair.set_id)).order_by(sa.column("last_pair"))).all()}
        domains = dict(s.execute(sa.select(col(Item.id), col(Domain.name)).join(Seed, col(Seed.id) == col(Item.seed_id))
                                 .join(Domain, col(Domain.id) == col(Seed.domain_id))
                                 .where(col(Item.id).in_(of_bench))).all())
        answers: dict[int, dict[int, tuple[float, dict[str, Any] | None]]] = {}
        for set_id, rating, weight, record in s.execute(
                sa.select(col(Answer.set_id), col(Answer.rating), col(Answer.degraded_weight), col(Answer.record))
                .where(col(Answer.set_id).in_(sets_of))).all():
            answers.setdefault(int(set_id), {})[int(rating)] = (weight, record)
        keys = question_keys_of(session, of_bench)
    described = domain_descriptions(engine)
    rows = []
    for item_id, set_id in sets.items():
        by_rating = answers.get(set_id, {})
        gold = (by_rating[5][1] if 5 in by_rating else None) or {}
        wrong = []
        for rating in (4, 3, 2, 1):
            if rating not in by_rating:
                continue
            weight, found = by_rating[rating]
            record = found or {}
            wrong.append({"rating": rating, "degraded_weight": weight,
                          "attribute_degradations": record.get("attribute_degradations") or [],
                          **{k: _attributes(record.get(k), v) for k, v in KINDS.items()}})
        domain = str(domains.get(item_id, ""))
        rows.append({"question_id": keys.get(item_id, ""), "domain": domain,
                     "domain_description": described.get(domain, ""),
                     "causal_attributes": gold.get("causal_attributes") or [],
                     "gold_standard_analysis": gold.get("gold_standard_analysis") or {},
                     "wrong_answers": wrong})
    return sorted(rows, key=lambda r: (r["domain"], r["question_id"]))


def write(engine: Engine, bench: Benchmark, out: Path) -> Path:
    path = out / ANNOTATIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in annotation_rows(engine, bench):
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return path


def card_section(engine: Engine, domains: list[str], described: dict[str, str] | None = None) -> str:
    """The card's domains (paper Table 13) and what the annotations file holds; ``described``: the
    descriptions a sealed version recorded (select/sealed.py), else the store's now."""
    described = domain_descriptions(engine) if described is None else described
    lines = ["## Domains", "", "| Domain | Description |", "|---|---|"]
    lines += [f"| {markdown_text(d)} | {markdown_text(described.get(d) or '—')} |" for d in domains]
    lines += ["", "Set a domain's description with `playlisteval describe DOMAIN \"TEXT\"`.", "",
              "## Annotations", "",
              f"`{ANNOTATIONS}`: one line per question (`question_id`, as in the pairs), with its domain and the "
              "domain's description and the full causal record of its wrong answers (SPEC D1.1): the five "
              "causal attributes with their importance weights, the gold's analysis, and per wrong answer "
              "(rating 4 to 1) its degraded weight (the summed importance of what it degrades), the elements "
              "it degrades (with the modality that could expose each), the attributes it keeps constant and "
              "those it upgrades, each with the elements that do so.", ""]
    return "\n".join(lines)
