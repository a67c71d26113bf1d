"""Benchmark versions (issue 22): a benchmark never changes under its name without saying so.

`select` makes version 1. Whatever changes a selected benchmark's pairs — `remove --force` of what it
was drawn from, a video re-indexed because its file changed — makes the next version, and the version
it replaces keeps a frozen copy of what it was: its export's rows, dataset card and statistics, and its
leaderboard as JSON (``benchmark_version.snapshot``). The live version is read from the store as always;
`leaderboard --version N`, `export --version N` read an older one from its copy, unchanged.

A version is named by its number and its content hash: the sha256 of its export's ``data/test.jsonl``,
so anyone holding the export can check which version it is. Judge runs record the version they were made
on (``judge_run.benchmark_version``); a run continued after a new version judges the pairs that are left.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.logs import get_logger
from playlisteval.select.export import ExportReport, benchmark_rows, card_text, export
from playlisteval.select.pairs import find_benchmark
from playlisteval.store import versions as stored_versions
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Benchmark, BenchmarkVersion

log = get_logger(__name__)


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    """The export's data/test.jsonl, as export writes it."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def content_hash(rows: list[dict[str, Any]]) -> str:
    return hashlib.sha256(jsonl_text(rows).encode("utf-8")).hexdigest()


def _rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    return benchmark_rows(engine, bench)


def ensure(engine: Engine, bench: Benchmark, reason: str = "select") -> BenchmarkVersion:
    """The live version, version 1 made now for a benchmark that has none (drawn before versions)."""
    found = stored_versions.current(engine, int(bench.id or 0))
    if found is not None:
        return found
    rows = _rows(engine, bench)
    with transaction(engine) as s:
        row = BenchmarkVersion(benchmark_id=int(bench.id or 0), version=1, content_hash=content_hash(rows),
                               pairs=len(rows), reason=reason, created_at=bench.created_at)
        s.add(row)
        s.flush()
        made = BenchmarkVersion.model_validate(row.model_dump())
    log.info("benchmark.version", benchmark=bench.name, version=1, content_hash=made.content_hash[:12])
    return made


def freeze(settings: Settings, engine: Engine, bench: Benchmark) -> None:
    """Before a change: keep the live version's export and leaderboard in its row (once per version)."""
    from playlisteval.analytics.board_json import leaderboard_document
    from playlisteval.analytics.runner import Analytics
    from playlisteval.select.stats import benchmark_stats

    live = ensure(engine, bench)
    if live.snapshot:
        return
    rows = _rows(engine, bench)
    st = benchmark_stats(engine, int(bench.id or 0))
    with Analytics(engine, settings, file=False) as an:
        board = leaderboard_document(an, settings, {"id": bench.id, "name": bench.name}, version=live.version)
    snapshot = {"rows": rows, "card": card_text(settings, engine, bench, st, len(rows)), "stats": st.as_dict(),
                "leaderboard": board, "frozen_at": time.time()}
    with transaction(engine) as s:
        row = s.get(BenchmarkVersion, live.id)
        if row is not None:
            row.snapshot = json.loads(json.dumps(snapshot, default=str))
            s.add(row)


def freeze_all(settings: Settings, engine: Engine) -> list[str]:
    """``freeze`` every benchmark (before a change that may touch any); their names."""
    with transaction(engine) as s:
        benches = [Benchmark.model_validate(b.model_dump()) for b in s.exec(select(Benchmark)
                                                                           .order_by(col(Benchmark.id))).all()]
    for bench in benches:
        freeze(settings, engine, bench)
    return [b.name for b in benches]


def advance(engine: Engine, reason: str) -> list[tuple[str, int, str]]:
    """After a change: every benchmark whose content hash moved gets the next version; one whose content
    did not move drops the copy ``freeze`` took. Returns (name, new version, content hash) per new one."""
    made: list[tuple[str, int, str]] = []
    with transaction(engine) as s:
        benches = [Benchmark.model_validate(b.model_dump()) for b in s.exec(select(Benchmark)
                                                                           .order_by(col(Benchmark.id))).all()]
    for bench in benches:
        live = stored_versions.current(engine, int(bench.id or 0))
        if live is None:
            continue
        rows = _rows(engine, bench)
        digest = content_hash(rows)
        with transaction(engine) as s:
            if digest == live.content_hash:
                row = s.get(BenchmarkVersion, live.id)
                if row is not None and row.snapshot:
                    row.snapshot = None  # unchanged: still the live version, read from the store
                    s.add(row)
                continue
            s.add(BenchmarkVersion(benchmark_id=int(bench.id or 0), version=live.version + 1, content_hash=digest,
                                   pairs=len(rows), reason=reason))
        made.append((bench.name, live.version + 1, digest))
        log.info("benchmark.version", benchmark=bench.name, version=live.version + 1, reason=reason)
    return made


def frozen(engine: Engine, bench: Benchmark, version: int | None) -> dict[str, Any] | None:
    """The frozen copy of an older ``version`` (None for the live one or no version asked); an unknown
    version, or one that kept no copy, is a clear error naming the versions there are."""
    if version is None:
        return None
    rows = stored_versions.listing(engine, int(bench.id or 0))
    known = ", ".join(str(r.version) for r in rows) or "none"
    chosen = next((r for r in rows if r.version == version), None)
    if chosen is None:
        raise ConfigError(f"benchmark {bench.name!r} has no version {version} (versions: {known})")
    if chosen is rows[-1] or chosen.version == rows[-1].version:
        return None
    if not chosen.snapshot:
        raise ConfigError(f"benchmark {bench.name!r} version {version} kept no copy when it was superseded")
    return dict(chosen.snapshot)


def ensure_every(engine: Engine) -> None:
    """``ensure`` for every benchmark of the store (cheap once each has its version 1)."""
    with transaction(engine) as s:
        benches = [Benchmark.model_validate(b.model_dump()) for b in s.exec(select(Benchmark)).all()]
        have = set(s.exec(select(BenchmarkVersion.benchmark_id)).all())
    for bench in benches:
        if bench.id not in have:
            ensure(engine, bench)


def export_version(settings: Settings, out: Path, name: str | None = None, *, version: int | None = None,
                   **kwargs: Any) -> ExportReport:
    """`playlisteval export [--version N]`: the live version (its version 1 recorded first, for a benchmark
    drawn before versions were kept) or an older one from its frozen copy."""
    from playlisteval.store import open_store

    engine = open_store(settings)
    bench = find_benchmark(engine, name or settings.select.benchmark)
    copy = frozen(engine, bench, version)
    if copy is None:
        ensure(engine, bench)
    return export(settings, out, name, version=version if copy is not None else None, frozen=copy, **kwargs)
