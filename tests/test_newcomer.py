"""Issue 14, a newcomer's path: every empty result says why and what to run; index warnings are printed
once; progress is a structured line per unit when piped with -v (per chunk for `index`); third-party
progress bars stay off unless -v; `status` shows spend per purpose, labelled notional under the sim, and
the projected spend to finish the build; `funnel` explains its gates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlmodel import select

from playlisteval.cli import main
from playlisteval.store import items, transaction
from playlisteval.store.tables import Item, ModelCall
from tests.helpers import env_for, project, seeded_store
from tests.index_helpers import make_video

FAST = env_for(index__embedder="hash", index__ocr="none")


def _cli(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str, code: int = 0, **env: str) -> Result:
    for key, value in {**FAST, **env}.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(main, ["--project", str(root), *args], env={"COLUMNS": "250"})
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result


def test_empty_results_say_why_and_what_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path)
    out = _cli(tmp_path, monkeypatch, "search", "rivers", code=1).output
    assert "nothing is indexed yet: run `playlisteval index` first" in out
    out = _cli(tmp_path, monkeypatch, "index").output
    assert "indexed 0 video(s)" in out and "hint the collection is empty: add videos first" in out
    hints = json.loads(_cli(tmp_path, monkeypatch, "index", "--json").output)["hints"]
    assert hints and "playlisteval add" in hints[0]
    out = _cli(tmp_path, monkeypatch, "build").output
    assert "created 0 item(s)" in out and "hint the collection is empty" in out
    out = _cli(tmp_path, monkeypatch, "resume").output
    assert "nothing to resume" in out
    out = _cli(tmp_path, monkeypatch, "status").output
    assert "hint the collection is empty" in out
    out = _cli(tmp_path, monkeypatch, "funnel").output
    assert "C2.1  transcript shortcut" in out and "D4  visual detectability" in out  # the legend
    assert "no gate has seen a candidate yet: `playlisteval build`" in out


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg makes the test video")
def test_index_says_why_no_seeds_warns_once_and_logs_each_step(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path)
    make_video(tmp_path / "media" / "Silent Films" / "reel.mp4", 40, audio=None)
    _cli(tmp_path, monkeypatch, "add", "Film", str(tmp_path / "media" / "Silent Films"))
    result = _cli(tmp_path, monkeypatch, "-v", "index", PLAYLISTEVAL_LOG_JSON="1")
    warning = "no audio track and no captions; only its frames can be indexed"
    assert result.output.count(warning) == 1  # printed by the CLI, not logged again
    assert "seeds 0 new of 0" in result.output and "no seeds: 1 live segment(s), and a seed pairs two" in result.output
    steps = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    chunks = [s for s in steps if s.get("event") == "progress" and s["task"] == "chunks"]
    assert chunks and chunks[-1]["done"] == chunks[-1]["total"] == 2 and chunks[-1]["unit"] == "chunks"
    assert [s["done"] for s in chunks] == sorted({s["done"] for s in chunks})  # one line per move, never twice


def _bars(verbosity: int) -> list[bool]:
    """In a fresh process (as the CLI runs): whether transformers and tqdm would draw their bars."""
    code = ("import sys; from playlisteval import logs; logs.configure(int(sys.argv[1])); "
            "from transformers.utils import logging as hf; from tqdm import tqdm; "
            "print(hf.is_progress_bar_enabled(), not tqdm(range(2), file=sys.stderr).disable)")
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")}
    done = subprocess.run([sys.executable, "-c", code, str(verbosity)], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return [word == "True" for word in done.stdout.split()]


def test_third_party_progress_bars_are_off_unless_verbose() -> None:
    assert _bars(0) == [False, False]
    assert _bars(1) == [True, True]


def test_status_shows_spend_per_purpose_notional_and_what_is_left(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings = project(tmp_path)
    engine = seeded_store(settings, 3)
    first, second, _third = items.create_items(engine)
    with transaction(engine) as s:
        item = s.get(Item, first)
        assert item is not None
        item.state = "accepted"
        s.add(item)
        for purpose, item_id, usd in (("build", first, 0.3), ("build", second, 0.1), ("select", None, 0.05),
                                      ("eval", None, 0.02)):
            s.add(ModelCall(request_hash=f"{purpose}{item_id}", role="B", provider="sim", model="generator",
                            item_id=item_id, purpose=purpose, status="ok", usd=usd))
    data = json.loads(_cli(tmp_path, monkeypatch, "status", "--json").output)["spend"]
    by = data["by_purpose"]
    assert by["build"]["paid_usd"] == pytest.approx(0.4) and by["select"]["paid_usd"] == pytest.approx(0.05)
    assert by["eval"]["calls"] == 1 and all(p["notional"] for p in by.values())
    # one settled item cost 0.3; two are left, one of which spent 0.1 already
    assert data["build_to_finish"]["items"] == 2 and data["build_to_finish"]["usd"] == pytest.approx(0.5)
    out = _cli(tmp_path, monkeypatch, "status").output
    assert "select spend (USD), notional (sim)" in out and "eval spend (USD), notional (sim)" in out
    assert "build to finish (USD, projected)" in out and "~0.5000 for 2 item(s)" in out
    with transaction(engine) as s:
        assert len(s.exec(select(Item)).all()) == 3
