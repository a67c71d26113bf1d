"""Named schema migrations, recorded in ``schema_migration`` so an older store upgrades in place.

Each migration is idempotent: ``0001_initial`` creates whatever tables are missing (a new store gets
today's schema at once), later ones add what an older store lacks and skip what is already there.
Append new migrations at the end; never rename or reorder the ones that exist.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from playlisteval.store import tables  # noqa: F401  (registers every table on SQLModel.metadata)

Migration = Callable[[Connection], None]


def _initial(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, checkfirst=True)


def add_column(table: str, column: str, ddl_type: str, default: str) -> Migration:
    def migrate(conn: Connection) -> None:
        existing = {c["name"] for c in inspect(conn).get_columns(table)}
        if column not in existing:
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl_type} NOT NULL DEFAULT {default}"))

    return migrate


def create_tables(*names: str) -> Migration:
    """A migration that creates tables added after 0001 (a new store already has them: skipped)."""

    def migrate(conn: Connection) -> None:
        for name in names:
            SQLModel.metadata.tables[name].create(conn, checkfirst=True)

    return migrate


MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_initial", _initial),
    # an item that keeps killing its worker is failed as poison (DESIGN, delivery facts)
    ("0002_item_claims", add_column("item", "claims", "INTEGER", "0")),
    ("0003_chunk_ocr_text", add_column("chunk", "ocr_text", "TEXT", "''")),
    # Append here. Number ranges per area keep parallel work apart: 0010–0019 models, 0020–0029
    # index, 0030–0039 builder, 0040–0059 evaluation. Use add_column / create_tables.
]


def applied(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        if not inspect(conn).has_table("schema_migration"):
            return []
        return [row[0] for row in conn.execute(text("SELECT name FROM schema_migration ORDER BY name"))]


def migrate(engine: Engine) -> list[str]:
    """Apply every migration not yet recorded; return the names applied now."""
    done = set(applied(engine))
    ran: list[str] = []
    for name, step in MIGRATIONS:
        if name in done:
            continue
        with engine.begin() as conn:
            if name != "0001_initial" and not inspect(conn).has_table("schema_migration"):
                SQLModel.metadata.tables["schema_migration"].create(conn)
            step(conn)
            if not conn.execute(text("SELECT 1 FROM schema_migration WHERE name = :n"), {"n": name}).first():
                conn.execute(
                    text("INSERT INTO schema_migration (name, applied_at) VALUES (:n, :t)"),
                    {"n": name, "t": tables.now()},
                )
        ran.append(name)
    return ran
