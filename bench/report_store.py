"""The synthetic store of ``python -m bench report`` (the shape of tests/analytics_fixtures.py, scaled
up): ``build_store`` makes it, ``append_run`` adds what one more `eval judge` adds, and
``copy_to_postgres`` puts the same rows in a PostgreSQL database for the loader comparison."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from playlisteval.config import load_settings, write_project
from playlisteval.eval.options import JudgeOptions
from playlisteval.eval.runkey import options_hash
from playlisteval.store import open_store

DOMAINS = ("Education", "Drama", "Sports", "Cooking")
RATING_PAIRS = [(b, w) for b in range(5, 1, -1) for w in range(b - 1, 0, -1)]  # the 10 pairs of an item


def _insert(con: sqlite3.Connection, table: str, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """Bulk insert; NOT NULL columns not given get a neutral value (the models' defaults are Python-side)."""
    info = con.execute(f"SELECT name, type, \"notnull\" FROM pragma_table_info('{table}')").fetchall()
    extra = [(name, "{}" if kind == "JSON" else "" if kind.startswith("VARCHAR") else 0)
             for name, kind, notnull in info if notnull and name not in columns and name != "id"]
    names = list(columns) + [name for name, _ in extra]
    tail = tuple(value for _, value in extra)
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    con.executemany(sql, (tuple(row) + tail for row in rows))


def build_store(root: Path, items: int, runs: int, calls: int, seed: int) -> Path:
    """A fresh project under ``root`` whose store holds the synthetic rows; returns the project dir."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    write_project(root)
    settings = load_settings(root)
    open_store(settings)  # creates and migrates the schema
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(settings.store_url.removeprefix("sqlite:///"))
    con.execute("PRAGMA synchronous = OFF")
    nd = len(DOMAINS)
    _insert(con, "domain", ["id", "name"], enumerate(DOMAINS, 1))
    _insert(con, "playlist", ["id", "domain_id", "name"], ((d, d, f"P{d}") for d in range(1, nd + 1)))
    _insert(con, "video", ["id", "playlist_id", "path", "title", "status"],
            ((d, d, f"/v/{d}.mp4", f"v{d}", "indexed") for d in range(1, nd + 1)))
    domain_of = [1 + i % nd for i in range(items)]
    _insert(con, "segment", ["id", "video_id", "idx", "embedder", "start", "end", "first_chunk", "last_chunk",
                             "vector"],
            ((i + 1, domain_of[i // 2], i, "minilm", 0.0, 600.0, 0, 19, b"\0" * 16) for i in range(2 * items)))
    _insert(con, "seed", ["id", "domain_id", "segment1_id", "segment2_id", "similarity"],
            ((i + 1, domain_of[i], 2 * i + 1, 2 * i + 2, 0.5) for i in range(items)))
    _insert(con, "item", ["id", "seed_id", "state", "current_qa_id", "current_set_id"],
            ((i + 1, i + 1, "selected", i + 1, i + 1) for i in range(items)))
    _insert(con, "qa", ["id", "item_id", "attempt", "question", "answer"],
            ((i + 1, i + 1, 1, f"question {i} about the clips?", "gold") for i in range(items)))
    _insert(con, "distractor_set", ["id", "item_id", "qa_id", "attempt"], ((i + 1, i + 1, i + 1, 1)
                                                                           for i in range(items)))
    words = rng.integers(5, 60, size=(items, 5))
    _insert(con, "answer", ["set_id", "rating", "text"],
            ((i + 1, r, " ".join(["word"] * int(words[i, r - 1])) + (" (clip1 @ 0:30 - 1:10)." if r == 5 else ""))
             for i in range(items) for r in range(1, 6)))
    n_pairs = items * len(RATING_PAIRS)
    _insert(con, "pair", ["id", "item_id", "set_id", "better_rating", "worse_rating", "gap", "kept"],
            ((p + 1, p // 10 + 1, p // 10 + 1, *RATING_PAIRS[p % 10], RATING_PAIRS[p % 10][0] - RATING_PAIRS[p % 10][1],
              1) for p in range(n_pairs)))
    _insert(con, "benchmark", ["id", "name", "seed", "created_at"], [(1, "bench-big", seed, 0.0)])
    a_better = rng.random(n_pairs) < 0.5
    _insert(con, "benchmark_pair", ["benchmark_id", "pair_id", "a_is_better"],
            ((1, p + 1, int(a_better[p])) for p in range(n_pairs)))
    _insert(con, "benchmark_question", ["benchmark_id", "item_id", "domain_id", "kept_pairs", "drawn_pairs"],
            ((1, i + 1, domain_of[i], 10, 10) for i in range(items)))

    # runs: judge j gets retrieved, uniform, swapped-retrieved and 10h-retrieved runs (4 per judge)
    kinds = [("retrieved", "domain", 0), ("uniform", "domain", 0), ("retrieved", "domain", 1), ("retrieved", "10h", 0)]
    plan = [(r + 1, f"judge-{r // 4:02d}", *kinds[r % 4]) for r in range(runs)]
    # each run records its options as `eval judge` does, so the defaults' runs are the judges' main runs
    def recorded(ev: str, scope: str, sw: int) -> dict[str, object]:
        return JudgeOptions.from_settings(settings, evidence=ev, scope=scope, swap=bool(sw)).as_settings()

    _insert(con, "judge_run", ["id", "benchmark_id", "judge", "evidence", "scope", "swapped", "created_at",
                               "settings", "options_hash"],
            ((rid, 1, judge, ev, scope, sw, 0.0, json.dumps(recorded(ev, scope, sw)),
              options_hash(recorded(ev, scope, sw))) for rid, judge, ev, scope, sw in plan))
    for rid, judge, ev, _scope, sw in plan:
        skill = 0.55 + 0.01 * int(judge[-2:]) + (0.05 if ev == "retrieved" else 0.0)
        right = rng.random(n_pairs) < skill
        missing = rng.random(n_pairs) < 0.02
        a_side = a_better != bool(sw)  # swapping the sides moves the better answer
        says_a = np.where(right, a_side, ~a_side)
        verdicts = np.where(says_a, "A", "B").astype(object)
        verdicts[missing] = None
        scores = np.where(missing, 0.5, right.astype(float))
        _insert(con, "judgment", ["run_id", "pair_id", "a_is_better", "verdict", "score", "raw"],
                ((rid, p + 1, int(a_side[p]), verdicts[p], float(scores[p]),
                  f"Both answers cite the clips; the reply ends with [[{verdicts[p]}]]") for p in range(n_pairs)))

    models = [("gemini", "flash", "B"), ("qwen", "plus", "C3"), ("vllm", "weak", "F_first"), ("openai", "gpt", "G"),
              ("gemini", "pro", "G")]
    which = rng.integers(0, len(models), calls)
    usd = np.round(rng.random(calls) * 0.01, 6)
    tokens = rng.integers(100, 5000, size=(calls, 2))
    item_of = rng.integers(1, items + 1, calls)
    run_of = rng.integers(1, runs + 1, calls)
    _insert(con, "model_call", ["request_hash", "role", "provider", "model", "item_id", "run_id", "purpose",
                                "status", "cache_hit", "input_tokens", "output_tokens", "usd", "created_at"],
            ((f"h{c}", models[w][2], models[w][0], models[w][1],
              None if models[w][2] == "G" else int(item_of[c]), int(run_of[c]) if models[w][2] == "G" else None,
              "eval" if models[w][2] == "G" else "build", "ok", 0, int(tokens[c, 0]), int(tokens[c, 1]),
              float(usd[c]), 0.0) for c, w in enumerate(which.tolist())))
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # so the file size below is the store's size
    con.close()
    return root


def append_run(db: Path, items: int, seed: int) -> int:
    """One more judge run over every pair, and as many ledger rows (what a new `eval judge` adds)."""
    rng = np.random.default_rng(seed + 1)
    con = sqlite3.connect(db)
    run_id = con.execute("SELECT max(id) + 1 FROM judge_run").fetchone()[0]
    cols = [r[1] for r in con.execute("PRAGMA table_info(judge_run)")]
    given = {"id": "?", "judge": "'judge-new'", "created_at": "1.0"}  # a copy of run 1 by a new judge
    con.execute(f"INSERT INTO judge_run ({', '.join(cols)}) SELECT {', '.join(given.get(c, c) for c in cols)} "
                "FROM judge_run WHERE id = 1", [run_id])
    n_pairs = items * len(RATING_PAIRS)
    a_better = [r[0] for r in con.execute("SELECT a_is_better FROM benchmark_pair ORDER BY pair_id")]
    verdicts = np.where(rng.random(n_pairs) < 0.5, "A", "B")
    _insert(con, "judgment", ["run_id", "pair_id", "a_is_better", "verdict", "score", "raw"],
            ((run_id, p + 1, a_better[p], str(verdicts[p]), 1.0, "new") for p in range(n_pairs)))
    _insert(con, "model_call", ["request_hash", "role", "provider", "model", "run_id", "purpose", "status",
                                "cache_hit", "input_tokens", "output_tokens", "usd", "created_at"],
            ((f"new{c}", "G", "openai", "gpt", run_id, "eval", "ok", 0, 100, 10, 0.001, 1.0) for c in range(n_pairs)))
    con.commit()
    con.close()
    return n_pairs


def copy_to_postgres(root: Path, url: str) -> Path:
    """The same store on PostgreSQL (schema by the migrations, rows copied by DuckDB): a project beside."""
    import duckdb

    from playlisteval.analytics import scan
    from playlisteval.store import make_engine

    pg_root = root.parent / "store-pg"
    if pg_root.exists():
        shutil.rmtree(pg_root)
    pg_root.mkdir()
    write_project(pg_root)
    config = pg_root / "playlisteval.toml"
    config.write_text(config.read_text().replace('url = "sqlite:///playlisteval.db"', f"url = {json.dumps(url)}", 1))
    settings = load_settings(pg_root)
    assert settings.store_url == url, "the [store] url did not take"
    open_store(settings)
    con = duckdb.connect()
    scan.attach(con, make_engine(load_settings(root).store_url))
    con.execute("LOAD postgres")
    con.execute(f"ATTACH {scan.literal(scan._libpq(make_engine(url)))} AS pg (TYPE postgres)")
    con.execute("CALL postgres_execute('pg', 'SET session_replication_role = replica')")  # rows in any order
    for (name,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = 'store' "
                               "AND table_name <> 'schema_migration'").fetchall():
        cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE table_catalog = "
                                          "'pg' AND table_name = ?", [name]).fetchall()]
        if cols and con.execute(f"SELECT count(*) FROM store.{scan.quote(name)}").fetchone()[0]:  # type: ignore
            quoted = ", ".join(scan.quote(c) for c in cols)
            con.execute(f"INSERT INTO pg.{scan.quote(name)} ({quoted}) SELECT {quoted} FROM store.{scan.quote(name)}")
    con.close()
    return pg_root
