"""Issue 22: `select` again on an existing benchmark when items were accepted after its draw never changes
it silently — it names the change per domain, leaves the benchmark as it is and exits 3; `--redraw`
freezes the live version (its leaderboard and export stay readable, unchanged) and makes the next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from playlisteval.actors.build_run import build
from playlisteval.store import items as item_store
from playlisteval.store import open_store, transaction
from playlisteval.store.states import Event, Limits, State
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import env_for, project
from tests.judged_project import OVERRIDES, cli, copy_of, json_lines
from tests.test_benchmark_versions import board, read

LATE = 3  # the item accepted after the first draw


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three built questions, one of them still one step short of accepted when the benchmark is drawn and
    judged; the first version's leaderboard and export kept beside the store."""
    root = tmp_path_factory.mktemp("reselect")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    with transaction(open_store(settings)) as s:  # as if its last check had not committed yet
        s.execute(text("UPDATE item SET state = 'degraded' WHERE id = :i"), {"i": LATE})
    cli(settings, "select")
    cli(settings, "eval", "judge", "--judge", "sim/judge", "--evidence", "retrieved", code=None)
    cli(settings, "eval", "judge", "--judge", "sim/judge", "--evidence", "uniform", code=None)
    (root / "board-v1.json").write_text(json.dumps(board(settings)))
    cli(settings, "export", str(root / "export-v1"))
    return root


def _accept_late(settings: Any) -> None:
    """The late item's last check commits now (the builder's own step: claim, then PASSED)."""
    engine = open_store(settings)
    claim = item_store.claim(engine, LATE, State.DEGRADED, "test", 60)
    assert claim is not None
    assert item_store.commit(engine, claim, Event.PASSED, Limits()) is not None


def _here(doc: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard document without its store's name (each test reads a copy of the store elsewhere)."""
    return {**doc, "provenance": {k: v for k, v in doc["provenance"].items() if k != "store"}}


def _versions(settings: Any) -> list[tuple[int, bool, str]]:
    listed = json.loads(cli(settings, "versions", "--json").output)["versions"]
    return [(v["version"], v["frozen"], v["content_hash"]) for v in listed]


def test_a_reselect_with_nothing_new_changes_nothing(drawn: Path, tmp_path: Path) -> None:
    settings = copy_of(drawn, tmp_path)
    result = cli(settings, "select", "--json")  # exit 0
    doc = json_lines(result)[0]
    assert doc["accepted_since_draw"] == {} and doc["version"] == 1 and not doc["redrawn"]
    assert [v for v, _, _ in _versions(settings)] == [1]


def test_new_accepted_items_are_named_and_the_benchmark_is_not_changed(drawn: Path, tmp_path: Path) -> None:
    settings = copy_of(drawn, tmp_path)
    before = _versions(settings)
    _accept_late(settings)
    result = cli(settings, "select", code=3)
    said = " ".join(result.output.split())
    assert "version 1 was drawn before 1 item(s) were accepted (Education: 1)" in said
    assert "select --redraw" in said and "leaderboard --version 1" in said
    doc = json_lines(cli(settings, "select", "--json", code=3))[0]
    assert doc["accepted_since_draw"] == {"Education": 1} and doc["version"] == 1 and not doc["created"]
    assert _versions(settings) == before  # nothing frozen, nothing made
    assert _here(board(settings)) == _here(json.loads((drawn / "board-v1.json").read_text()))
    with transaction(open_store(settings)) as s:
        assert s.execute(text("SELECT state FROM item WHERE id = :i"), {"i": LATE}).scalar() == "accepted"


def test_redraw_makes_the_next_version_and_the_first_stays_readable(drawn: Path, tmp_path: Path) -> None:
    settings = copy_of(drawn, tmp_path)
    first = json.loads((drawn / "board-v1.json").read_text())
    _accept_late(settings)
    just_before = tmp_path / "v1-before-redraw"  # stats.json counts the collection, as it stood then
    cli(settings, "export", str(just_before))
    result = cli(settings, "select", "--redraw")
    said = " ".join(result.output.split())
    assert "drawn again: version 2 (version 1 stays readable" in said, said
    (v1, frozen1, hash1), (v2, frozen2, hash2) = _versions(settings)
    assert (v1, frozen1, v2, frozen2) == (1, True, 2, False) and hash1 != hash2
    assert hash1 == first["provenance"]["content_hash"]
    assert _here(board(settings, "--version", "1")) == _here(first)  # as it was printed while live
    assert board(settings)["provenance"]["benchmark_version"] == 2
    again = tmp_path / "v1-again"
    cli(settings, "export", str(again), "--version", "1")
    for name in ("data/test.parquet", "data/test.jsonl"):  # the benchmark itself: as first exported
        assert (again / name).read_bytes() == (drawn / "export-v1" / name).read_bytes(), name
    for name in ("data/test.parquet", "data/test.jsonl", "stats.json", "README.md"):  # as it was superseded
        assert (again / name).read_bytes() == (just_before / name).read_bytes(), name
    live = tmp_path / "v2"
    cli(settings, "export", str(live))
    rows = [json.loads(line) for line in (live / "data/test.jsonl").read_text().splitlines()]
    assert len({r["question"] for r in rows}) == 3  # the late question is drawn into version 2
    with transaction(open_store(settings)) as s:
        assert s.execute(text("SELECT state FROM item WHERE id = :i"), {"i": LATE}).scalar() == "selected"
    # the redraw saw every accepted item: a plain re-select is quiet again, and a second redraw of the
    # same pool draws the same pairs (no version 3)
    assert json_lines(cli(settings, "select", "--json"))[0]["accepted_since_draw"] == {}
    doc = json_lines(cli(settings, "select", "--redraw", "--json"))[0]
    assert doc["redrawn"] and not doc["new_version"] and doc["version"] == 2
    assert [v for v, _, _ in _versions(settings)] == [1, 2]


def test_help_says_what_redraw_does(tmp_path: Path) -> None:
    result = read(project(tmp_path, **OVERRIDES), "select", "--help", env=env_for(**OVERRIDES))
    said = " ".join(result.output.split())
    assert "--redraw" in said and "exits 3" in said and "next version" in said
