"""What `leaderboard` printed, kept in the analytics file for the next leaderboard of an unchanged store.

The leaderboard is a function of the same inputs as the report's sections (section_cache.py: every
loaded table's row count and content hash, the settings, the code) plus what it was asked (benchmark,
--json) and how the terminal shows it (width, colours). At 100k items and a million judgments computing
it takes seconds (the views, a bootstrap over 100k questions, the power figures); when nothing changed
the printed text is read back instead, so the command costs what the sync and the key cost (issue 26:
flat in the store's size). Any new, changed or deleted row changes the key and the board is computed
again. One kept output per kind (terminal, json); a store kept only in memory keeps nothing.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from playlisteval.analytics import section_cache, sql_values
from playlisteval.analytics.runner import Analytics
from playlisteval.analytics.scan import literal
from playlisteval.config import Settings
from playlisteval.logs import get_logger

log = get_logger(__name__)

TABLE = "_board_cache"  # in the analytics file: (kind, key, printed text)


def key(an: Analytics, settings: Settings, asked: list[Any]) -> str:
    """The report's key (tables, settings, code) with what was asked and how it is shown in ``asked``."""
    return section_cache.key(an, settings, json.dumps(["leaderboard", *asked], default=str))


def load(an: Analytics, kind: str, cache_key: str) -> str | None:
    """The text kept for ``kind`` under ``cache_key``, or None (none kept, another key, no file)."""
    if an.file is None:
        return None
    try:  # hex and our own kind names: written into the SQL, not bound (sql_values.py)
        row = an.con.execute(f"SELECT text FROM {TABLE} WHERE kind = {literal(kind)} "
                             f"AND key = {literal(cache_key)}").fetchone()
    except duckdb.Error:  # nothing kept yet
        return None
    if row is None:
        return None
    log.debug("leaderboard.reused", kind=kind, key=cache_key[:12])
    return str(row[0])


def save(an: Analytics, kind: str, cache_key: str, text: str) -> None:
    """Keep ``text`` for ``kind`` in place of what was kept before; a failure only costs the next
    leaderboard its reuse."""
    if an.file is None:
        return
    values = ", ".join(sql_values.literal(v) for v in (kind, cache_key, text))
    try:
        an.con.execute("BEGIN")
        try:
            an.con.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (kind VARCHAR, key VARCHAR, text VARCHAR)")
            an.con.execute(f"DELETE FROM {TABLE} WHERE kind = {literal(kind)}")
            an.con.execute(f"INSERT INTO {TABLE} VALUES ({values})")
            an.con.execute("COMMIT")
        except BaseException:
            an.con.execute("ROLLBACK")
            raise
    except duckdb.Error as exc:
        log.warning("leaderboard.not_kept", error=str(exc).splitlines()[0])
