"""DuckDB's scanner extensions: the signature checked once per file, never skipped for another file
(playlisteval/analytics/extensions.py, issue 26)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from playlisteval.analytics import extensions


def _checks(monkeypatch: pytest.MonkeyPatch, cache: Path) -> list[str]:
    """The extensions DuckDB's signature check ran for, with the user's cache at ``cache`` (empty)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    seen: list[str] = []
    real = extensions._verify

    def counted(folder: str, name: str) -> None:
        seen.append(name)
        real(folder, name)

    monkeypatch.setattr(extensions, "_verify", counted)
    return seen


def test_a_verified_file_loads_unchecked_next_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = _checks(monkeypatch, tmp_path / "cache")
    for _ in range(2):
        con = duckdb.connect(str(tmp_path / "a.duckdb"), config=extensions.FILE_CONFIG)
        extensions.load(con, "sqlite")
        assert con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner' "
                           "AND loaded").fetchone() == (1,)
        con.close()
    assert checks == ["sqlite"]  # the second connection trusted the stamp the first one kept
    memory = duckdb.connect(":memory:")  # no analytics file: DuckDB checks on every load, nothing kept
    extensions.load(memory, "sqlite")
    assert checks == ["sqlite"]


def test_a_changed_file_is_checked_and_a_forged_one_not_loaded(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "extensions"
    shutil.copytree(extensions.directory(), folder)
    monkeypatch.setattr(extensions, "directory", lambda: str(folder))
    checks = _checks(monkeypatch, tmp_path / "cache")
    con = duckdb.connect(str(tmp_path / "a.duckdb"), config=extensions.FILE_CONFIG)
    extensions.load(con, "sqlite")
    con.close()
    (file,) = folder.glob("*/*/sqlite_scanner.duckdb_extension")
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte of the code changed: its stamp (and signature) no longer match
    forged = file.with_name("forged")
    forged.write_bytes(bytes(data))
    forged.replace(file)  # a new file: the one loaded above stays mapped in this process as it was
    con = duckdb.connect(str(tmp_path / "a.duckdb"), config=extensions.FILE_CONFIG)
    with pytest.raises(extensions.ExtensionUnavailable):
        extensions.load(con, "sqlite")
    assert checks == ["sqlite", "sqlite"]
    assert con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner' "
                       "AND loaded").fetchone() == (0,)


def test_another_projects_file_trusts_the_users_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamp a check kept in the user's cache spares a second analytics file (another project, or this one
    deleted) the check; an unreadable cache only means checking again."""
    checks = _checks(monkeypatch, tmp_path / "cache")
    for project in ("a", "b"):
        con = duckdb.connect(str(tmp_path / f"{project}.duckdb"), config=extensions.FILE_CONFIG)
        extensions.load(con, "sqlite")
        con.close()
    assert checks == ["sqlite"]
    cached = tmp_path / "cache" / "playlisteval" / extensions.CACHE_FILE
    assert len(json.loads(cached.read_text())) == 1
    cached.write_text("not json")
    con = duckdb.connect(str(tmp_path / "c.duckdb"), config=extensions.FILE_CONFIG)
    extensions.load(con, "sqlite")
    con.close()
    assert checks == ["sqlite", "sqlite"] and len(json.loads(cached.read_text())) == 1  # checked, kept again
