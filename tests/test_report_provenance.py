"""Issue 22: the HTML report says where its numbers came from — tool version, generation time, the store
without its password, the benchmark's version and content hash, the settings and protocol digests and the
models of each role — in a Provenance block near the top and in ``report --json``; the generation time
never makes an unchanged report recompute its sections (analytics/section_cache.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from playlisteval.actors.build_run import build
from playlisteval.analytics import provenance as provenance_module
from playlisteval.analytics import report as report_module
from playlisteval.analytics.report import Section, render
from playlisteval.cli import main
from playlisteval.select.sampling import select_benchmark
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import env_for, project
from tests.judged_project import OVERRIDES, cli, copy_of, json_lines, make_selected

PASSWORD = "Sw0rdfish-not-for-print"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_selected(tmp_path_factory.mktemp("report-provenance"))
    cli(copy_of(root, root), "eval", "judge", "--judge", "sim/judge", "--evidence", "retrieved", code=None)
    return root


def _block(html: str) -> str:
    """The page's Provenance block (it sits between the header and the sections' navigation)."""
    start = html.index('id="provenance"')
    assert start < html.index("<nav>") < html.index("<section"), "the block is near the top"
    return html[start:html.index("</details>", start)]


def _report(settings: Any, out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["--project", str(settings.root), "report", str(out), "--json"],
                                env=env or env_for(**OVERRIDES), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    docs = json_lines(result)
    assert len(docs) == 1, result.output
    return docs[0]


def test_the_report_names_the_benchmark_version_and_its_hash(judged: Path, tmp_path: Path) -> None:
    settings = copy_of(judged, tmp_path)
    doc = _report(settings, tmp_path / "r.html")
    assert {"out", "benchmark", "sections", "simulated"} <= doc.keys()  # the other keys kept
    prov = doc["provenance"]
    listed = json.loads(cli(settings, "versions", "--json").output)["versions"]
    assert prov["benchmark"] == doc["benchmark"] and prov["benchmark_version"] == 1
    assert prov["content_hash"] == listed[0]["content_hash"] and len(prov["content_hash"]) == 64
    assert prov["generated_at"] and prov["time"] and prov["settings_source"] == "benchmark"
    assert any("sim/judge" in specs for specs in prov["models"].values()), prov["models"]  # the judged run's
    block = _block((tmp_path / "r.html").read_text(encoding="utf-8"))
    for shown in (prov["content_hash"], f"{prov['benchmark']}, version 1", prov["settings_digest"],
                  prov["protocol_digest"], prov["generated_at"], prov["version"], prov["store"], "sim/judge"):
        assert shown in block, shown
    for role in prov["models"]:
        assert f"{role}: " in block, role


def test_the_generation_time_does_not_recompute_the_sections(judged: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    settings = copy_of(judged, tmp_path)
    first = _report(settings, tmp_path / "a.html")["provenance"]

    class Later(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Later:
            return cls(2031, 5, 6, 7, 8, 9, tzinfo=UTC)

    def not_again(*_: Any, **__: Any) -> Any:
        raise AssertionError("an unchanged store recomputed the report's sections")

    monkeypatch.setattr(provenance_module, "datetime", Later)
    monkeypatch.setattr(report_module, "build_sections", not_again)
    second = _report(settings, tmp_path / "b.html")["provenance"]
    assert second["generated_at"] == "2031-05-06T07:08:09+00:00" != first["generated_at"]
    assert {k: v for k, v in second.items() if k != "generated_at"} == \
        {k: v for k, v in first.items() if k != "generated_at"}
    assert "2031-05-06T07:08:09+00:00" in _block((tmp_path / "b.html").read_text(encoding="utf-8"))


def test_the_block_escapes_what_it_shows() -> None:
    prov = {"tool": "playlisteval", "version": "1", "store": "sqlite:///x.db", "benchmark": "<b>bench</b>",
            "benchmark_version": 2, "content_hash": "ab", "time": None, "settings_digest": "cd",
            "settings_source": "benchmark", "protocol_digest": None,
            "models": {"judge": ["vllm/<script>alert(1)</script>"]}}
    html = render([Section("s", "S", "")], title="t", benchmark="b", provenance=prov)
    block = _block(html)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in block
    assert "&lt;b&gt;bench&lt;/b&gt;, version 2" in block
    assert 'id="provenance"' not in render([Section("s", "S", "")], title="t", benchmark=None)  # none asked


def test_the_store_password_never_appears(pg_url: str, tmp_path: Path) -> None:
    """A PostgreSQL store named with a password (the local server trusts, so the password is accepted
    and unused): neither the page nor --json shows it; the store is named with it masked."""
    url = make_url(pg_url).set(password=PASSWORD).render_as_string(hide_password=False)
    settings = project(tmp_path, store__url=url, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(project(tmp_path, store__url=url, **OVERRIDES)).created
    env = env_for(store__url=url, **OVERRIDES)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "report", str(tmp_path / "r.html"), "--json"],
                                env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert PASSWORD not in result.output and PASSWORD not in html
    prov = json_lines(result)[0]["provenance"]
    assert prov["store"].startswith("postgresql") and "***" in prov["store"]
    assert prov["benchmark_version"] == 1 and prov["content_hash"]
    block = _block(html)
    assert prov["store"] in block and prov["content_hash"] in block
