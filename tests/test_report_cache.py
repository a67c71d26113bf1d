"""The report's sections kept in the analytics file (analytics/section_cache.py, issue 13): reused when
nothing changed, recomputed after any change to the store, the settings, the benchmark asked for or the
code, and in every case the same page as a report computed from scratch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from playlisteval.analytics import Analytics, report, section_cache, section_threads
from playlisteval.analytics.tabular import Section
from playlisteval.config import Settings
from playlisteval.eval.runs import drop_run
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import JudgeRun, Judgment, ModelCall
from tests import analytics_fixtures
from tests.helpers import project

GENERATED = re.compile(r"(<th>Generated</th><td>)[^<]*")


@pytest.fixture
def store(tmp_path: Path) -> tuple[Settings, Engine]:
    settings = project(tmp_path)
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    return settings, engine


class Counted:
    """build_sections, counting the reports that computed their sections."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = report.build_sections

        def counted(*args: Any, **kwargs: Any) -> list[Section]:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(report, "build_sections", counted)


def page(settings: Settings, engine: Engine, out: Path, *, file: bool = True, benchmark: str | None = None,
         extra: Any = ()) -> str:
    with Analytics(engine, settings, file=file) as an:
        report.write_report(an, settings, out, benchmark, extra=extra)
    # the provenance's generation time (issue 22) is this report's own, the one line that may differ
    return GENERATED.sub(r"\1(now)", out.read_text(encoding="utf-8"))


def fresh(settings: Settings, engine: Engine, out: Path) -> str:
    """The page computed from scratch: memory only, no cache read or written."""
    return page(settings, engine, out, file=False)


def test_unchanged_store_reuses_the_sections_and_gives_the_same_page(
        store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, engine = store
    counted = Counted(monkeypatch)
    first = page(settings, engine, tmp_path / "a.html")
    assert counted.calls == 1
    second = page(settings, engine, tmp_path / "b.html")
    assert counted.calls == 1, "nothing changed: the sections come from the cache"
    assert second == first == fresh(settings, engine, tmp_path / "c.html")
    assert counted.calls == 2  # the memory-only report computed its own


def _new_run(engine: Engine) -> None:
    """A second pass of the last run under another judge name (what another `eval judge` adds)."""
    with transaction(engine) as s:
        last = s.execute(select(JudgeRun).order_by(JudgeRun.id.desc())).scalars().first()  # type: ignore[union-attr]
        assert last is not None
        new = JudgeRun(**{**last.model_dump(exclude={"id"}), "judge": last.judge + "-again", "created_at": 1e9})
        s.add(new)
        s.flush()
        for j in s.execute(select(Judgment).where(Judgment.run_id == last.id)).scalars().all():
            s.add(Judgment(**{**j.model_dump(exclude={"id"}), "run_id": new.id}))


def _item_state(engine: Engine) -> None:
    with engine.begin() as conn:  # a small table re-read whole: one item leaves the selection
        conn.execute(text("UPDATE item SET state = 'rejected' WHERE id = (SELECT min(id) FROM item)"))


def _ledger_row(engine: Engine) -> None:
    with transaction(engine) as s:  # one more paid call in the ledger (the cost tables)
        s.add(ModelCall(request_hash="more", role="J", provider="sim", model="judge", purpose="eval", status="ok",
                        usd=1.25))


def _dropped_run(engine: Engine) -> None:
    with engine.connect() as conn:  # `eval drop`: a run and its judgments deleted
        last = conn.execute(text("SELECT max(id) FROM judge_run")).scalar_one()
    drop_run(engine, last)


@pytest.mark.parametrize("change", [_new_run, _item_state, _ledger_row, _dropped_run])
def test_a_changed_store_recomputes(change: Any, store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, engine = store
    before = page(settings, engine, tmp_path / "a.html")
    counted = Counted(monkeypatch)
    change(engine)
    after = page(settings, engine, tmp_path / "b.html")
    assert counted.calls == 1, "the store changed: the sections are computed again"
    assert after == fresh(settings, engine, tmp_path / "c.html")
    again = page(settings, engine, tmp_path / "d.html")
    assert counted.calls == 2 and again == after  # and kept for the next report
    if change is not _item_state:  # a rejected item shows nowhere when no pair of it was judged
        assert after != before


def test_settings_benchmark_and_code_are_part_of_the_key(store: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    settings, engine = store
    page(settings, engine, tmp_path / "a.html")
    counted = Counted(monkeypatch)
    fewer = project(tmp_path, analytics__bootstrap_resamples=500)
    page(fewer, engine, tmp_path / "b.html")
    assert counted.calls == 1
    page(fewer, engine, tmp_path / "c.html", benchmark="bench-1")
    assert counted.calls == 2
    monkeypatch.setattr(section_cache, "code_version", lambda: "another version")
    page(fewer, engine, tmp_path / "d.html", benchmark="bench-1")
    assert counted.calls == 3


def test_extra_sections_are_made_by_every_report(store: Any, tmp_path: Path) -> None:
    settings, engine = store
    made: list[int] = []

    def extra(_settings: Settings) -> Section:
        made.append(1)
        return Section("human", f"Human study {len(made)}")

    first = page(settings, engine, tmp_path / "a.html", extra=[extra])
    second = page(settings, engine, tmp_path / "b.html", extra=[extra])
    assert len(made) == 2 and "Human study 1" in first and "Human study 2" in second
    assert second.index('id="human"') < second.index('id="hardest"')


def test_postgresql_store_reuses_and_recomputes(tmp_path: Path, request: pytest.FixtureRequest,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    settings = project(tmp_path, store__url=request.getfixturevalue("pg_url"))
    engine = open_store(settings)
    analytics_fixtures.build(engine)
    counted = Counted(monkeypatch)
    first = page(settings, engine, tmp_path / "a.html")
    assert page(settings, engine, tmp_path / "b.html") == first and counted.calls == 1
    _new_run(engine)
    after = page(settings, engine, tmp_path / "c.html")
    assert counted.calls == 2 and after != first and after == fresh(settings, engine, tmp_path / "d.html")


def test_content_hashes_are_kept_with_the_synced_state(store: Any, tmp_path: Path) -> None:
    """The tables' hashes are read back while the mirror's last sync is of the store as it is now (issue 26:
    hashing read every row), and made again once the store changed."""
    settings, engine = store
    page(settings, engine, tmp_path / "a.html")
    with Analytics(engine, settings) as an:
        names = section_cache._tables(an)  # the copies as the file holds them (the ledger as its groups)
        hashed = section_cache._content(an, names)
        an.con.execute(f"UPDATE {section_cache.MEMO} SET content = '[[\"marked\", 0, \"0\"]]'")
    with Analytics(engine, settings) as an:  # nothing changed: what was kept, not a new hash
        assert section_cache._content(an, names) == [["marked", 0, "0"]]
    _item_state(engine)
    with Analytics(engine, settings) as an:
        again = section_cache._content(an, names)
    assert again != [["marked", 0, "0"]] and [r[0] for r in again] == [r[0] for r in hashed]
    assert again != hashed  # the item table's row changed


def test_sections_computed_side_by_side_are_the_ones_computed_one_by_one(store: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """build_sections computes the sections on section_threads.THREADS threads (issue 43): the sections must
    be the ones a single thread computes, in the same order."""
    settings, engine = store
    with Analytics(engine, settings, file=False) as an:
        bench = report.choose_benchmark(an, None)
        monkeypatch.setattr(section_threads, "THREADS", 1)
        alone = report.build_sections(an, settings, bench)
        monkeypatch.setattr(section_threads, "THREADS", 4)
        together = report.build_sections(an, settings, bench)
    assert len(alone) > 10 and [s.id for s in together] == [s.id for s in alone]
    assert together == alone


def test_the_sections_imports_run_while_the_store_is_copied_only_when_it_is(store: Any) -> None:
    """``meanwhile`` (section_threads.import_sections in `playlisteval report`) runs on another thread during a
    sync that copies rows, and not at all when nothing changed since the last one (a kept report imports
    nothing it does not use, issue 26)."""
    import threading

    settings, engine = store
    seen: list[str] = []
    with Analytics(engine, settings, meanwhile=lambda: seen.append(threading.current_thread().name)):
        pass
    assert seen == ["analytics-meanwhile"]
    with Analytics(engine, settings, meanwhile=lambda: seen.append("again")) as an:
        assert an.sync is not None and set(an.sync.actions.values()) == {"unchanged"}
    assert seen == ["analytics-meanwhile"]
