"""`ps` and `parked` (issue 44): who holds what now, and what waits for a person, through the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

from click.testing import CliRunner
from sqlmodel import select

from playlisteval.cli import main
from playlisteval.store import items, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import Video, WorkJob
from tests.helpers import QUIET_SIM, project, seeded_store


def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--project", str(tmp_path), *args], env=env or {})
    return result.exit_code, result.output


def test_ps_lists_every_live_lease_by_holder_and_kind_and_never_an_expired_one(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = seeded_store(settings, 3)
    first, second, third = items.create_items(engine)
    assert items.claim(engine, first, State.PENDING, "hostA:11:n0nce", 60.0) is not None
    assert items.claim(engine, second, State.PENDING, "hostA:11:n0nce", 60.0) is not None
    assert items.claim(engine, third, State.PENDING, "hostB:7:other", -5.0) is not None  # already expired
    with transaction(engine) as s:
        s.add(WorkJob(kind="judge", run_id=1, item_id=first, state="running", worker="hostB:7:other",
                      lease_until=time.time() + 30))
        s.add(WorkJob(kind="judge", run_id=1, item_id=second, state="running", worker="hostC:9",
                      lease_until=time.time() - 1))  # its holder stopped renewing
        video = s.exec(select(Video)).first()
        assert video is not None
        video.lease_owner, video.lease_expires = "hostC:9:x/claim", time.time() + 30

    code, out = _cli(tmp_path, "ps", "--json")
    assert code == 0, out
    rows = {(r["process"], r["kind"]): r for r in json.loads(out)}
    assert set(rows) == {("hostA:11:n0nce", "item"), ("hostB:7:other", "judge"), ("hostC:9:x", "video")}
    assert rows[("hostA:11:n0nce", "item")]["ids"] == sorted([first, second])
    code, out = _cli(tmp_path, "ps")
    assert code == 0 and "3 worker process(es)" in out and "hostA:11:n0nce" in out


def test_ps_with_nothing_held_says_which_open_jobs_wait_for_a_worker(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 1)
    (item_id,) = items.create_items(engine)
    with transaction(engine) as s:
        s.add(WorkJob(kind="gate", run_id=0, item_id=item_id, state="queued"))
    code, out = _cli(tmp_path, "ps")
    assert code == 0 and "no worker holds any work now" in out and "1 gate" in out


def test_parked_groups_failures_of_every_kind_and_replay_resumes_the_items(tmp_path: Path) -> None:
    broken = project(tmp_path, models__C3="hf/no-such-local-model", **QUIET_SIM)
    engine = seeded_store(broken, 1)
    env = {"PLAYLISTEVAL_MODELS__C3": "hf/no-such-local-model",
           **{f"PLAYLISTEVAL_SIM__{k.split('__')[1].upper()}": "0" for k in QUIET_SIM}}
    assert _cli(tmp_path, "build", env=env)[0] == 3
    with transaction(engine) as s:
        s.add(WorkJob(kind="judge", run_id=4, item_id=1, state="failed", error="RateLimit: 429 after 6 tries\nmore"))
        video = s.exec(select(Video)).first()
        assert video is not None
        video.status, video.reason = "skipped", "corrupt: moov atom not found"

    code, out = _cli(tmp_path, "parked", "--json", env=env)
    assert code == 3, out
    groups = {g["kind"]: g for g in json.loads(out)["parked"]}
    assert set(groups) == {"item", "video", "judge"}
    assert "no-such-local-model" in groups["item"]["reason"] and groups["item"]["replay"].endswith("retry-failed")
    assert groups["judge"]["reason"] == "RateLimit: 429 after 6 tries" and "eval judge" in groups["judge"]["replay"]
    assert groups["video"]["reason"] == "corrupt: moov atom not found" and groups["video"]["ids"] == [video.id]

    fixed = {k: v for k, v in env.items() if "MODELS" not in k}
    code, out = _cli(tmp_path, "parked", "--replay", env=fixed)
    assert "retried 1 failed item(s)" in out
    assert code == 3 and "item" not in [line.split()[1] for line in out.splitlines()
                                        if line.startswith("│") and len(line.split()) > 1]
    code, out = _cli(tmp_path, "parked", "--json", env=fixed)
    assert {g["kind"] for g in json.loads(out)["parked"]} == {"video", "judge"}
