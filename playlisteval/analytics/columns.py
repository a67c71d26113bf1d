"""What the analytics read of the store's columns: a kind per reflected SQL type, and what is never read.

Kinds are plain names, not Arrow types, so that the scanners (scan.py) and a report or leaderboard whose
store has not changed need no pyarrow (with NumPy, ~0.2 s of such a command's start, issue 26); the Python
loader (loader.py, the fallback) maps them to Arrow types.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import types

from playlisteval.errors import PlaylistEvalError

# Tables never loaded: raw model responses (large, and the ledger already holds what they cost)
# and bookkeeping.
SKIPPED_TABLES = frozenset({"response_cache", "schema_migration", "kv", "remote_file"})

JSON = "json"  # loaded as JSON text, whichever store it comes from
BOOL, INT, FLOAT, TEXT = "bool", "int64", "float64", "string"


class AnalyticsError(PlaylistEvalError):
    """The analytics cannot run: a store value of the wrong type, a query not read-only, a DuckDB error."""


def kind_of(sa_type: types.TypeEngine[Any]) -> str | None:
    """The kind of a reflected column type; None for binary columns (vectors), which no view reads."""
    if isinstance(sa_type, types._Binary):
        return None
    if isinstance(sa_type, types.JSON):
        return JSON
    if isinstance(sa_type, types.Boolean):
        return BOOL
    if isinstance(sa_type, types.Integer):
        return INT
    if isinstance(sa_type, types.Float | types.Numeric):
        return FLOAT
    return TEXT  # text, varchar, and anything unknown
