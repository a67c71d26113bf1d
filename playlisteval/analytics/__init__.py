"""Analytics: DuckDB SQL views over the store (DESIGN "Analytics"; SPEC F4, G5, G8, R2, R3, K1–K4).

Public names: ``Analytics`` (the in-memory DuckDB with the store's tables and every view),
``AnalyticsError``, ``views`` (the packaged views), ``load_tables`` (store tables as Arrow).
"""

from playlisteval.analytics.loader import load_tables
from playlisteval.analytics.runner import Analytics, AnalyticsError, View, views

__all__ = ["Analytics", "AnalyticsError", "View", "views", "load_tables"]
