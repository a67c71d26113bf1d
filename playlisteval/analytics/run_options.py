"""The table ``judge_run_options``: what each judge run's options are next to the configured defaults.

The main run of a judge is the one made with its benchmark's stored protocol (issue 22; the configured
``[eval]`` options for a benchmark without one), whatever order the runs were made in and whatever the
reading shell's settings; the views cannot tell that from the stored settings alone, so it is worked out
here, from the same functions `eval judge` and `eval runs` use (eval/runkey.py), and registered beside the
store's tables.
"""

from __future__ import annotations

from typing import Any

from playlisteval.config import Settings
from playlisteval.eval import runkey
from playlisteval.store import protocol

# the table's columns; its rows are written as SQL (analytics/sql_values.py: no pandas import)
COLUMNS = [("run_id", "BIGINT"), ("options_hash", "VARCHAR"), ("variant_hash", "VARCHAR"), ("is_default", "BOOLEAN"),
           ("varies", "VARCHAR")]


def run_options_rows(judge_run: list[tuple[Any, ...]] | None, settings: Settings | None,
                     protocols: dict[int, dict[str, Any]] | None = None) -> list[tuple[Any, ...]]:
    """One row per judge run (id, evidence, settings as stored, benchmark id), in ``COLUMNS``: its options
    hash, the hash of its options but evidence/scope/sides, whether those equal its benchmark's protocol
    (store/protocol.py; the configured defaults for a benchmark without one), and the options it changes
    ("frames=16, thinking=high")."""
    from playlisteval.eval.options import default_settings  # eval code: only when a report needs it

    base = settings if settings is not None else Settings()
    by_benchmark: dict[Any, dict[str, dict[str, Any]]] = {}
    rows: list[tuple[Any, ...]] = []
    for run_id, evidence, settings_json, benchmark_id in judge_run or []:
        if benchmark_id not in by_benchmark:
            proto = (protocols or {}).get(int(benchmark_id or 0))
            by_benchmark[benchmark_id] = default_settings(protocol.applied(base, proto))
        defaults = by_benchmark[benchmark_id]
        recorded = runkey.parse_settings(settings_json)
        varies = runkey.varies(recorded, defaults.get(str(evidence)))
        rows.append((run_id, runkey.options_hash(recorded), runkey.variant_hash(recorded), varies == "", varies))
    return rows
