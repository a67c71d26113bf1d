"""The table ``judge_run_options``: what each judge run's options are next to the configured defaults.

The main run of a judge is the one made with the configured ``[eval]`` options (issue 9), whatever
order the runs were made in; the views cannot tell that from the stored settings alone, so it is
worked out here, from the same functions `eval judge` and `eval runs` use (eval/runkey.py), and
registered beside the store's tables.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from playlisteval.config import Settings
from playlisteval.eval import runkey

SCHEMA = pa.schema([("run_id", pa.int64()), ("options_hash", pa.string()), ("variant_hash", pa.string()),
                    ("is_default", pa.bool_()), ("varies", pa.string())])


def run_options_table(judge_run: pa.Table | None, settings: Settings | None) -> pa.Table:
    """One row per run: its options hash, the hash of its options but evidence/scope/sides, whether
    those equal the configured defaults, and the options it changes ("frames=16, thinking=high")."""
    from playlisteval.eval.options import default_settings  # evidence and media code: only when needed

    defaults = default_settings(settings if settings is not None else Settings())
    rows: list[dict[str, Any]] = []
    if judge_run is not None:
        for run in judge_run.select(["id", "evidence", "settings"]).to_pylist():
            recorded = runkey.parse_settings(run["settings"])
            varies = runkey.varies(recorded, defaults.get(str(run["evidence"])))
            rows.append({"run_id": run["id"], "options_hash": runkey.options_hash(recorded),
                         "variant_hash": runkey.variant_hash(recorded), "is_default": varies == "", "varies": varies})
    return pa.Table.from_pylist(rows, schema=SCHEMA)
