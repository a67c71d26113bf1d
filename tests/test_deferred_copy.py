"""The ledger's first copy into the analytics file made beside the report's sections (deferred_copy.py):
the same page as a copy made in one go, the file left consistent, and one state of the store on the page
when another process commits meanwhile or the copy fails."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench.report_speed import page_digest
from bench.report_store import build_store
from playlisteval.analytics import Analytics, deferred_copy, mirror
from playlisteval.analytics.report import write_page
from playlisteval.config import load_settings
from playlisteval.store import open_store

ITEMS = 24


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("deferred") / "p", ITEMS, 8, 3000, seed=4)


@pytest.fixture
def project(made: Path, tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(made, root)
    return root


def report(root: Path, out: Path, *, defer: bool) -> tuple[str, dict[str, str]]:
    settings = load_settings(root)
    with Analytics(open_store(settings), settings, defer_ledger=defer) as an:
        write_page(an, settings, out)
        actions = dict(an.sync.actions) if an.sync else {}
    return page_digest(out), actions


def fresh_page(root: Path, out: Path) -> str:
    """The page of a copy made in one go from the store as it is now."""
    (root / "analytics.duckdb").unlink(missing_ok=True)
    return report(root, out, defer=False)[0]


def test_a_deferred_ledger_gives_the_page_of_one_copy_and_a_file_that_is_kept(project: Path, tmp_path: Path) -> None:
    want = fresh_page(project, tmp_path / "one.html")
    (project / "analytics.duckdb").unlink()
    got, actions = report(project, tmp_path / "deferred.html", defer=True)
    assert got == want
    assert actions["model_call"] == "loaded"
    # the file remembers the state it copied: the next report copies nothing and reuses the sections
    again, actions = report(project, tmp_path / "again.html", defer=True)
    assert again == want and set(actions.values()) == {"unchanged"}
    con = duckdb.connect(str(project / "analytics.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM _report_cache").fetchone() == (1,)
    con.close()


def test_a_commit_during_the_deferred_copy_recopies_and_the_page_is_one_state(project: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    real = deferred_copy.finish
    db = project / "playlisteval.db"

    def commit_first(m: mirror.Mirror, pending: mirror.Pending) -> bool:
        # another process renames a domain (a table the first copy read) and adds a judge's call to the ledger
        # (the one being copied): a page from both copies would mix two states of the store
        subprocess.run([sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                        "c.execute(\"INSERT INTO model_call (request_hash, role, provider, model, run_id, purpose, "
                        "status, cache_hit, input_tokens, output_tokens, usd, created_at, thinking_tokens, "
                        "gpu_seconds, latency_s, estimated_usd, cached_input_tokens, worker, error, batch_id) "
                        "VALUES ('late', 'G', 'openai', 'gpt', 1, 'eval', 'ok', 0, 10, 1, 5.0, 2, 0, 0, 0, 0, 0, "
                        "'', '', '')\"); "
                        "c.execute(\"UPDATE domain SET name = 'Teaching' WHERE name = 'Education'\"); "
                        "c.commit()", str(db)], check=True, timeout=60)
        return real(m, pending)

    monkeypatch.setattr(deferred_copy, "finish", commit_first)
    got, _ = report(project, tmp_path / "raced.html", defer=True)
    monkeypatch.undo()
    assert sqlite3.connect(db).execute("SELECT count(*) FROM model_call WHERE request_hash = 'late'").fetchone() == (1,)
    after = tmp_path / "after.html"
    assert got == fresh_page(project, after)  # the new name and the late call's $5, from one copy
    assert "Teaching" in after.read_text(encoding="utf-8")


def test_a_failed_deferred_copy_is_made_again_in_one_go(project: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    want = fresh_page(project, tmp_path / "one.html")
    (project / "analytics.duckdb").unlink()

    def fails(m: mirror.Mirror, pending: mirror.Pending) -> bool:
        raise duckdb.IOException("disk full (injected)")

    monkeypatch.setattr(deferred_copy, "finish", fails)
    got, actions = report(project, tmp_path / "failed.html", defer=True)
    assert got == want and actions["model_call"] == "loaded"


def test_nothing_opens_the_store_before_a_slow_deferred_copy_lets_it_go(project: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Attribution, the funnel and the banner read the store: they wait for the copy that holds it (else
    store/engine.py's foreign_sqlite refuses them with SqliteFileBusy)."""
    want = fresh_page(project, tmp_path / "one.html")
    (project / "analytics.duckdb").unlink()
    real = deferred_copy.finish
    seen: dict[str, Any] = {}

    def slow(m: mirror.Mirror, pending: mirror.Pending) -> bool:
        time.sleep(1.5)  # longer than every section but the cost ones takes on this store
        seen["done"] = time.monotonic()
        return real(m, pending)

    monkeypatch.setattr(deferred_copy, "finish", slow)
    got, _ = report(project, tmp_path / "slow.html", defer=True)
    assert got == want and "done" in seen


def test_the_queries_that_wait_are_those_that_read_the_ledger() -> None:
    from playlisteval.analytics.view_files import reading, views

    waits = reading(views(), "call_groups")
    assert {"call_groups", "cost_by_domain", "cost_by_model", "cost_by_role", "eval_cost_by_judge"} == {
        view.name for view in views() if waits.fullmatch(view.name)} | {"call_groups"}
    assert waits.search("SELECT * FROM cost_by_model ORDER BY spend") and not waits.search("SELECT * FROM leaderboard")
    assert not waits.search("SELECT * FROM cost_by_models")  # a whole name, not a prefix
