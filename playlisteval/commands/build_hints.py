"""Why `build` or `status` has nothing to show, and what to run (issue 14: no empty result without a reason)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from playlisteval.config import Settings
from playlisteval.store import open_store
from playlisteval.store.engine import read_core
from playlisteval.store.states import WORKING


def _count(s: Any, sql: str) -> int:
    """One count in SQL text (`status` reads without the ORM's table classes, issue 26)."""
    return int(s.execute(text(sql)).scalar() or 0)


def _counts(settings: Settings) -> tuple[int, int]:
    with read_core(open_store(settings)) as s:
        return _count(s, "SELECT count(*) FROM video"), _count(s, "SELECT count(*) FROM seed")


def _no_seeds(videos: int) -> str:
    if not videos:
        return ("the collection is empty: `playlisteval add DOMAIN FOLDER…` (or `playlisteval synth videos` then "
                "`playlisteval add --manifest videos/manifest.csv`), then `playlisteval index`")
    return ("there are no seeds to build from: `playlisteval index` makes them (its hint says why it made none, "
            "e.g. segments too long for short videos)")


def no_seeds_reason(settings: Settings) -> str:
    """Why the store has no seeds, as far as the store can tell (issue 22: not "run `index`" when it ran)."""
    with read_core(open_store(settings)) as s:
        videos = _count(s, "SELECT count(*) FROM video")
        indexed = _count(s, "SELECT count(*) FROM video WHERE status = 'indexed'")
        segments = _count(s, "SELECT count(*) FROM segment")
    if not videos:
        return "no seeds: the collection is empty (`playlisteval add DOMAIN FOLDER…`, then `playlisteval index`)"
    if not indexed:
        return f"no seeds: none of the {videos} video(s) is indexed yet (`playlisteval index`)"
    cfg = settings.index
    if segments < 2:
        return (f"no seeds: the {indexed} indexed video(s) gave {segments} segment(s) — too short for [index] "
                f"segment_min_s = {cfg.segment_min_s:g}?")
    band = f"{cfg.seed_similarity_min:g}..{cfg.seed_similarity_max:g}"
    return (f"no seeds: no pair of the {segments} segment(s) of the {indexed} indexed video(s) passed the "
            f"similarity band [index] seed_similarity_min..max = {band}")


def empty_build_hint(settings: Settings, outcome: Any, max_items: int | None) -> str | None:
    """Why a build created and ran nothing."""
    from playlisteval.build.status import status as read_status

    videos, seeds = _counts(settings)
    if not seeds:
        return _no_seeds(videos)
    st = read_status(settings)
    bound = max_items if max_items is not None else settings.build.max_items
    if bound and st.items >= bound and st.items < seeds:
        return (f"the store holds {st.items} item(s), the bound set by --max-items / [build] max_items ({bound}): "
                "raise it to build more")
    if st.items >= seeds:
        settled = ", ".join(f"{n} {state}" for state, n in sorted(st.states.items()) if n)
        return (f"every one of the {seeds} seed(s) has its item already ({settled}): nothing was left to run. "
                "`playlisteval status` shows them; `playlisteval select` draws the benchmark from the accepted ones")
    return ("no seed could take a new item under the bounds of [build] target_accepted_per_domain / "
            "max_items_per_segment")


def status_hint(settings: Settings, st: Any) -> str | None:
    """What to run next when `status` shows nothing, or items left unfinished with no build running."""
    if not st.items:
        videos, seeds = _counts(settings)
        return _no_seeds(videos) if not seeds else f"no items yet: `playlisteval build` makes one for each of " \
                                                   f"the {seeds} seed(s)"
    if st.paused:
        return "paused by the budget: `playlisteval resume --budget USD` goes on"
    working = sum(st.states.get(s.value, 0) for s in WORKING)
    if working:
        return (f"{working} item(s) not finished: if no build or worker is running, `playlisteval resume` goes on "
                "(`status --watch` follows a running one)")
    return None
