"""SPEC C2.1's windows draw their videos from the playlist without reading it all (build/inputs.py, issue 26):
the same video as a draw from the list of them, on SQLite and PostgreSQL, with the fallback to the other
clip's video when the playlist holds nothing else."""

from __future__ import annotations

import random

import pytest
from sqlalchemy.engine import Engine

from playlisteval.build.inputs import _OtherVideos
from playlisteval.store import transaction
from playlisteval.store.tables import Domain, Playlist, Video


@pytest.fixture
def engine(store_engine: Engine) -> Engine:
    return store_engine  # conftest: a migrated store, on SQLite and on PostgreSQL


def _playlist(engine: Engine, statuses: list[str]) -> tuple[int, list[tuple[int, float, str, str]]]:
    """A playlist of videos with these statuses (a second playlist beside it); (its id, its videos)."""
    with transaction(engine) as s:
        s.add(Domain(name="d"))
        s.flush()
        mine, theirs = Playlist(domain_id=1, name="p", source="s"), Playlist(domain_id=1, name="q", source="s")
        s.add_all([mine, theirs])
        s.flush()
        videos = []
        for i, status in enumerate(statuses):
            for playlist in (theirs, mine):  # interleaved ids: the other playlist's videos sit between
                video = Video(playlist_id=playlist.id or 0, path=f"/{playlist.name}{i}.mp4", title=f"{i}",
                              duration=30.0 + i, status=status, index_report=f'{{"run": {i}}}')
                s.add(video)
                s.flush()
                if playlist is mine:
                    videos.append((video.id or 0, 30.0 + i, f'{{"run": {i}}}', status))
        return mine.id or 0, videos


def test_a_draw_is_the_one_from_the_list_of_the_other_indexed_videos(engine: Engine) -> None:
    playlist_id, videos = _playlist(engine, ["indexed", "indexed", "failed", "indexed", "indexed", "indexed"])
    ids = [v[0] for v in videos]
    for left_out in [(ids[0], ids[1]), (ids[3], ids[3]), (ids[5], ids[0])]:
        listed = [(v, d, r) for v, d, r, status in videos if status == "indexed" and v not in left_out]
        with engine.connect() as conn:
            lazy = _OtherVideos(conn, playlist_id, left_out)
            assert len(lazy) == len(listed) and list(lazy) == listed
            for seed in range(20):
                assert random.Random(seed).choice(lazy) == random.Random(seed).choice(listed)


def test_a_playlist_of_only_the_clips_videos_has_nothing_else_to_draw(engine: Engine) -> None:
    playlist_id, videos = _playlist(engine, ["indexed", "indexed"])
    (a, *_), (b, *_) = videos
    with engine.connect() as conn:
        assert len(_OtherVideos(conn, playlist_id, (a, b))) == 0
        assert list(_OtherVideos(conn, playlist_id, (a, a))) == [(b, 31.0, '{"run": 1}')]
        with pytest.raises(IndexError):
            _OtherVideos(conn, playlist_id, (a, b))[0]
