"""Reading a benchmark's versions (issue 22): which version is live, and what each one held.

A benchmark's versions are rows of ``benchmark_version`` (made by select/versions.py, which computes
their content hash from the export's rows). The newest is the live one, read from the store's tables;
an older one is read from the frozen copy it kept when it was superseded. Here only what the layers
below ``select`` need: the live version of a benchmark (named by judge runs, the report, provenance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, text
from sqlalchemy.engine import Engine, Row

from playlisteval.store.engine import read_core, transaction

if TYPE_CHECKING:  # the ORM loads with ``listing`` / ``current``, not with ``summaries``
    from playlisteval.store.tables import BenchmarkVersion

# SQL text with the snapshot typed: the provenance of `status --json` reads it without the ORM (issue 26)
_SUMMARIES = text("SELECT version, content_hash, created_at, snapshot FROM benchmark_version "
                  "WHERE benchmark_id = :id ORDER BY version").columns(snapshot=JSON)


def summaries(engine: Engine, benchmark_id: int) -> list[Row[Any]]:
    """``listing`` as Core rows of (version, content_hash, created_at, snapshot), for readers that must not
    load the table classes; the ORM names below stay for everything else."""
    with read_core(engine) as s:
        return list(s.execute(_SUMMARIES, {"id": benchmark_id}).all())


def listing(engine: Engine, benchmark_id: int) -> list[BenchmarkVersion]:
    """Every version of the benchmark, oldest first (none for a benchmark drawn before versions)."""
    from sqlmodel import col, select

    from playlisteval.store.tables import BenchmarkVersion

    with transaction(engine) as s:
        rows = s.exec(select(BenchmarkVersion).where(BenchmarkVersion.benchmark_id == benchmark_id)
                      .order_by(col(BenchmarkVersion.version))).all()
        return [BenchmarkVersion.model_validate(r.model_dump()) for r in rows]


def current(engine: Engine, benchmark_id: int) -> BenchmarkVersion | None:
    """The live (newest) version, or None when the benchmark has none recorded yet."""
    from sqlmodel import col, select

    from playlisteval.store.tables import BenchmarkVersion

    with transaction(engine) as s:
        row = s.exec(select(BenchmarkVersion).where(BenchmarkVersion.benchmark_id == benchmark_id)
                     .order_by(col(BenchmarkVersion.version).desc())).first()
        return None if row is None else BenchmarkVersion.model_validate(row.model_dump())


def version_number(engine: Engine, benchmark_id: int) -> int:
    """The live version's number (0 when none is recorded)."""
    row = current(engine, benchmark_id)
    return row.version if row is not None else 0
