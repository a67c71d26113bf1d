"""The table ``judge_run_options``: what each judge run's options are next to the configured defaults.

The main run of a judge is the one made with the configured ``[eval]`` options (issue 9), whatever
order the runs were made in; the views cannot tell that from the stored settings alone, so it is
worked out here, from the same functions `eval judge` and `eval runs` use (eval/runkey.py), and
registered beside the store's tables.
"""

from __future__ import annotations

from typing import Any

from playlisteval.config import Settings
from playlisteval.eval import runkey

# the table's columns; its rows are written as SQL (analytics/sql_values.py: no pandas import)
COLUMNS = [("run_id", "BIGINT"), ("options_hash", "VARCHAR"), ("variant_hash", "VARCHAR"), ("is_default", "BOOLEAN"),
           ("varies", "VARCHAR")]


def run_options_rows(judge_run: list[tuple[Any, ...]] | None, settings: Settings | None) -> list[tuple[Any, ...]]:
    """One row per judge run (id, evidence, settings as stored), in ``COLUMNS``: its options hash, the
    hash of its options but evidence/scope/sides, whether those equal the configured defaults, and the
    options it changes ("frames=16, thinking=high")."""
    from playlisteval.eval.options import default_settings  # eval code: only when a report needs it

    defaults = default_settings(settings if settings is not None else Settings())
    rows: list[tuple[Any, ...]] = []
    for run_id, evidence, settings_json in judge_run or []:
        recorded = runkey.parse_settings(settings_json)
        varies = runkey.varies(recorded, defaults.get(str(evidence)))
        rows.append((run_id, runkey.options_hash(recorded), runkey.variant_hash(recorded), varies == "", varies))
    return rows
