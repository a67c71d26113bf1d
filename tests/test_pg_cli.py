"""PostgreSQL first-class (issue 10, defects 2 and 3): every command of the main job runs from the
command line against a PostgreSQL store, and the same collection and seed give the same benchmark —
the export byte for byte — on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from playlisteval.build import status
from playlisteval.cli import main
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import ModelCall
from playlisteval.synth.make import make_collection
from tests.helpers import QUIET_SIM, env_for, project

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90, eval__frames=16,
    select__questions_per_domain=0, select__pairs_per_domain=30, **QUIET_SIM)
EXPORTED = ("data/test.jsonl", "data/test.parquet", "README.md", "stats.json")


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_status_counts_every_cache_hit(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url") if store == "postgresql" else f"sqlite:///{tmp_path}/store.db"
    settings = project(tmp_path, store__url=url)
    with transaction(open_store(settings)) as s:
        for n in range(5):
            s.add(ModelCall(request_hash=f"h{n}", role="B_gen", provider="sim", model="x", status="cached" if n < 3
                            else "ok", cache_hit=n < 3, input_tokens=10, output_tokens=1))
    st = status(settings)
    assert (st.calls, st.cache_hits, st.tokens) == (5, 3, 55)


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("collection") / "videos"
    make_collection(out, domains=2, playlists=1, videos=3, minutes=3, seed=0)
    return out


class Project:
    """A project on its own store over the shared synthetic collection, driven through the CLI."""

    def __init__(self, root: Path, store_url: str) -> None:
        self.root = root
        self.env = env_for(store__url=store_url, **OVERRIDES)

    def cli(self, *args: str) -> str:
        result = CliRunner().invoke(main, ["--project", str(self.root), *args], env=self.env,
                                    catch_exceptions=False)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"
        return result.output

    def json(self, *args: str) -> list[Any]:
        return [json.loads(line) for line in self.cli(*args).splitlines() if line.startswith("{")]


def run_job(root: Path, store_url: str, videos: Path) -> tuple[Project, dict[str, Any]]:
    """init → add → index → build → select → export: what a benchmark needs (outputs checked by the callers)."""
    assert CliRunner().invoke(main, ["init", str(root)]).exit_code == 0
    proj = Project(root, store_url)
    proj.cli("add", "--manifest", str(videos / "manifest.csv"))
    proj.cli("index")
    proj.cli("build")
    [selected] = proj.json("select", "--json")
    proj.cli("export", str(root / "out"))
    return proj, selected


@pytest.fixture(scope="module")
def on_postgresql(pg_module_url: str, videos: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> tuple[Project, dict[str, Any]]:
    return run_job(tmp_path_factory.mktemp("pg"), pg_module_url, videos)


def test_the_main_job_runs_from_the_command_line_on_postgresql(on_postgresql: tuple[Project, dict[str, Any]]) -> None:
    proj, selected = on_postgresql
    [st] = proj.json("status", "--json")
    assert sum(st["states"].values()) > 10 and st["calls"] > 0
    assert not {"pending", "qa_generated", "gated", "degraded", "failed"} & set(st["states"])
    assert "0 item(s)" in proj.cli("resume")  # nothing left to do: a finished build stays finished
    assert selected["created"] and selected["pairs"] > 0
    [run] = proj.json("eval", "judge", "--judge", "sim/judge", "--evidence", "retrieved", "--json")
    assert run["pairs"] == selected["pairs"]
    [shortcut] = proj.json("eval", "judge", "--judge", "shortcut/always-a", "--json")
    assert shortcut["pairs"] == selected["pairs"]
    [retrieval] = proj.json("eval", "retrieve", "--json")
    assert retrieval["questions"] > 0
    rows = (proj.root / "out" / "data" / "test.jsonl").read_text().splitlines()
    assert len(rows) == selected["pairs"]
    proj.cli("report", str(proj.root / "report.html"))
    assert "sim/judge" in (proj.root / "report.html").read_text()
    [again] = proj.json("status", "--json")
    assert again["calls"] > st["calls"]  # the evaluation's calls are on the ledger too


def test_sqlite_and_postgresql_give_the_same_benchmark_byte_for_byte(
        on_postgresql: tuple[Project, dict[str, Any]], videos: Path, tmp_path: Path) -> None:
    pg, pg_selected = on_postgresql
    root = tmp_path / "sqlite"
    lite, lite_selected = run_job(root, f"sqlite:///{root}/store.db", videos)
    assert lite_selected["domains"] == pg_selected["domains"]
    for name in EXPORTED:
        ours, theirs = (lite.root / "out" / name).read_bytes(), (pg.root / "out" / name).read_bytes()
        assert ours == theirs, f"{name} differs between SQLite and PostgreSQL"
    # the retriever's figures as well: its blocks of questions are jobs on either store's engine
    figures = ("questions", "k", "hit_both", "hit_any", "ndcg", "mean_segments", "chunks", "errors")
    [ours_run], [theirs_run] = lite.json("eval", "retrieve", "--json"), pg.json("eval", "retrieve", "--json")
    assert {f: ours_run[f] for f in figures} == {f: theirs_run[f] for f in figures}
