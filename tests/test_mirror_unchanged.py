"""The analytics file's sync reads nothing when the SQLite store has not changed since the last one (issue 26).

At 100k items the tables that are not append-only (22 of them: items, pairs, answers …) were copied
again by every report and leaderboard, 0.9 s of a run with nothing to do. They are now kept in the file
with the store's file stamps; the next sync that finds the same stamps and tables copies nothing, and
any commit (in the -wal, or checkpointed into the file) makes it copy again. Checked here against
what the store holds, changed in place behind the analytics file's back.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.report_store import build_store
from playlisteval.analytics import Analytics
from playlisteval.config import load_settings
from playlisteval.store import open_store


def _state(root: Path) -> tuple[dict[str, str], str]:
    settings = load_settings(root)
    with Analytics(open_store(settings), settings) as an:
        assert an.sync is not None and an.file is not None
        row = an.con.execute("SELECT state FROM item WHERE id = 1").fetchone()
        assert row is not None
        return dict(an.sync.actions), str(row[0])


def _commit(root: Path, sql: str, *, checkpoint: bool = False) -> None:
    con = sqlite3.connect(root / "playlisteval.db")
    con.execute(sql)
    con.commit()
    if checkpoint:  # the change moved into the file and the -wal emptied
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def test_nothing_read_when_the_store_is_unchanged_and_everything_after_a_commit(tmp_path: Path) -> None:
    root = build_store(tmp_path / "p", 20, 1, 40, seed=2)
    first, state = _state(root)
    assert first["item"] == "whole" and first["judgment"] == "loaded" and state == "selected"
    again, state = _state(root)
    assert set(again.values()) == {"unchanged"} and set(again) == set(first) and state == "selected"

    _commit(root, "UPDATE item SET state = 'rejected' WHERE id = 1")  # in place: count and ids as they were
    changed, state = _state(root)
    assert changed["item"] == "whole" and state == "rejected"
    assert set(_state(root)[0].values()) == {"unchanged"}

    _commit(root, "UPDATE item SET state = 'selected' WHERE id = 1", checkpoint=True)
    changed, state = _state(root)
    assert changed["item"] == "whole" and state == "selected"
