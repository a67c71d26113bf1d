"""`build` and `resume` on Redis send what an earlier run committed and never sent (issue 44): after a failed
send, the next `build` used to say "nothing was left to run" with items pending that no message carried."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sqlmodel import select

from playlisteval.actors import App
from playlisteval.actors.broker import queued_ids
from playlisteval.actors.tasks import BUILD_QUEUE
from playlisteval.cli import main
from playlisteval.store import items, outbox, transaction
from playlisteval.store.states import State
from playlisteval.store.tables import Item
from tests.helpers import QUIET_SIM, env_for, project, seeded_store


def test_the_next_build_sends_the_items_an_earlier_failed_send_left_without_a_message(tmp_path: Path,
                                                                                       redis_url: str) -> None:
    overrides: dict[str, object] = dict(broker__url=redis_url, **QUIET_SIM)
    settings = project(tmp_path, **overrides)
    engine = seeded_store(settings, 4)
    made = items.create_items(engine)  # an earlier `build` committed these, then could not reach Redis
    with transaction(engine) as s:  # one of them had moved on: its message waits in the outbox
        item = s.get(Item, made[0])
        assert item is not None
        item.state = State.QA_GENERATED.value
        outbox.put(s, made[0], State.QA_GENERATED)
    with transaction(engine) as s:  # and long enough ago that no worker is about to send them
        for item in s.exec(select(Item)).all():
            item.updated_at -= 60
    env = env_for(**overrides)
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--json"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["created"] == 0 and data["enqueued"] == 4 and data["hint"] is None
    assert queued_ids(App(settings).broker, BUILD_QUEUE) == set(made)
    assert outbox.pending(engine) == {}

    again = CliRunner().invoke(main, ["--project", str(tmp_path), "build", "--json"], env=env)
    assert json.loads(again.output)["enqueued"] == 0  # each waits in the queue once, not twice
