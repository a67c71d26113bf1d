"""Sealed versions (issue 41): what a benchmark version is made of, frozen when the version is recorded.

A version's rows are built from tables that other work shares: pairs belong to items, not to a benchmark,
so drawing another benchmark with other weak judges gates the same pairs again, and a described domain
or a re-indexed video changes what a row would say. So when a version is recorded (select/versions.py:
``ensure`` for version 1, ``advance`` for the next ones) its export's ``data/test.jsonl`` and
``data/annotations.jsonl`` are kept byte for byte (zlib) in ``benchmark_seal`` with its domains'
descriptions (its statistics from its first export or its freeze). `export` of the version writes those
bytes and checks them against the content hash the version recorded; a version recorded before seals
existed is exported only when the rows built now still hash to what it recorded, and refused otherwise
with what differs named.

The rows are built once per recording: the text written is the text hashed is the text sealed.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from playlisteval.errors import StoreError
from playlisteval.select import annotations as released  # not `annotations`: that is __future__'s name
from playlisteval.select.content import LEVEL, Sealed, digest, jsonl_text
from playlisteval.select.rows import Rows, gather
from playlisteval.select.stats import benchmark_stats
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Benchmark, BenchmarkSeal


def build(engine: Engine, bench: Benchmark, gathered: Rows | None = None) -> Sealed:
    """The live benchmark's content from the store (``gathered``: its rows, already read by the caller, not
    again). data/test.jsonl is streamed into its hash and its zlib (select/content.py): never one string. Its
    statistics are left to ``with_stats``: they are not in the content hash, read only the benchmark's own
    rows, and cost as much again as the rows at 100k pairs — recording a version stays as fast as it was."""
    gathered = gather(engine, bench) if gathered is None else gathered
    described = released.domain_descriptions(engine)
    return Sealed.from_lines(gathered.lines(), jsonl_text(released.annotation_rows(engine, bench), sort_keys=True),
                             {}, {d: described.get(d, "") for d in sorted(gathered.domains())})


def with_stats(engine: Engine, bench: Benchmark, version: int, sealed: Sealed) -> Sealed:
    """``sealed`` with its statistics, computed and kept in its seal the first time they are asked for (its
    first export, or when it is frozen before a change supersedes it: select/versions.py ``freeze``)."""
    if sealed.stats:
        return sealed
    sealed.stats = benchmark_stats(engine, int(bench.id or 0)).as_dict()
    with transaction(engine) as s:
        row = s.exec(select(BenchmarkSeal).where(BenchmarkSeal.benchmark_id == bench.id,
                                                 BenchmarkSeal.version == version)).first()
        if row is not None and not row.stats:
            row.stats = sealed.stats
            s.add(row)
    return sealed


def row_of(benchmark_id: int, version: int, sealed: Sealed) -> BenchmarkSeal:
    """The seal's row, for the caller to add in the transaction that records the version."""
    return BenchmarkSeal(benchmark_id=benchmark_id, version=version, content_hash=sealed.content_hash,
                         rows=sealed.rows_z, annotations=sealed.annotations_z, stats=sealed.stats,
                         domains=sealed.domains)


def store(engine: Engine, benchmark_id: int, version: int, sealed: Sealed) -> None:
    """Seal a version recorded before seals existed (its content checked equal to its hash by the caller)."""
    with transaction(engine) as s:
        if s.exec(select(BenchmarkSeal.id).where(BenchmarkSeal.benchmark_id == benchmark_id,
                                                 BenchmarkSeal.version == version)).first() is None:
            s.add(row_of(benchmark_id, version, sealed))


def load(engine: Engine, bench: Benchmark, version: int, recorded_hash: str) -> Sealed | None:
    """The version's seal (None: recorded before seals existed); one whose bytes do not hash to what the
    version recorded is an error naming both, never exported."""
    with transaction(engine) as s:
        row = s.exec(select(BenchmarkSeal).where(BenchmarkSeal.benchmark_id == bench.id,
                                                 BenchmarkSeal.version == version)).first()
        if row is None:
            return None
        sealed = Sealed(row.rows, row.annotations, dict(row.stats), dict(row.domains), "")
        try:  # both files decompressed and decoded here (and kept): an unreadable seal fails now, not in export
            sealed.content_hash = digest(sealed.rows_text)
            sealed.annotations_text  # noqa: B018
        except (zlib.error, UnicodeDecodeError) as exc:
            raise StoreError(f"benchmark {bench.name!r} version {version}: its sealed copy is unreadable ({exc})") \
                from exc
    if sealed.content_hash != recorded_hash:
        raise StoreError(f"benchmark {bench.name!r} version {version}: its sealed data/test.jsonl hashes "
                         f"{sealed.content_hash[:16]}…, not the recorded {recorded_hash[:16]}…: refusing to export it")
    return sealed


def _weak_judges(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(f"{w.get('role')}={w.get('model')}" for r in rows for w in r.get("weak_judges") or [])


def differences(bench: Benchmark, version: int, recorded_pairs: int, rows: list[dict[str, Any]]) -> str:
    """What the rows built now say that version ``version`` did not: its pair count, and weak judges the
    benchmark was not drawn with (``benchmark.settings.weak_judges``); the rest is named by the hash."""
    found: list[str] = []
    if len(rows) != recorded_pairs:
        found.append(f"{len(rows)} pair(s) now, {recorded_pairs} recorded")
    drawn = (bench.settings or {}).get("weak_judges") or {}
    wanted = {f"{role}={model}" for role, model in drawn.items()}
    foreign = sorted(k for k in _weak_judges(rows) if wanted and k not in wanted)
    if foreign:
        found.append("weak_judges name " + ", ".join(foreign) + " but it was drawn with "
                     + ", ".join(sorted(wanted)) + " (another draw gated its pairs again)")
    return "; ".join(found) or "the rows' content (questions, answers, segments or verdicts) changed"


def describe(engine: Engine, domain: str, description: str) -> list[str]:
    """A domain's new description in the seal of each benchmark's *live* version that holds the domain (the
    names of those benchmarks). A description is the user's word about the release, set with `describe`
    after a draw as often as before; its content hash (data/test.jsonl) does not cover it. Superseded
    versions keep the description they were recorded with."""
    from playlisteval.store.tables import BenchmarkVersion

    with transaction(engine) as s:
        newest = (select(BenchmarkVersion.benchmark_id, func.max(BenchmarkVersion.version).label("version"))
                  .group_by(col(BenchmarkVersion.benchmark_id)).subquery())
        found = s.exec(select(BenchmarkSeal, Benchmark.name)
                       .join(newest, (newest.c.benchmark_id == col(BenchmarkSeal.benchmark_id))
                             & (newest.c.version == col(BenchmarkSeal.version)))
                       .join(Benchmark, col(Benchmark.id) == col(BenchmarkSeal.benchmark_id))).all()
        changed = []
        for seal, name in found:
            if domain not in (seal.domains or {}):
                continue
            lines = [json.loads(line) for line in zlib.decompress(seal.annotations).decode("utf-8").splitlines()]
            for line in lines:
                if line.get("domain") == domain:
                    line["domain_description"] = description
            seal.annotations = zlib.compress(jsonl_text(lines, sort_keys=True).encode("utf-8"), LEVEL)
            seal.domains = {**seal.domains, domain: description}
            s.add(seal)
            changed.append(str(name))
    return changed
