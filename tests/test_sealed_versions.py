"""Issue 41, sealed versions: drawing another benchmark with another first weak judge gates the pairs a
published benchmark shares again, yet that benchmark's export stays byte for byte what its version
recorded; a superseded version's export carries its annotations; a version that cannot be reproduced is
refused with what differs named; a re-select whose weak judges changed says so, and asks nothing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text
from sqlmodel import col, func, select

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store, transaction
from playlisteval.store.migrations import migrate
from playlisteval.store.tables import BenchmarkGate, BenchmarkPair, BenchmarkQuestion, ModelCall, Pair
from playlisteval.view.card import pair_card
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import env_for, project, share_media
from tests.judged_project import OVERRIDES

FILES = ("data/test.jsonl", "data/test.parquet", "data/annotations.jsonl", "stats.json")
OTHER_JUDGE = "sim/judge"  # the first weak judge of the other draw (the default is sim/weak-judge)


def selected(root: Path, **extra: object) -> Settings:
    settings = project(root, **OVERRIDES, **extra)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(project(root, **OVERRIDES, **extra)).created
    return project(root, **OVERRIDES, **extra)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sealed-source")
    selected(root)
    return root


def copy_of(source: Path, root: Path) -> Settings:
    project(root, **OVERRIDES)
    with sqlite3.connect(source / "playlisteval.db") as a, sqlite3.connect(root / "playlisteval.db") as b:
        a.backup(b)
    share_media(source, root)  # the store names its videos relative to its project (issue 41)
    return project(root, **OVERRIDES)


def run(settings: Settings, *args: str, code: int | None = 0, **extra: object) -> Result:
    """A command with the project's overrides (and ``extra``, e.g. another weak judge) as its environment."""
    env = env_for(**OVERRIDES, **{"store__url": settings.store_url, **extra})
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)
    assert code is None or result.exit_code == code, result.output
    return result


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def versions(settings: Settings, name: str = "playlistbench") -> list[dict[str, Any]]:
    doc = json.loads(run(settings, "versions", "--benchmark", name, "--json").output)
    return list(doc["versions"])


def shared_models(settings: Settings) -> set[str]:
    """The first weak judge each pair of playlistbench records now (``pair.difficulty``: the last gate's)."""
    with transaction(open_store(settings)) as s:
        found = s.exec(select(Pair.difficulty).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id))
                       .where(BenchmarkPair.benchmark_id == 1)).all()
    return {str((d or {}).get("F_first", {}).get("model")) for d in found}


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def same_export(before: Path, after: Path, times: tuple[str, ...] = ("generated_at",)) -> None:
    """Two exports of one version: every file byte for byte, but provenance.json's ``times`` (when each was
    written; a superseded version's ``time`` is when it was frozen) — the README (the dataset card) included."""
    was, now = files_of(before), files_of(after)
    assert sorted(now) == sorted(was)
    for name in sorted(was):
        if name == "provenance.json":
            stamped = [{k: v for k, v in json.loads(doc).items() if k not in times} for doc in (was[name], now[name])]
            assert stamped[1] == stamped[0]
        else:
            assert now[name] == was[name], name


def gap_table(export: Path) -> str:
    """The card's "accuracy by rating gap" table of the difficulty gate's weak judges."""
    card = (export / "README.md").read_text()
    return card[card.index("the difficulty gate's weak judges"):card.index("judge runs on this benchmark")]


def select_calls(settings: Settings) -> int:
    with transaction(open_store(settings)) as s:
        return int(s.exec(select(func.count()).select_from(ModelCall).where(ModelCall.purpose == "select")).one())


def other_draw_keeps_the_export(settings: Settings, tmp_path: Path) -> None:
    """The Done-when scenario, through the CLI, on the store of ``settings``."""
    before = tmp_path / "before"
    run(settings, "export", str(before))
    recorded = versions(settings)[-1]["content_hash"]
    assert sha(before / "data/test.jsonl") == recorded == json.loads((before / "provenance.json").read_text())[
        "content_hash"]
    calls = select_calls(settings)
    again = run(settings, "select", "--json", code=3, models__F_first=OTHER_JUDGE)  # the drawn one: not gated
    said = json.loads(next(line for line in again.output.splitlines() if line.startswith("{")))
    assert said["weak_judges_changed"] == ["F_first: sim/weak-judge → sim/judge"]
    assert any("select --name NEW" in w for w in said["warnings"])
    assert select_calls(settings) == calls, "a re-select of a drawn benchmark asks no weak judge"

    run(settings, "select", "--name", "other", code=None, models__F_first=OTHER_JUDGE)
    assert shared_models(settings) == {OTHER_JUDGE}, "the other draw gated the shared pairs again"
    after = tmp_path / "after"
    run(settings, "export", str(after), "--benchmark", "playlistbench")
    for name in FILES:
        assert (after / name).read_bytes() == (before / name).read_bytes(), name
    same_export(before, after)  # the whole folder, its dataset card included
    weak = gap_table(after)
    assert "F_first: sim/weak-judge" in weak and f"F_first: {OTHER_JUDGE}" not in weak, weak
    assert json.loads((after / "provenance.json").read_text())["models"]["F_first"] == ["sim/weak-judge"]
    assert json.loads((after / "provenance.json").read_text())["content_hash"] == sha(after / "data/test.jsonl")
    assert [v["content_hash"] for v in versions(settings)] == [recorded]
    rows = [json.loads(line) for line in (after / "data/test.jsonl").read_text().splitlines()]
    assert {w["model"] for r in rows for w in r["weak_judges"] if w["role"] == "F_first"} == {"sim/weak-judge"}
    other = tmp_path / "other"
    run(settings, "export", str(other), "--benchmark", "other")
    rows = [json.loads(line) for line in (other / "data/test.jsonl").read_text().splitlines()]
    assert {w["model"] for r in rows for w in r["weak_judges"] if w["role"] == "F_first"} == {OTHER_JUDGE}
    # the viewer's (and the bundle's) pair card shows the weak judges of the benchmark it is opened in
    engine = open_store(settings)
    with engine.connect() as c:
        other_id = c.execute(text("SELECT id FROM benchmark WHERE name = 'other'")).scalar_one()
        shared = c.execute(text("SELECT a.pair_id FROM benchmark_pair AS a JOIN benchmark_pair AS b "
                                "ON a.pair_id = b.pair_id WHERE a.benchmark_id = 1 AND b.benchmark_id = :o "
                                "ORDER BY a.pair_id LIMIT 1"), {"o": other_id}).scalar_one()
    for benchmark_id, judge in ((1, "sim/weak-judge"), (other_id, OTHER_JUDGE)):
        card = pair_card(engine, shared, benchmark_id)
        assert card is not None and [w["model"] for w in card["weak"] if w["gate"] == "F_first"] == [judge]

    # a description set now (issue 20: after the draw) reaches the live version's annotations, not its rows
    domain = json.loads((before / "data/annotations.jsonl").read_text().splitlines()[0])["domain"]
    run(settings, "describe", domain, "Described after the draw")
    live = tmp_path / "live"
    run(settings, "export", str(live))
    assert {json.loads(line)["domain_description"] for line in (live / "data/annotations.jsonl").read_text()
            .splitlines()} == {"Described after the draw"}
    assert (live / "data/test.jsonl").read_bytes() == (before / "data/test.jsonl").read_bytes()

    run(settings, "remove", "--domain", "Education", "--force")
    assert [v["version"] for v in versions(settings)] == [1, 2]
    first = tmp_path / "first"
    result = json.loads(run(settings, "export", str(first), "--version", "1", "--json").output)
    assert "data/annotations.jsonl" in result["files"] and not result["notes"]
    for name in FILES:
        assert (first / name).read_bytes() == (live / name).read_bytes(), name
    assert json.loads((first / "provenance.json").read_text())["content_hash"] == recorded


def test_another_draw_leaves_a_published_export_as_it_was(source: Path, tmp_path: Path) -> None:
    other_draw_keeps_the_export(copy_of(source, tmp_path), tmp_path)


def test_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    other_draw_keeps_the_export(selected(tmp_path, store__url=pg_url), tmp_path)


def test_a_version_that_cannot_be_reproduced_is_refused(source: Path, tmp_path: Path) -> None:
    """A version recorded before seals, whose pairs another draw gated again: no export, what differs named."""
    settings = copy_of(source, tmp_path)
    with transaction(open_store(settings)) as s:  # as a store of before issue 41 holds it
        s.execute(text("DELETE FROM benchmark_seal"))
        s.execute(text("UPDATE benchmark_pair SET difficulty = NULL"))
    run(settings, "select", "--name", "other", code=None, models__F_first=OTHER_JUDGE)
    out = tmp_path / "out"
    refused = run(settings, "export", str(out), code=1)
    said = " ".join(refused.output.split())  # one message, wrapped to the terminal
    assert "weak_judges name F_first=sim/judge" in said and "nothing was exported" in said
    assert not (out / "data/test.jsonl").exists()


def test_an_older_version_without_a_seal_still_exports_and_says_what_it_lacks(source: Path, tmp_path: Path) -> None:
    settings = copy_of(source, tmp_path)
    with transaction(open_store(settings)) as s:
        s.execute(text("DELETE FROM benchmark_seal"))
    run(settings, "remove", "--domain", "Education", "--force")  # freezes version 1 with its rows (no seal)
    with transaction(open_store(settings)) as s:
        s.execute(text("DELETE FROM benchmark_seal WHERE version = 1"))
    out = tmp_path / "v1"
    result = json.loads(run(settings, "export", str(out), "--version", "1", "--json").output)
    assert sha(out / "data/test.jsonl") == versions(settings)[0]["content_hash"]
    assert "data/annotations.jsonl" not in result["files"]
    assert any("annotations" in note for note in result["notes"])


def test_an_older_store_gets_each_benchmarks_gate_records_from_what_it_has(source: Path, tmp_path: Path) -> None:
    """Migration 2312 on a store drawn before it, another draw since: a benchmark's drawn pairs get its own
    verdicts (benchmark_pair.difficulty), its dropped ones the pair's (all such a store still holds)."""
    settings = copy_of(source, tmp_path)
    run(settings, "select", "--name", "other", code=None, models__F_first=OTHER_JUDGE)
    engine = open_store(settings)
    with engine.begin() as conn:  # as a store of before 2312 holds it
        conn.execute(text("DROP TABLE benchmark_gate"))
        conn.execute(text("DELETE FROM schema_migration WHERE name = '2312_benchmark_gate'"))
    assert migrate(engine) == ["2312_benchmark_gate"]
    assert migrate(engine) == []
    with transaction(engine) as s:
        sampled = s.exec(select(BenchmarkQuestion.item_id).where(BenchmarkQuestion.benchmark_id == 1)).all()
        pairs = {int(p.id or 0): p for p in s.exec(select(Pair).where(col(Pair.item_id).in_(sampled))).all()}
        own = {int(b.pair_id): b.difficulty for b in s.exec(select(BenchmarkPair)
                                                             .where(BenchmarkPair.benchmark_id == 1)).all()}
        got = {int(g.pair_id): (g.difficulty, g.kept) for g in s.exec(select(BenchmarkGate)
                                                                      .where(BenchmarkGate.benchmark_id == 1)).all()}
    assert own and set(own) < set(pairs)  # some of its sampled questions' pairs were dropped
    assert got == {p: (own[p], True) if p in own else (pair.difficulty, pair.kept) for p, pair in pairs.items()}
    assert {d["F_first"]["model"] for p, (d, _) in got.items() if p in own} == {"sim/weak-judge"}


def test_a_redraw_with_another_weak_judge_keeps_the_first_versions_card(source: Path, tmp_path: Path) -> None:
    """`select --redraw` with another first weak judge: version 2's card and provenance name the new judge
    (the redraw's own gate records), version 1's export stays what it was, its card naming the old one."""
    settings = copy_of(source, tmp_path)
    before = tmp_path / "before"
    run(settings, "export", str(before))
    run(settings, "select", "--redraw", code=None, models__F_first=OTHER_JUDGE)
    assert [v["version"] for v in versions(settings)] == [1, 2]
    live, first = tmp_path / "live", tmp_path / "first"
    run(settings, "export", str(live))
    run(settings, "export", str(first), "--version", "1")
    assert f"F_first: {OTHER_JUDGE}" in gap_table(live) and "F_first: sim/weak-judge" not in gap_table(live)
    assert json.loads((live / "provenance.json").read_text())["models"]["F_first"] == [OTHER_JUDGE]
    same_export(before, first, ("generated_at", "time"))
    assert json.loads((first / "provenance.json").read_text())["models"]["F_first"] == ["sim/weak-judge"]
