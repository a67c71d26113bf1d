"""Selection and evaluation pieces on their own: verdicts, sides, corpora, evidence, ranking, shortcuts,
options, and the merged audio track (real ffmpeg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.eval import shortcuts
from playlisteval.eval.corpus import CorpusChunk, CorpusVideo, GoldSegment, Question, frozen_corpus, oracle_corpus
from playlisteval.eval.evidence import Evidence, Frame, mmss, retrieved, uniform
from playlisteval.eval.media import merge_audio, played_seconds
from playlisteval.eval.options import JudgeOptions, parse_size
from playlisteval.eval.retrieval import DomainSegments, rank_segments
from playlisteval.eval.verdicts import NO_VERDICT, REFUSAL, VERDICT, outcome_of, parse_verdict, score
from playlisteval.select.pairs import rating_pairs, side_of
from tests.index_helpers import make_video


# -- verdicts (SPEC G4) ---------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "verdict"), [
    ("Model A is better.\n[[A]]", "A"),
    ("[[B]]", "B"),
    ("At first [[A]], but on reflection [[B]]", "B"),  # the last one wins
    ("[[A]][[B]][[A]]", "A"),
    ("Format: [[A]] if A is better, [[B]] if B is better.", "B"),  # an echoed format line: still the last
    ("[[[A]]]", "A"),
    ("[[a]]", None),  # only the exact tokens count
    ("[[ A ]]", None),
    ("[A]", None),
    ("Model A", None),
    ("[[C]]", None),
    ("[[AB]]", None),
    ("", None),
    (None, None),
    ("I'm sorry, but I can't help with that request.", None),
])
def test_the_verdict_parser_takes_the_last_exact_token(reply: str | None, verdict: str | None) -> None:
    assert parse_verdict(reply) == verdict


def test_no_verdict_scores_half_and_is_told_apart_from_a_refusal() -> None:
    assert score("A", True) == 1.0 and score("B", True) == 0.0 and score("B", False) == 1.0
    assert score(None, True) == score(None, False) == 0.5
    assert outcome_of("A") == VERDICT
    assert outcome_of(None) == NO_VERDICT
    assert outcome_of(None, "refusal") == REFUSAL


# -- pairs and sides (SPEC F1, G5) ----------------------------------------------------------------
def test_ten_pairs_with_gaps_four_three_two_one() -> None:
    pairs = rating_pairs()
    assert len(pairs) == 10 and len(set(pairs)) == 10
    gaps = [b - w for b, w in pairs]
    assert {g: gaps.count(g) for g in set(gaps)} == {1: 4, 2: 3, 3: 2, 4: 1}


def test_sides_are_a_fair_seeded_coin_independent_of_the_gates_draw() -> None:
    first = [side_of(7, p) for p in range(4000)]
    assert first == [side_of(7, p) for p in range(4000)]  # the same seed, the same sides
    assert 0.47 < sum(first) / len(first) < 0.53
    assert first != [side_of(8, p) for p in range(4000)]
    gate = [side_of(7, p, draw="F2") for p in range(4000)]
    agree = sum(a == b for a, b in zip(first, gate, strict=True)) / len(first)
    assert 0.47 < agree < 0.53  # the difficulty gate's coin says nothing about the benchmark's


# -- corpora (SPEC G2) ----------------------------------------------------------------------------
def video(video_id: int, order: int, n_chunks: int, chunk_s: float = 30.0, text: str = "") -> CorpusVideo:
    chunks = tuple(CorpusChunk(video_id * 1000 + i, video_id, i, i * chunk_s, (i + 1) * chunk_s,
                               text or f"said in {video_id}/{i}") for i in range(n_chunks))
    return CorpusVideo(video_id, order, f"/v/{video_id}.mp4", "h264", chunks)


def question(item_id: int, gold: tuple[tuple[int, int, int], tuple[int, int, int]]) -> Question:
    segs = tuple(GoldSegment(100 + i, v, a, b) for i, (v, a, b) in enumerate(gold))
    return Question(item_id, 1, "D", "which?", (segs[0], segs[1]))


def test_frozen_corpora_contain_the_gold_fit_their_hours_nest_and_never_change() -> None:
    videos = [video(i, i, 120) for i in range(1, 41)]  # 40 videos of an hour each
    q = question(5, ((3, 0, 59), (31, 60, 119)))
    ten = frozen_corpus(videos, q, 10, seed=1)
    day = frozen_corpus(videos, q, 24, seed=1)
    ids10, ids24 = [v.video_id for v in ten], [v.video_id for v in day]
    assert {3, 31} <= set(ids10) and len(ten) == 10 and len(day) == 24
    assert set(ids10) <= set(ids24)  # a shorter scope is inside a longer one
    assert ids10 == sorted(ids10, key=lambda i: i)  # playlist order kept
    assert ids10 == [v.video_id for v in frozen_corpus(videos, q, 10, seed=1)]
    other = frozen_corpus(videos, question(6, ((3, 0, 59), (31, 60, 119))), 10, seed=1)
    assert [v.video_id for v in other] != ids10  # each question has its own draw
    tiny = frozen_corpus(videos, q, 0.5, seed=1)
    assert [v.video_id for v in tiny] == [3, 31]  # the gold is kept even past the budget


def test_the_oracle_corpus_is_the_two_gold_segments() -> None:
    videos = [video(1, 0, 10), video(2, 1, 10)]
    parts = oracle_corpus(videos, question(1, ((2, 2, 4), (1, 6, 9))))
    assert [(p.video_id, [c.idx for c in p.chunks]) for p in parts] == [(1, [6, 7, 8, 9]), (2, [2, 3, 4])]


# -- evidence (SPEC G1, G3) -----------------------------------------------------------------------
def test_uniform_frames_are_evenly_spaced_over_the_corpus_end_to_end() -> None:
    videos = [video(1, 0, 4), video(2, 1, 4)]  # 240 s in all
    ev = uniform(videos, 8)
    assert [(f.video_id, f.t) for f in ev.frames] == [
        (1, 15.0), (1, 45.0), (1, 75.0), (1, 105.0), (2, 15.0), (2, 45.0), (2, 75.0), (2, 105.0)]
    assert [c.idx for c in ev.chunks] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert len(uniform(videos, 128).frames) == 128
    assert ev.corpus_seconds == 240.0 and ev.corpus_videos == 2


class FakeRetriever:
    """Scores chunk ids from a table; what `retrieved` needs of a Retriever."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        self.embedder = type("E", (), {"name": "fake"})()

    def top_chunks(self, question: Question, videos: list[CorpusVideo], k: int,
                   whole_domain: bool) -> list[tuple[int, float]]:
        ids = [c.chunk_id for v in videos for c in v.chunks]
        return sorted(((i, self.scores.get(i, 0.0)) for i in ids), key=lambda x: (-x[1], x[0]))[:k]


def test_retrieved_frames_are_the_top_chunks_shown_in_playlist_then_time_order() -> None:
    videos = [video(1, 0, 6), video(2, 1, 6)]
    best = {2004: 0.9, 1005: 0.8, 1001: 0.7, 2000: 0.6, 1003: 0.1}
    ev = retrieved(FakeRetriever(best), question(1, ((1, 0, 1), (2, 0, 1))), videos, 8, 2, "domain")  # type: ignore[arg-type]
    assert [c.chunk_id for c in ev.chunks] == [1001, 1005, 2000, 2004]  # top 4, chronological
    assert [(f.video_id, f.t) for f in ev.frames] == [
        (1, 37.5), (1, 52.5), (1, 157.5), (1, 172.5), (2, 7.5), (2, 22.5), (2, 127.5), (2, 142.5)]
    assert len(retrieved(FakeRetriever(best), question(1, ((1, 0, 1), (2, 0, 1))), videos, 128, 2,  # type: ignore[arg-type]
                         "domain").frames) == 24  # a corpus of 12 chunks has no 64 to give


def test_the_transcript_block_numbers_videos_by_first_appearance() -> None:
    a, b = video(7, 0, 3, text="hello there"), video(3, 1, 200, text="later on")
    chunks = [b.chunks[150], a.chunks[1], b.chunks[151]]
    ev = Evidence("retrieved", "domain", [Frame(c.video_id, "", None, c.start, c.chunk_id) for c in chunks],
                  chunks, 2, 0.0)
    assert ev.transcript_block().splitlines() == [
        "[Video 1 @ 75:00] later on", "[Video 2 @ 0:30] hello there", "[Video 1 @ 75:30] later on"]
    assert mmss(3725.9) == "62:05"
    record = ev.record()
    assert record["frames"] == [[3, 4500.0], [7, 30.0], [3, 4530.0]] and record["chunks"] == [3150, 7001, 3151]


# -- retriever runs (SPEC R1) ---------------------------------------------------------------------
def test_segments_rank_by_the_mean_of_their_three_best_chunks_ties_to_the_lower_id() -> None:
    matrix = np.eye(4, dtype=np.float32)  # chunk i is basis vector i
    query = np.array([0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    rows = np.array([[0, 3, -1, -1], [1, 2, -1, -1], [2, 1, 3, 0]])
    ids = np.array([12, 11, 10])
    order, scores = rank_segments(DomainSegments(ids, rows, matrix), query, 3)
    # means of the best three: seg 10 (0.9, .5, .5) = .633; seg 12 (.9, .1) = .5; seg 11 (.5, .5) = .5
    assert order.tolist() == [10, 11, 12]
    assert scores.tolist() == pytest.approx([1.9 / 3, 0.5, 0.5])


# -- shortcut judges ------------------------------------------------------------------------------
def test_shortcut_judges_follow_their_one_rule() -> None:
    long_a, short_b = "one two three four five", "one two"
    assert shortcuts.judge("shortcut/always-a", 1, 5, short_b, long_a)[0] == "A"
    assert shortcuts.judge("shortcut/longer-answer", 1, 5, long_a, short_b)[0] == "A"
    assert shortcuts.judge("shortcut/longer-answer", 1, 5, short_b, long_a)[0] == "B"
    said = "the narrator speaks of glaciers and sediment"
    assert shortcuts.judge("shortcut/transcript-overlap", 1, 5, "a red cube", "glaciers with sediment", said)[0] == "B"
    coins = [shortcuts.judge("shortcut/random", 3, p, "x", "y")[0] for p in range(2000)]
    assert coins == [shortcuts.judge("shortcut/random", 3, p, "x", "y")[0] for p in range(2000)]
    assert 0.46 < coins.count("A") / len(coins) < 0.54
    with pytest.raises(ConfigError, match="unknown shortcut"):
        shortcuts.judge("shortcut/psychic", 1, 1, "a", "b")


# -- run options ----------------------------------------------------------------------------------
def test_run_options_default_to_settings_and_reject_what_cannot_work() -> None:
    s = Settings()
    o = JudgeOptions.from_settings(s)
    assert (o.evidence, o.scope, o.frames, o.frames_per_chunk, o.size) == ("retrieved", "domain", 128, 2, (640, 480))
    assert JudgeOptions.from_settings(s, evidence="oracle").scope == "oracle"
    assert "audio_speed" not in o.as_settings()
    assert JudgeOptions.from_settings(s, modality="frames+audio", audio_speed=2.0).as_settings()["audio_speed"] == 2.0
    with pytest.raises(ConfigError, match="scope is 'oracle'"):
        JudgeOptions.from_settings(s, evidence="oracle", scope="domain")
    with pytest.raises(ConfigError, match="unknown scope"):
        JudgeOptions.from_settings(s, scope="1h")
    s.eval.scopes["1h"] = 1.0
    assert JudgeOptions.from_settings(s, scope="1h").scope == "1h"
    with pytest.raises(ConfigError, match="modality"):
        JudgeOptions.from_settings(s, modality="smell")
    assert parse_size("480x360") == (480, 360) and parse_size("720×540") == (720, 540)
    with pytest.raises(ConfigError):
        parse_size("big")


# -- the merged audio track (SPEC G3), with real ffmpeg ---------------------------------------------
def test_chunk_audio_merges_into_one_track_with_pauses_at_speed(tmp_path: Path) -> None:
    loud = str(make_video(tmp_path / "loud.mp4", 12.0, audio="sine"))
    mute = str(make_video(tmp_path / "mute.mp4", 6.0, audio=None))
    pieces = [(loud, 0.0, 4.0), (mute, 1.0, 4.0), (loud, 6.0, 10.0)]  # 11 s of chunks, two pauses
    for speed, suffix in ((1.0, "mp3"), (2.0, "wav")):
        out = merge_audio(pieces, tmp_path / f"track-{speed}.{suffix}", speed=speed, pause_s=0.6)
        expected = played_seconds(pieces, speed, 0.6)
        assert expected == pytest.approx(11.0 / speed + 1.2)
        assert _duration(out) == pytest.approx(expected, abs=0.15)
    before = (tmp_path / "track-1.0.mp3").stat().st_mtime_ns
    assert merge_audio(pieces, tmp_path / "track-1.0.mp3", speed=1.0, pause_s=0.6).stat().st_mtime_ns == before
    with pytest.raises(ConfigError, match="audio format"):
        merge_audio(pieces, tmp_path / "track.xyz")


def _duration(path: Path) -> float:
    import subprocess

    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


# -- the store: columns and table added for evaluation (migrations 0040–0046) -------------------------
def test_a_store_from_before_the_evaluation_columns_upgrades_in_place(tmp_path: Path) -> None:
    import sqlite3

    from sqlalchemy import inspect

    from playlisteval.store import make_engine, migrate
    from playlisteval.store.migrations import MIGRATIONS

    engine = make_engine(f"sqlite:///{tmp_path}/old.db")
    migrate(engine)
    added = {"judgment": ["evidence", "outcome", "call_id"], "judge_run": ["modality", "finished_at"],
             "retrieval_run": ["benchmark_id", "dims", "chunks", "index_bytes", "latency_ms", "finished_at"],
             "ranking": ["segment1_id", "segment2_id", "score1", "score2", "top_segments"]}
    ours = [name for name, _ in MIGRATIONS if "0040" <= name[:4] <= "0049"]
    with engine.begin() as conn:
        for table, columns in added.items():
            for column in columns:
                conn.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.exec_driver_sql("DROP TABLE benchmark_question")
        conn.exec_driver_sql("DELETE FROM schema_migration WHERE name >= '0040' AND name < '0050'")
    assert migrate(engine) == ours
    for table, columns in added.items():
        assert set(columns) <= {c["name"] for c in inspect(engine).get_columns(table)}
    engine.dispose()
    with sqlite3.connect(tmp_path / "old.db") as db:  # a row written without the new columns reads their defaults
        db.execute("INSERT INTO judgment (run_id, pair_id, a_is_better, score, raw) VALUES (1, 1, 1, 1, '')")
        row = db.execute("SELECT evidence, outcome, call_id FROM judgment").fetchone()
    assert tuple(row) == ("{}", "verdict", 0)
