"""Issue 9, item 9: the exported benchmark is portable and safe — weak-judge verdicts in the row's own
A/B order, media named by stable id, relative path and sha256 (never an absolute path), and a
non-empty OUT folder left alone unless --force."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlmodel import select

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import transaction
from playlisteval.store.tables import Playlist, Video
from playlisteval.world.synth.world import world_path
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project

SMALL: dict[str, object] = dict(index__embedder="hash", eval__materialize_frames=False, eval__frames=16,
                                select__difficulty_evidence="oracle", select__questions_per_domain=0,
                                select__pairs_per_domain=90, **QUIET_SIM)


def cli(settings: Settings, *args: str) -> Any:
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env_for(**SMALL))


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A selected sim benchmark whose videos live in a collection folder, as real files with hashes (moved
    there before the draw: a version is sealed when it is recorded, issue 41 — a store edited under it after
    is not what it exports)."""
    settings = project(tmp_path_factory.mktemp("export"), **SMALL)
    engine = indexed_seeded_store(settings, 4)
    build(settings)
    collection = settings.root / "collection" / "Education" / "P1"
    collection.mkdir(parents=True)
    with transaction(engine) as s:
        for playlist in s.exec(select(Playlist)).all():  # as `add --manifest collection/manifest.csv` records
            playlist.source = str(settings.root / "collection" / "manifest.csv")
            s.add(playlist)
        for video in s.exec(select(Video)).all():
            moved = collection / Path(video.path).name
            moved.write_bytes(f"video bytes of {moved.name}".encode())
            world_path(video.path).rename(world_path(moved))
            video.path, video.sha256 = str(moved), hashlib.sha256(moved.read_bytes()).hexdigest()
            s.add(video)
    select_benchmark(settings)
    return settings


@pytest.fixture(scope="module")
def exported(selected: Settings, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("out") / "bench"
    result = cli(selected, "export", str(out))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "data" / "test.jsonl").read_text().splitlines()]
    return out, rows


def test_weak_judge_verdicts_are_in_the_rows_own_order(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    out, rows = exported
    given = [(row, v) for row in rows for v in row["weak_judges"] if v["verdict"] is not None]
    assert len(given) > 10
    for row, v in given:
        # right means picking the row's label, in the row's own A/B order
        assert (v["verdict"] == row["label"]) == v["correct"], (row["pair_id"], v)
        assert v["picked"] == ("chosen" if v["correct"] else "rejected")
    card = (out / "README.md").read_text()
    assert "`weak_judges[].verdict` is in **this row's** A/B order" in card


def test_media_are_named_by_id_relative_path_and_hash(selected: Settings,
                                                       exported: tuple[Path, list[dict[str, Any]]]) -> None:
    out, rows = exported
    text = (out / "data" / "test.jsonl").read_text()
    assert str(selected.root) not in text  # no path of the machine that built it
    root = selected.root / "collection"
    for row in rows:
        for seg in row["segments"]:
            assert seg["video_path"].startswith("Education/P1/v") and not Path(seg["video_path"]).is_absolute()
            data = (root / seg["video_path"]).read_bytes()
            assert seg["video_sha256"] == hashlib.sha256(data).hexdigest()
            assert seg["video_id"] == "v-" + seg["video_sha256"][:16]
    assert "SIMULATED" in (out / "README.md").read_text()


def test_export_refuses_a_folder_that_is_not_empty_unless_forced(selected: Settings, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "README.md").write_text("my own notes")
    refused = cli(selected, "export", str(out))
    assert refused.exit_code == 1
    said = " ".join(refused.output.split())
    assert "is not empty" in said and "--force" in said
    assert (out / "README.md").read_text() == "my own notes" and not (out / "data").exists()
    forced = cli(selected, "export", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert (out / "data" / "test.parquet").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(selected, "export", str(empty)).exit_code == 0
