"""A report or leaderboard of an unchanged store imports none of the modules that compute (issue 26).

Their start-up was most of `report` with nothing changed (0.9 of 2.3 s CPU: every section's module,
failure attribution, the power figures) and of the kept leaderboard (the select package and with it the
actors). Each command runs in a fresh interpreter, as a user starts it; the second run must print the
kept page / board without loading them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from bench.report_store import build_store

COMPUTING = ("playlisteval.analytics.check_sections", "playlisteval.analytics.attribution",
             "playlisteval.analytics.power", "playlisteval.analytics.rate_sections", "playlisteval.select",
             "playlisteval.actors",
             # nor the libraries only computing needs: Arrow, NumPy (~0.2 s, analytics/columns.py), and
             # structlog while no line reaches the level set (logs/lazy.py)
             "pyarrow", "numpy", "structlog")

PROBE = """
import json, sys
from playlisteval.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print("MODULES " + json.dumps(sorted(m for m in {watch} if m in sys.modules)), file=sys.stderr)
"""


def _loaded(root: Path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(watch=COMPUTING), "--project", str(root), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    loaded: list[str] = json.loads(line.removeprefix("MODULES "))
    return loaded


def test_kept_report_and_leaderboard_load_nothing_that_computes(tmp_path: Path) -> None:
    root = build_store(tmp_path / "p", 12, 1, 30, seed=1)
    out = str(tmp_path / "r.html")
    assert "playlisteval.analytics.check_sections" in _loaded(root, "report", "-q", out)  # computed: loaded
    assert _loaded(root, "report", "-q", out) == []
    assert _loaded(root, "report", out) == []  # the board printed from the kept page, too
    assert "playlisteval.select" in _loaded(root, "leaderboard")  # version 1 recorded, the board computed
    assert _loaded(root, "leaderboard") == []
    assert Path(out).read_text(encoding="utf-8").count("judge-00") > 0



ORM = ("sqlalchemy.orm", "sqlmodel", "playlisteval.store.tables")
#: also never loaded by these commands: structlog, while no line reaches the level set (logs/lazy.py)
START_UP = (*ORM, "structlog")


def test_status_reads_without_the_orm(tmp_path: Path) -> None:
    """`status` (and its --json: spend, projection, provenance) reads through SQLAlchemy Core: the ORM and the
    table classes were a third of its start-up (issue 26). A store that is up to date opens without them, and
    the provenance still names the benchmark's version and content hash. `funnel` and `show` read the same
    way, and none of them loads structlog (0.15 s) when it writes no log line."""
    root = build_store(tmp_path / "p", 12, 1, 30, seed=1)
    assert "playlisteval.select" in _loaded(root, "leaderboard")  # records version 1 (with the ORM)
    env = {**os.environ, "PLAYLISTEVAL_SELECT__BENCHMARK": "bench-big"}
    probe = PROBE.replace("{watch}", repr(START_UP))
    for args in (["funnel"], ["show", "1"], ["status"], ["status", "--json"]):
        done = subprocess.run([sys.executable, "-c", probe, "--project", str(root), *args],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
        assert json.loads(line.removeprefix("MODULES ")) == [], args
    shown = json.loads(done.stdout)  # the --json run's
    with sqlite3.connect(root / "playlisteval.db") as db:
        (content_hash,) = db.execute("SELECT content_hash FROM benchmark_version WHERE version = 1").fetchone()
    assert shown["states"] == {"selected": 12} and shown["calls"] == 30
    assert (shown["provenance"]["benchmark"], shown["provenance"]["benchmark_version"],
            shown["provenance"]["content_hash"]) == ("bench-big", 1, content_hash)


def test_an_older_store_upgrades_in_a_fresh_process(tmp_path: Path) -> None:
    """The table classes load only when a migration runs (issue 26): a step that reads their schema
    (0540's spend_total) must find them loaded in a process that imported nothing else first."""
    root = build_store(tmp_path / "p", 3, 1, 10, seed=1)
    with sqlite3.connect(root / "playlisteval.db") as db:  # as a store made before migration 0540
        db.executescript("DELETE FROM schema_migration WHERE name = '0540_spend_total'; "
                         "DROP TRIGGER spend_total_insert; DROP TRIGGER spend_total_update; "
                         "DROP TRIGGER spend_total_delete; DROP TABLE spend_total;")
    done = subprocess.run([sys.executable, "-m", "playlisteval.cli", "--project", str(root), "status", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["paid_usd"] > 0  # the totals backfilled from the ledger
    with sqlite3.connect(root / "playlisteval.db") as db:
        assert db.execute("SELECT 1 FROM schema_migration WHERE name = '0540_spend_total'").fetchone()
