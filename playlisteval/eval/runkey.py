"""A judge run's identity (issue 9): its judge and a hash of every option that changes what it sees.

A run's options are its recorded settings (``JudgeOptions.as_settings``): evidence, scope, swap,
modality, frames, frame size, thinking, media resolution, audio and retriever options. Two runs with
the same judge and the same options hash are the same run; anything else is another run. An option
added later must be left out of the recorded settings while it has its neutral value, so the runs
made before it keep their identity.

The *variant* of a run is its options without the axes every results table already splits by
(evidence, scope, side order). A run is its judge's *main* run when its variant is the configured
default's; every other run is a sweep, labelled by the options it changes (``varies``).

Standard library only: the store's migration that stamps old runs and the analytics use it too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

AXES = ("evidence", "scope", "swap")  # what the tables split by; not part of a run's variant
NOT_RECORDED = "options not recorded"
# where an imported run's verdicts came from (eval/imported.py, issue 40): part of its identity (hash),
# not of its variant — it says nothing about what the judge saw, so an import made with the protocol's
# options is its judge's main run like a run made here
IMPORTED = "imported"
# a run re-derived from another run's stored replies (`eval rescore`, issue 42): the run it re-read, provenance too
RESCORE_OF = "rescore_of"
PROVENANCE = (IMPORTED, "import_file", "import_sha256", RESCORE_OF)


def canonical(options: Mapping[str, Any]) -> str:
    """One text for one set of options, whatever the order of keys or the store it came from."""
    return json.dumps(dict(options), sort_keys=True, separators=(",", ":"), default=str)


def options_hash(options: Mapping[str, Any] | None) -> str:
    """16 hex digits naming a set of options ("" when a run recorded none)."""
    if not options:
        return ""
    return hashlib.sha256(canonical(options).encode()).hexdigest()[:16]


def variant(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in AXES and k not in PROVENANCE}


def is_imported(options: Mapping[str, Any] | None) -> bool:
    """Whether a run's recorded settings say its verdicts were imported (`eval import`), not asked here."""
    return bool(options and options.get(IMPORTED))


def variant_hash(options: Mapping[str, Any] | None) -> str:
    return options_hash(variant(options)) if options else ""


def varies(options: Mapping[str, Any] | None, default: Mapping[str, Any] | None) -> str:
    """What a run changes from the default options of its evidence mode: "frames=16, thinking=high";
    "" for a run with exactly the defaults."""
    if not options:
        return NOT_RECORDED
    if default is None:
        return "no default options for this evidence"
    mine, base = variant(options), variant(default)
    changed = [f"{k}={_show(mine.get(k))}" for k in sorted(set(mine) | set(base)) if mine.get(k) != base.get(k)]
    return ", ".join(changed)


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    if value == "":
        return "(default)"
    return str(value)


def parse_settings(raw: Any) -> dict[str, Any] | None:
    """A run's recorded settings as a dict: PostgreSQL hands back JSON parsed, SQLite as text."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip() else None
    return dict(raw) if isinstance(raw, Mapping) else None
