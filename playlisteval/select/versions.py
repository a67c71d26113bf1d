"""Benchmark versions (issue 22): a benchmark never changes under its name without saying so.

`select` makes version 1. Whatever changes a selected benchmark's pairs — `remove --force` of what it
was drawn from, a video re-indexed because its file changed — makes the next version, and the version
it replaces keeps a frozen copy of what it was: its export's rows, dataset card and statistics, and its
leaderboard as JSON (``benchmark_version.snapshot``). `leaderboard --version N` reads an older one from
its copy, unchanged. Every version is also sealed when it is recorded (issue 41, select/sealed.py): its
export's data files byte for byte, so `export` of any version — the live one too — writes what it was,
whatever another draw's gate or a later edit did to the rows it was built from.

A version is named by its number and its content hash: the sha256 of its export's ``data/test.jsonl``,
so anyone holding the export can check which version it is. Judge runs record the version they were made
on (``judge_run.benchmark_version``); a run continued after a new version judges the pairs that are left.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, StoreError
from playlisteval.logs import get_logger
from playlisteval.select import sealed as sealed_content
from playlisteval.select.content import digest, digest_lines
from playlisteval.select.content import jsonl_text as content_text
from playlisteval.select.export import ExportReport, benchmark_rows, card_text, export
from playlisteval.select.pairs import find_benchmark
from playlisteval.select.rows import gather
from playlisteval.store import versions as stored_versions
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Benchmark, BenchmarkSeal, BenchmarkVersion

log = get_logger(__name__)


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    """The export's data/test.jsonl, as export writes it."""
    return content_text(rows)


def content_hash(rows: list[dict[str, Any]]) -> str:
    return digest(jsonl_text(rows))


def _rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    return benchmark_rows(engine, bench)


def ensure(engine: Engine, bench: Benchmark, reason: str = "select") -> BenchmarkVersion:
    """The live version, version 1 made now for a benchmark that has none (drawn now, or before versions),
    sealed with it (select/sealed.py): its rows built once, hashed and kept."""
    found = stored_versions.current(engine, int(bench.id or 0))
    if found is not None:
        return found
    gathered = gather(engine, bench)
    content = sealed_content.build(engine, bench, gathered)
    with transaction(engine) as s:
        row = BenchmarkVersion(benchmark_id=int(bench.id or 0), version=1, content_hash=content.content_hash,
                               pairs=gathered.count, reason=reason, created_at=bench.created_at)
        s.add(row)
        s.add(sealed_content.row_of(int(bench.id or 0), 1, content))
        s.flush()
        made = BenchmarkVersion.model_validate(row.model_dump())
    log.info("benchmark.version", benchmark=bench.name, version=1, content_hash=made.content_hash[:12])
    return made


def freeze(settings: Settings, engine: Engine, bench: Benchmark) -> None:
    """Before a change: keep the live version's card and leaderboard in its row (once per version); its rows
    and annotations are in its seal, or — a version recorded before seals — in the copy too."""
    from playlisteval.analytics.board_json import leaderboard_document
    from playlisteval.analytics.runner import Analytics
    from playlisteval.select.export import stats_of
    from playlisteval.select.stats import benchmark_stats

    live = ensure(engine, bench)
    if live.snapshot:
        return
    content = sealed_content.load(engine, bench, live.version, live.content_hash)
    if content is not None:  # the card as the seal's statistics and descriptions say, no row rebuilt
        content = sealed_content.with_stats(engine, bench, live.version, content)
        st = stats_of(content.stats)
        card = card_text(settings, engine, bench, st, live.pairs, described=content.domains)
        snapshot: dict[str, Any] = {"stats": content.stats}
    else:
        rows = _rows(engine, bench)
        st = benchmark_stats(engine, int(bench.id or 0))
        card = card_text(settings, engine, bench, st, len(rows))
        snapshot = {"rows": rows, "stats": st.as_dict()}
    with Analytics(engine, settings, file=False) as an:
        board = leaderboard_document(an, settings, {"id": bench.id, "name": bench.name}, version=live.version)
    snapshot.update(card=card, leaderboard=board, frozen_at=time.time())
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
    """After a change: every benchmark whose content hash moved gets the next version, sealed; one whose
    content did not move drops the copy ``freeze`` took (and is sealed now if it was recorded before
    seals). Returns (name, new version, content hash) per new one."""
    made: list[tuple[str, int, str]] = []
    with transaction(engine) as s:
        benches = [Benchmark.model_validate(b.model_dump()) for b in s.exec(select(Benchmark)
                                                                           .order_by(col(Benchmark.id))).all()]
        sealed_versions = set(s.exec(select(BenchmarkSeal.benchmark_id, BenchmarkSeal.version)).all())
    for bench in benches:
        bid = int(bench.id or 0)
        live = stored_versions.current(engine, bid)
        if live is None:
            continue
        gathered = gather(engine, bench)
        now_hash = digest_lines(gathered.lines())  # the seal (annotations, zlib) only where one is made
        if now_hash == live.content_hash:
            if (bid, live.version) not in sealed_versions:
                sealed_content.store(engine, bid, live.version, sealed_content.build(engine, bench, gathered))
            with transaction(engine) as s:
                row = s.get(BenchmarkVersion, live.id)
                if row is not None and row.snapshot:
                    row.snapshot = None  # unchanged: still the live version, read from the store
                    s.add(row)
            continue
        content = sealed_content.build(engine, bench, gathered)
        with transaction(engine) as s:
            s.add(BenchmarkVersion(benchmark_id=bid, version=live.version + 1, content_hash=now_hash,
                                   pairs=gathered.count, reason=reason))
            s.add(sealed_content.row_of(bid, live.version + 1, content))
        made.append((bench.name, live.version + 1, now_hash))
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
    """`playlisteval export [--version N]`: the version's sealed content, byte for byte as it was recorded
    (its version 1 recorded first, for a benchmark drawn before versions were kept). A version recorded
    before seals is written from the store (the live one) or its frozen copy (an older one) only when that
    still hashes to what it recorded; otherwise the export is refused with what differs named."""
    from playlisteval.store import open_store

    engine = open_store(settings)
    bench = find_benchmark(engine, name or settings.select.benchmark)
    ensure(engine, bench)
    frozen(engine, bench, version)  # an unknown version, or an older one that kept nothing: its error
    listed = stored_versions.listing(engine, int(bench.id or 0))
    chosen = next((r for r in listed if r.version == version), listed[-1]) if version else listed[-1]
    live = chosen.version == listed[-1].version
    copy = None if live or not chosen.snapshot else dict(chosen.snapshot)
    content = sealed_content.load(engine, bench, chosen.version, chosen.content_hash)
    notes: list[str] = []
    if content is None and live:  # recorded before seals: sealed now if the store still holds what it was
        gathered = gather(engine, bench)
        content = sealed_content.build(engine, bench, gathered)
        if content.content_hash != chosen.content_hash:
            raise StoreError(_refusal(bench, chosen, gathered.dicts()))
        sealed_content.store(engine, int(bench.id or 0), chosen.version, content)
    elif content is None and copy is not None:
        if content_hash(copy["rows"]) != chosen.content_hash:
            raise StoreError(_refusal(bench, chosen, copy["rows"]))
        notes.append(f"version {chosen.version} was frozen before annotations were kept with it: "
                     "data/annotations.jsonl is not in this export")
    if content is not None and not content.stats and copy is not None and copy.get("stats"):
        content.stats = dict(copy["stats"])  # frozen with the version: not today's
    elif content is not None:
        content = sealed_content.with_stats(engine, bench, chosen.version, content)
    return export(settings, out, name, version=None if live else chosen.version, frozen=copy, sealed=content,
                  notes=notes, **kwargs)


def _refusal(bench: Benchmark, chosen: BenchmarkVersion, rows: list[dict[str, Any]]) -> str:
    """The error of an export that cannot reproduce the version's recorded content hash."""
    return (f"benchmark {bench.name!r} version {chosen.version} recorded content hash {chosen.content_hash[:16]}…, "
            f"but its rows built now hash {content_hash(rows)[:16]}…: "
            f"{sealed_content.differences(bench, chosen.version, chosen.pairs, rows)}. It was recorded before "
            "versions were sealed, so it cannot be written as it was; nothing was exported")
