"""The report's computed sections kept in the analytics file, for the next report of an unchanged store.

A report's sections (tables, intervals, figures) are a function of the tables the analytics file
holds after its sync, the settings, the benchmark asked for and the code that computes them. The key
is a hash of exactly those: every loaded table's row count and order-free content hash (DuckDB's
``hash`` of each row, summed), the settings as JSON, the benchmark argument, the source of the
playlisteval package and the versions of the libraries that draw numbers and figures. A store with any
new, changed or deleted row therefore misses and recomputes; an unchanged one reuses the sections
(issue 13: ≤ 1 s when nothing changed). Only the latest report's sections are kept.

What does not come from the analytics file is never cached: the simulated banner and sections another
package adds (the human study) are made anew by every report. A report kept only in memory (no
analytics file) neither reads nor writes a cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb

from playlisteval.analytics import mirror, sql_values
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.scan import literal, quote
from playlisteval.analytics.tabular import DisplayTable, Section
from playlisteval.config import Settings
from playlisteval.logs import get_logger

log = get_logger(__name__)

TABLE = "_report_cache"  # in the analytics file: (key, benchmark shown, simulated banner, sections as JSON)
MEMO = "_content_hashes"  # in the analytics file: (store state synced, table names, their content hashes)
LIBRARIES = ("duckdb", "numpy", "jinja2", "pyarrow")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the playlisteval package's source (Python, SQL, templates) and the libraries' versions."""
    import playlisteval

    digest = hashlib.sha256()
    root = Path(playlisteval.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sql", ".j2") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in LIBRARIES:
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=none".encode())
    return digest.hexdigest()


def _tables(an: Analytics) -> list[str]:
    """The store's tables as the sync left them (the analytics file's and the ones re-read into memory)."""
    return sorted(an.sync.actions) if an.sync is not None else []


def key(an: Analytics, settings: Settings, benchmark: str | None) -> str:
    """What the sections depend on, hashed (see the module's doc)."""
    blob = json.dumps([code_version(), settings.model_dump_json(), benchmark, _content(an, _tables(an))])
    return hashlib.sha256(blob.encode()).hexdigest()


def _content(an: Analytics, names: list[str]) -> list[list[Any]]:
    """Each table's name, row count and order-free content hash. Hashing reads every row (0.13 s at 100k
    items and 1M ledger rows, issue 26), so the result is kept with the store state the mirror's last sync
    copied (mirror.py's store row: a SQLite store's file stamps and every table's signature): while that
    state is the one recorded, no table in the file has changed since, and the hashes are read back."""
    state = _synced_state(an)
    if state is not None:
        try:
            row = an.con.execute(f"SELECT content FROM {MEMO} WHERE state = {literal(state)} "
                                 f"AND names = {literal(json.dumps(names))}").fetchone()
        except duckdb.Error:  # none kept yet
            row = None
        if row is not None:
            kept: list[list[Any]] = json.loads(row[0])
            return kept
    parts = " UNION ALL ".join(f"SELECT {i} AS i, count(*) AS n, coalesce(sum(hash(t)::HUGEINT), 0) AS h "
                               f"FROM {quote(name)} AS t" for i, name in enumerate(names))
    rows = an.con.execute(f"SELECT i, n, h::VARCHAR FROM ({parts}) ORDER BY i").fetchall() if names else []
    content = [[name, int(n), str(h)] for name, (_, n, h) in zip(names, rows, strict=True)]
    if state is not None:
        _remember(an, state, names, content)
    return content


def _synced_state(an: Analytics) -> str | None:
    """The store state the analytics file's tables were copied at, or None when there is none to trust:
    no file, PostgreSQL (its small tables are re-read into memory every time), or a sync not finished."""
    if an.file is None or an.sync is None:
        return None
    try:
        row = an.con.execute(f"SELECT signature FROM {mirror.META} "
                             f"WHERE name = {literal(mirror.STORE_ROW)}").fetchone()
    except duckdb.Error:
        return None
    return None if row is None else str(row[0])


def _remember(an: Analytics, state: str, names: list[str], content: list[list[Any]]) -> None:
    values = ", ".join(literal(v) for v in (state, json.dumps(names), json.dumps(content)))
    try:
        an.con.execute(f"CREATE OR REPLACE TABLE {MEMO} AS SELECT * FROM (VALUES ({values})) "
                       "AS t(state, names, content)")
    except duckdb.Error as exc:  # only the next key's shortcut is lost
        log.info("report.content_not_kept", error=str(exc).splitlines()[0])


def _encode(section: Section) -> dict[str, Any]:
    out = asdict(section)
    out["tables"] = [[caption, asdict(table)] for caption, table in section.tables]
    return out


def _decode(data: dict[str, Any]) -> Section:
    return Section(data["id"], data["title"], data["note"],
                   tables=[(caption, DisplayTable(**table)) for caption, table in data["tables"]],
                   figures=[(alt, uri) for alt, uri in data["figures"]], examples=data["examples"])


@dataclass
class Kept:
    """A report's cached part: the benchmark shown, the simulated banner (a function of the ledger and the
    judge runs, both in the key) and the sections."""

    benchmark: str | None
    simulated: str
    sections: list[Section]


def load(an: Analytics, cache_key: str) -> Kept | None:
    """What was kept under ``cache_key``, or None."""
    if an.file is None:
        return None
    try:  # the key is hex: written into the SQL, not bound (binding imports pandas: runner.Mirror._meta)
        row = an.con.execute(f"SELECT benchmark, simulated, sections FROM {TABLE} "
                             f"WHERE key = {literal(cache_key)}").fetchone()
    except duckdb.Error:  # no report kept yet (or kept by a version with another layout)
        return None
    if row is None:
        return None
    log.debug("report.sections_reused", key=cache_key[:12])
    return Kept(row[0], row[1], [_decode(s) for s in json.loads(row[2])])


def save(an: Analytics, cache_key: str, kept: Kept) -> None:
    """Keep ``sections`` under ``cache_key`` in place of the last report's (a section that cannot be
    written as JSON is not kept: the next report computes it again)."""
    if an.file is None:
        return
    try:
        text = json.dumps([_encode(s) for s in kept.sections], allow_nan=True)
    except (TypeError, ValueError) as exc:
        log.info("report.sections_not_kept", error=str(exc))
        return
    try:
        an.con.execute("BEGIN")
        try:  # made anew each time: only the latest report is kept, in this version's layout
            an.con.execute(f"CREATE OR REPLACE TABLE {TABLE} (key VARCHAR, benchmark VARCHAR, simulated VARCHAR, "
                           "sections VARCHAR)")
            values = [sql_values.literal(v) for v in (cache_key, kept.benchmark, kept.simulated, text)]
            an.con.execute(f"INSERT INTO {TABLE} VALUES ({', '.join(values)})")  # not bound: sql_values.py
            an.con.execute("COMMIT")
        except BaseException:
            an.con.execute("ROLLBACK")
            raise
    except duckdb.Error as exc:  # the report is written all the same; the next one computes its sections
        log.warning("report.sections_not_kept", error=str(exc).splitlines()[0])
