"""Issue 9, item 10: bounded builds — `build --max-items N`, a per-domain target of accepted questions
and a cap on the items that may draw on one segment stop new items from being created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.actors.build_run import build
from playlisteval.build.bounded import Bounds, create_items
from playlisteval.cli import main
from playlisteval.store import transaction
from playlisteval.store.tables import Seed
from tests.helpers import QUIET_SIM, env_for, project, seeded_store


def cli(root: Path, *args: str, **overrides: object) -> Any:
    return CliRunner().invoke(main, ["--project", str(root), *args], env=env_for(**{**QUIET_SIM, **overrides}))


def rows(engine: Engine, sql: str) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql)))


def test_max_items_stops_creating_items(tmp_path: Path) -> None:
    engine = seeded_store(project(tmp_path), 5)
    first = cli(tmp_path, "build", "--max-items", "2")
    assert first.exit_code == 0, first.output
    assert "created 2 item(s)" in first.output
    assert rows(engine, "SELECT count(*) FROM item")[0][0] == 2
    assert cli(tmp_path, "build", "--max-items", "2").exit_code == 0  # reached: nothing new
    assert rows(engine, "SELECT count(*) FROM item")[0][0] == 2
    assert cli(tmp_path, "build", build__max_items=3).exit_code == 0  # the config key does the same
    assert rows(engine, "SELECT count(*) FROM item")[0][0] == 3
    assert cli(tmp_path, "build", "--max-items", "-1").exit_code == 2


def test_a_per_domain_target_stops_once_enough_questions_are_accepted(tmp_path: Path) -> None:
    settings = project(tmp_path, build__target_accepted_per_domain=2, **QUIET_SIM)
    engine = seeded_store(settings, 6)
    build(settings)
    states = dict(rows(engine, "SELECT state, count(*) FROM item GROUP BY state"))
    assert states == {"accepted": 2}


def test_the_target_tops_up_in_waves_when_items_are_lost_on_the_way(tmp_path: Path) -> None:
    # one attempt per phase and a sim that often makes ungrounded questions: some items are discarded
    settings = project(tmp_path, build__target_accepted_per_domain=3, build__attempts_per_phase=1,
                       **{**QUIET_SIM, "sim__ungrounded": 0.5, "sim__transcript_answerable": 0.3})
    engine = seeded_store(settings, 20)
    outcome = build(settings)
    states = dict(rows(engine, "SELECT state, count(*) FROM item GROUP BY state"))
    assert states.get("accepted") == 3
    assert states.get("discarded", 0) > 0 and outcome.created == sum(states.values()) < 20


def test_a_segment_is_drawn_on_by_at_most_the_cap(tmp_path: Path) -> None:
    settings = project(tmp_path)
    engine = seeded_store(settings, 3)
    with transaction(engine) as s:  # two more seeds on the first seed's first segment
        first = s.get(Seed, 1)
        assert first is not None
        others = [seed.segment2_id for seed in (s.get(Seed, 2), s.get(Seed, 3)) if seed is not None]
        for seg in others:
            s.add(Seed(domain_id=first.domain_id, segment1_id=first.segment1_id, segment2_id=seg, similarity=0.5))
    built = cli(tmp_path, "build", build__max_items_per_segment=2)
    assert built.exit_code == 0, built.output
    assert "created 4 item(s)" in built.output  # 5 seeds; one of the three on the shared segment is left out
    uses = rows(engine, "SELECT s.segment1_id, count(*) FROM item i JOIN seed s ON s.id = i.seed_id "
                        "GROUP BY s.segment1_id ORDER BY 2 DESC")
    assert uses[0][1] == 2


def test_which_seeds_a_bound_takes_depends_on_content_not_on_row_ids(tmp_path: Path) -> None:
    def chosen(root: Path, reverse: bool) -> list[tuple[str, str]]:
        settings = project(root)
        engine = seeded_store(settings, 6)
        if reverse:  # the same seeds, stored in the opposite order: other ids
            with transaction(engine) as s:
                seeds = [(x.domain_id, x.segment1_id, x.segment2_id) for x in s.exec(select(Seed)).all()]
                for seed in s.exec(select(Seed)).all():
                    s.delete(seed)
                s.flush()
                for domain, one, two in reversed(seeds):
                    s.add(Seed(domain_id=domain, segment1_id=one, segment2_id=two, similarity=0.6))
        create_items(engine, Bounds(max_items=2), settings.project.seed)
        return sorted((Path(a).name, Path(b).name) for a, b in rows(engine, """
            SELECT v1.path, v2.path FROM item i JOIN seed s ON s.id = i.seed_id
            JOIN segment g1 ON g1.id = s.segment1_id JOIN video v1 ON v1.id = g1.video_id
            JOIN segment g2 ON g2.id = s.segment2_id JOIN video v2 ON v2.id = g2.video_id"""))

    first = chosen(tmp_path / "a", reverse=False)
    assert len(first) == 2 and first == chosen(tmp_path / "b", reverse=True)
