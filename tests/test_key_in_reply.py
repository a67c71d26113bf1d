"""Issue 44 item 4: a key quoted inside a normal 200 reply (a gateway's notice) appears in no table, page, log
or export; a judge's name with Markdown or HTML is refused where it enters, or escaped where it is written.

The judge is the real OpenAI-compatible provider against a local HTTP server (tests/provider_fakes.py) whose
every chat reply is a 200 with a verdict and a notice quoting the key the test set in the environment, run
through the real CLI on a small sim-built benchmark (as tests/test_verdict_health.py does). The key has no
provider shape: it is found only because it is the value of OPENAI_API_KEY.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from playlisteval.actors.build_run import build
from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.logs.redaction import MASK
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import forget_engines
from playlisteval.view.app import make_app
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import QUIET_SIM, env_for, project, share_media
from tests.provider_fakes import CHAT, FakeAPI, fake_api
from tests.test_redaction import dump_sqlite
from tests.view_helpers import TOKEN, sources

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", eval__materialize_frames=False, eval__frames=8, eval__modality="transcript",
    eval__workers=1, select__difficulty_evidence="oracle", select__questions_per_domain=0,
    select__pairs_per_domain=10, runner__max_attempts=1, runner__backoff_base_s=0.01, **QUIET_SIM)
JUDGE = "openai/judge-test"
PRICES = '\n[prices."openai/judge-test"]\ninput = 1.0\noutput = 2.0\n'
KEY = "Gw7Kq2Lm9Np4Rs6Tv8Xz"  # no provider shape (no sk-, AIza, hf_): only its being the variable's value hides it
NOTICE = f"[gateway notice] request authorised with key {KEY}; 80 % of the day's quota used."
REPLY = f"{NOTICE}\n\nAnswer A shows what the video shows. [[A]]"
EVIL = "openai/x <img src=x onerror=alert(1)> # Injected"  # one line: accepted, and escaped where written


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sim-built questions and the benchmark the sim weak judges drew from them."""
    root = tmp_path_factory.mktemp("keyreply")
    settings = project(root, **OVERRIDES)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(project(root, **OVERRIDES)).pairs >= 6
    forget_engines()
    return root


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with fake_api() as server:
        server.content = REPLY
        yield server


def _fresh(source: Path, tmp_path: Path, api: FakeAPI) -> Settings:
    root = tmp_path / "proj"
    project(root, **OVERRIDES)
    with (root / "playlisteval.toml").open("a") as f:
        f.write(PRICES)
    with sqlite3.connect(source / "playlisteval.db") as a, sqlite3.connect(root / "playlisteval.db") as b:
        a.backup(b)
    share_media(source, root)
    settings = project(root, **OVERRIDES)
    settings.providers.openai_base_url = f"{api.url}/v1"
    return settings


def cli(settings: Settings, api: FakeAPI, *args: str) -> Result:
    env = {**env_for(**OVERRIDES, providers__openai_base_url=f"{api.url}/v1"), "OPENAI_API_KEY": KEY}
    return CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env, catch_exceptions=False)


def printed(result: Result) -> str:
    return f"{result.output}\n{getattr(result, 'stderr', '')}"


def said(result: Result) -> str:
    """What a command printed, as one line (the console wraps at 80 columns)."""
    return " ".join(printed(result).split())


def served(settings: Settings, db: Path) -> str:
    """Every page of the viewer that shows a store text: lists, each pair and each item."""
    forget_engines()
    client = TestClient(make_app(settings, TOKEN, sources(settings)))
    assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
    with sqlite3.connect(db) as con:
        pairs = [p for (p,) in con.execute("SELECT DISTINCT pair_id FROM judgment")]
        items = [i for (i,) in con.execute("SELECT id FROM item")]
    paths = ["/", "/leaderboard", "/runs", "/funnel", "/items", "/pairs", *(f"/pairs/{p}" for p in pairs),
             *(f"/items/{i}" for i in items)]
    pages = {path: client.get(path) for path in paths}
    assert all(page.status_code == 200 for page in pages.values()), {p: r.status_code for p, r in pages.items()}
    return "\n".join(page.text for page in pages.values())


def test_a_key_quoted_in_a_200_reply_is_in_no_table_page_log_or_export(selected: Path, tmp_path: Path,
                                                                        api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    db = settings.root / "playlisteval.db"
    judged = cli(settings, api, "-vv", "eval", "judge", "--judge", JUDGE, "--json")
    assert judged.exit_code == 0, printed(judged)
    [run] = [json.loads(line) for line in judged.output.splitlines() if line.startswith("{")]
    assert run["pairs"] >= 6 and run["no_verdict"] == 0  # the verdicts were read past the notice
    sent = api.requests(CHAT)
    assert sent and all(s.headers.get("authorization") == f"Bearer {KEY}" for s in sent)  # the key was used
    outputs = [printed(judged), *(printed(cli(settings, api, "-vv", *args)) for args in (
        ("eval", "runs"), ("eval", "runs", "--json"), ("leaderboard",), ("leaderboard", "--json"),
        ("report", str(tmp_path / "report.html")), ("export", str(tmp_path / "out"))))]
    store = dump_sqlite(db)
    # the reply is stored (response cache, judgments), its notice with the key hidden
    assert "[gateway notice] request authorised with key " + MASK in store
    with sqlite3.connect(db) as con:
        raws = [r for (r,) in con.execute("SELECT raw FROM judgment")]
        cached = [r for (r,) in con.execute("SELECT response FROM response_cache WHERE provider = 'openai'")]
    assert raws and all(MASK in r and "[[A]]" in r for r in raws) and cached and all(MASK in r for r in cached)
    files = "\n".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()
                      and p.suffix in (".html", ".json", ".md", ".jsonl", ".log", ".txt", ".csv"))
    for where, textual in [("store", store), ("terminal and logs", "\n".join(outputs)),
                           ("report and export", files), ("viewer", served(settings, db))]:
        assert KEY not in textual, f"the key is in the {where}"

    # a reply stored before the runner hid keys (written past the store's hooks): the pages still hide it
    with sqlite3.connect(db) as con:
        con.execute("UPDATE judgment SET raw = ?", (f"an old reply: {NOTICE}",))
    pages = served(settings, db)
    assert KEY not in pages and f"request authorised with key {MASK}" in pages
    report = tmp_path / "report2.html"
    assert cli(settings, api, "report", str(report)).exit_code == 0 and KEY not in report.read_text()


def test_a_judge_name_with_markup_is_refused_or_escaped(selected: Path, tmp_path: Path, api: FakeAPI) -> None:
    settings = _fresh(selected, tmp_path, api)
    db = settings.root / "playlisteval.db"
    # where a name enters: a line break (the card's `# Injected` heading) is refused, nothing is written
    for bad in ("openai/x\n# Injected", "openai/x\r<img src=x onerror=alert(1)>"):
        refused = cli(settings, api, "eval", "judge", "--judge", bad)
        assert refused.exit_code != 0 and "judge name" in said(refused) and "control character" in said(refused)
    out = tmp_path / "out"
    assert cli(settings, api, "export", str(out)).exit_code == 0
    rows = [json.loads(line) for line in (out / "data" / "test.jsonl").read_text().splitlines()]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps({"pair_id": r["pair_id"], "verdict": r["label"]}) + "\n" for r in rows))
    refused = cli(settings, api, "eval", "import", str(verdicts), "--judge", "openai/x\n# Injected")
    assert refused.exit_code != 0 and "control character" in said(refused)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM judge_run").fetchone()[0] == 0
    # one line of markup is a name like any other: written escaped in the dataset card
    assert cli(settings, api, "eval", "import", str(verdicts), "--judge", EVIL).exit_code == 0
    card_dir = tmp_path / "card"
    assert cli(settings, api, "export", str(card_dir)).exit_code == 0
    card = (card_dir / "README.md").read_text()
    assert "openai/x \\<img src=x onerror=alert(1)\\> # Injected" in card  # shown literally, in its table row
    assert not re.search(r"(?<!\\)<img", card)  # never a raw tag
    assert not any(line.lstrip().startswith("# Injected") for line in card.splitlines())
