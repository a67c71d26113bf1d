"""Analytics: DuckDB SQL views over the store (DESIGN "Analytics"; SPEC F4, G5, G8, R2, R3, K1–K4).

Public names: ``Analytics`` (the in-memory DuckDB with the store's tables and every view),
``AnalyticsError``, ``views`` (the packaged views), ``load_tables`` (store tables as Arrow).

They load on first use (PEP 562): importing a light module of the package (``analytics.provenance`` for
`status --json`) no longer loads DuckDB and pyarrow (~0.4 s of a command's start, issue 26).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playlisteval.analytics.loader import load_tables
    from playlisteval.analytics.runner import Analytics, AnalyticsError, View, views

__all__ = ["Analytics", "AnalyticsError", "View", "views", "load_tables"]
_WHERE = {"load_tables": "loader", "Analytics": "runner", "AnalyticsError": "runner", "View": "runner",
          "views": "runner"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"playlisteval.analytics.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
