"""Named schema migrations, recorded in ``schema_migration`` so an older store upgrades in place.

Each migration is idempotent: ``0001_initial`` creates whatever tables are missing (a new store gets
today's schema at once), later ones add what an older store lacks and skip what is already there.
Append new migrations at the end; never rename or reorder the ones that exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from playlisteval.store import benchmark_gate
from playlisteval.store.call_groups import install as install_call_groups
from playlisteval.store.counts import install as install_store_counts
from playlisteval.store.eval_migrations import move_error_judgments, stamp_options_hash
from playlisteval.store.media_paths import relative_inside_project
from playlisteval.store.spend_totals import install as install_spend_totals

Migration = Callable[[Connection], None]


def _metadata() -> Any:
    """Every table's schema (SQLModel's metadata, filled by importing the table classes). Loaded only when a
    migration runs: a store that is up to date is opened without the ORM's 44 classes (issue 26, `status`)."""
    from sqlmodel import SQLModel

    from playlisteval.store import tables  # noqa: F401  (registers every table on SQLModel.metadata)

    return SQLModel.metadata


def _initial(conn: Connection) -> None:
    _metadata().create_all(conn, checkfirst=True)


def add_column(table: str, column: str, ddl_type: str, default: str) -> Migration:
    def migrate(conn: Connection) -> None:
        existing = {c["name"] for c in inspect(conn).get_columns(table)}
        if column not in existing:
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl_type} NOT NULL DEFAULT {default}"))

    return migrate


def add_columns(table: str, columns: list[tuple[str, str, str]]) -> Migration:
    """Several ``add_column`` steps as one migration: (column, DDL type, default) each."""
    steps = [add_column(table, column, ddl_type, default) for column, ddl_type, default in columns]

    def migrate(conn: Connection) -> None:
        for step in steps:
            step(conn)

    return migrate


def add_json_column_from(table: str, column: str, source: str, key: str) -> Migration:
    """A nullable JSON column filled from ``source``'s column of the same name through ``table.key`` (an
    older store's rows get what they read until now); a store that has the column is left as it is."""

    def migrate(conn: Connection) -> None:
        if column in {c["name"] for c in inspect(conn).get_columns(table)}:
            return
        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} JSON"))
        conn.execute(text(f"UPDATE {table} SET {column} = (SELECT {source}.{column} FROM {source} "
                          f"WHERE {source}.id = {table}.{key})"))

    return migrate


def widen_real_to_double(table: str, column: str) -> Migration:
    """PostgreSQL's REAL is 4 bytes (a Unix time to ~2 minutes); SQLite's REAL is already 8: a no-op there."""

    def migrate(conn: Connection) -> None:
        if conn.dialect.name == "postgresql":
            conn.execute(text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE DOUBLE PRECISION"))

    return migrate


def create_tables(*names: str) -> Migration:
    """A migration that creates tables added after 0001 (a new store already has them: skipped)."""

    def migrate(conn: Connection) -> None:
        for name in names:
            _metadata().tables[name].create(conn, checkfirst=True)

    return migrate


def in_order(*steps: Migration) -> Migration:
    """Several steps as one migration (a table made, then filled)."""

    def migrate(conn: Connection) -> None:
        for step in steps:
            step(conn)

    return migrate


def create_index(name: str, table: str, columns: list[str], *, unique: bool = False) -> Migration:
    """A migration that adds an index an older store lacks (a new store's tables already have it)."""

    def migrate(conn: Connection) -> None:
        if name not in {ix["name"] for ix in inspect(conn).get_indexes(table)}:
            kind = "UNIQUE INDEX" if unique else "INDEX"
            conn.execute(text(f"CREATE {kind} {name} ON {table} ({', '.join(columns)})"))

    return migrate


MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_initial", _initial),
    # an item that keeps killing its worker is failed as poison (DESIGN, delivery facts)
    ("0002_item_claims", add_column("item", "claims", "INTEGER", "0")),
    ("0003_chunk_ocr_text", add_column("chunk", "ocr_text", "TEXT", "''")),
    ("0020_video_index_lease", add_column("video", "lease_owner", "TEXT", "''")),
    ("0021_video_index_lease_expires", add_column("video", "lease_expires", "REAL", "0")),
    ("0022_video_index_report", add_column("video", "index_report", "TEXT", "''")),
    # evaluation (issue 6): what each judgment was shown and how it ended; run details; per-segment ranks
    ("0040_judgment_evidence", add_column("judgment", "evidence", "JSON", "'{}'")),
    ("0041_judgment_outcome", add_column("judgment", "outcome", "VARCHAR", "'verdict'")),
    ("0042_judgment_call_id", add_column("judgment", "call_id", "INTEGER", "0")),
    ("0043_judge_run_details", add_columns("judge_run", [("modality", "VARCHAR", "'frames+transcript'"),
                                                          ("finished_at", "FLOAT", "0")])),
    ("0044_retrieval_run_details", add_columns("retrieval_run", [
        ("benchmark_id", "INTEGER", "0"), ("dims", "INTEGER", "0"), ("chunks", "INTEGER", "0"),
        ("index_bytes", "INTEGER", "0"), ("latency_ms", "FLOAT", "0"), ("finished_at", "FLOAT", "0")])),
    ("0045_ranking_segments", add_columns("ranking", [
        ("segment1_id", "INTEGER", "0"), ("segment2_id", "INTEGER", "0"), ("score1", "FLOAT", "0"),
        ("score2", "FLOAT", "0"), ("top_segments", "JSON", "'[]'")])),
    ("0046_benchmark_question", create_tables("benchmark_question")),
    # which ASR model produced a chunk's transcript (issue 11)
    ("0600_chunk_transcript_model", add_column("chunk", "transcript_model", "TEXT", "''")),
    # the human study (issue 12, SPEC H): studies, annotators, claims; tasks' evidence; final ratings
    ("0700_human_tables", create_tables("human_study", "human_annotator", "human_claim")),
    ("0701_human_task_evidence", add_columns("human_task", [
        ("study_id", "INTEGER", "0"), ("task_key", "VARCHAR", "''"), ("evidence_status", "VARCHAR", "'pending'"),
        ("evidence_reason", "VARCHAR", "''"), ("evidence_attempts", "INTEGER", "0"),
        ("evidence_call_id", "INTEGER", "0"), ("grounding", "JSON", "'{}'")])),
    ("0702_human_rating_source", add_columns("human_rating", [("source", "VARCHAR", "'app'"),
                                                              ("created_at", "FLOAT", "0")])),
    ("0703_human_rating_unique", create_index("uq_human_rating_task_annotator", "human_rating",
                                              ["task_id", "annotator"], unique=True)),
    # errors are never scores; runs are identified by their options (issue 9)
    ("0200_eval_error_tables", create_tables("judge_error", "retrieval_error")),
    ("0201_judgment_errors_moved", move_error_judgments),
    ("0202_judge_run_options_hash", add_column("judge_run", "options_hash", "VARCHAR", "''")),
    ("0203_judge_run_options_stamped", stamp_options_hash),
    # batch APIs (issue 15): batches and their requests; cached input and the batch of each ledger row
    ("0800_batch_tables", create_tables("model_batch", "model_batch_request")),
    ("0801_model_call_batch", add_columns("model_call", [("cached_input_tokens", "INTEGER", "0"),
                                                         ("batch_id", "INTEGER", "0")])),
    ("0802_batch_request_checked", add_column("model_batch_request", "checked", "BOOLEAN", "false")),
    ("0803_context_cache", create_tables("context_cache")),
    # leases renewed by a heartbeat while a step runs (issue 10)
    # (DOUBLE PRECISION, not REAL: REAL is float4 on PostgreSQL, a timestamp to the nearest ~2 minutes)
    ("0500_item_lease_renewed_at", add_column("item", "lease_renewed_at", "DOUBLE PRECISION", "0")),
    # select's difficulty gate and judge runs as actors: one job per question (issue 10)
    ("0520_work_job", create_tables("work_job")),
    # a video's index lease was REAL: float4 on PostgreSQL, so its expiry was off by up to ~2 minutes
    ("0023_video_lease_expires_double", widen_real_to_double("video", "lease_expires")),
    # what each request asked, for `show ITEM` (issue 14)
    ("0901_model_prompt", create_tables("model_prompt")),
    # the ledger's running money per purpose, kept by triggers, backfilled: an O(1) budget check (issue 13)
    ("0540_spend_total", install_spend_totals),
    # the outbox (issue 10): an item's next message, committed with its transition, sent after
    ("0530_item_outbox", create_tables("item_outbox")),
    # the last `eval correlate` input and the domains' descriptions (issue 20)
    ("2000_external_score", create_tables("external_score")),
    ("2001_domain_description", add_column("domain", "description", "VARCHAR", "''")),
    # a benchmark's main-run protocol and its versions; the version each judge run was made on (issue 22)
    ("2200_benchmark_protocol_version", create_tables("benchmark_protocol", "benchmark_version")),
    ("2201_judge_run_benchmark_version", add_column("judge_run", "benchmark_version", "INTEGER", "0")),
    # counts kept by triggers (items per state, ledger rows, gate verdicts, seeds), backfilled; the most
    # attempts read from an index: `status` and `funnel` flat in the store's size (issue 26)
    ("2600_store_count", install_store_counts),
    ("2601_item_phase1_attempts_index", create_index("ix_item_phase1_attempts", "item", ["phase1_attempts"])),
    ("2602_item_phase2_attempts_index", create_index("ix_item_phase2_attempts", "item", ["phase2_attempts"])),
    ("2603_store_count_role_model", install_store_counts),  # the models each role called (provenance)
    # the file's size and mtime as stamped at add/index: a video changed in place is noticed (issue 22)
    ("2250_video_file_stamp", add_columns("video", [("file_size", "BIGINT", "0"),
                                                     ("file_mtime", "DOUBLE PRECISION", "0")])),
    # retriever variants side by side and single-query latency percentiles (issue 20, deliverable 8)
    ("2060_retrieval_variant", create_tables("retrieval_variant")),
    ("2061_retrieval_run_latency_percentiles", add_columns("retrieval_run", [
        ("latency_p50_ms", "DOUBLE PRECISION", "0"), ("latency_p95_ms", "DOUBLE PRECISION", "0")])),
    # when a benchmark's questions were last drawn: a re-select names items accepted since (issue 22)
    ("2300_benchmark_drawn_at", add_column("benchmark", "drawn_at", "DOUBLE PRECISION", "0")),
    # relocatable projects (issue 41): named media roots; paths inside the project stored relative to it
    ("4130_media_root", create_tables("media_root")),
    ("4131_media_paths_relative", relative_inside_project),
    # sealed versions (issue 41): each benchmark's own weak-judge verdicts (backfilled from its pairs), and
    # what each version is made of, frozen when it is recorded
    ("2310_benchmark_pair_difficulty", add_json_column_from("benchmark_pair", "difficulty", "pair", "pair_id")),
    ("2311_benchmark_seal", create_tables("benchmark_seal")),
    # each benchmark's own gate record of every pair of its sampled questions, dropped ones too: its card's
    # accuracy by gap and weak judges (backfilled from its drawn pairs' verdicts, else the pairs')
    ("2312_benchmark_gate", in_order(create_tables("benchmark_gate"), benchmark_gate.backfill)),
    # the ledger's sums per kind of call, kept by triggers, backfilled: a cold report copies the groups, not
    # the million rows under them (issue 43)
    ("4300_call_groups", install_call_groups),
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
    if all(name in done for name, _ in MIGRATIONS):
        return []  # up to date: the table classes are not loaded
    metadata = _metadata()  # every step may read the tables' schema (spend_totals.install does)
    ran: list[str] = []
    for name, step in MIGRATIONS:
        if name in done:
            continue
        with engine.begin() as conn:
            if name != "0001_initial" and not inspect(conn).has_table("schema_migration"):
                metadata.tables["schema_migration"].create(conn)
            step(conn)
            if not conn.execute(text("SELECT 1 FROM schema_migration WHERE name = :n"), {"n": name}).first():
                conn.execute(
                    text("INSERT INTO schema_migration (name, applied_at) VALUES (:n, :t)"),
                    {"n": name, "t": time.time()},
                )
        ran.append(name)
    return ran
