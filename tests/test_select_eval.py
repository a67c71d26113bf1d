"""End to end over a real synthetic collection (issue 6, items 1–4): synth → add → index → build →
`select` → `export` → `eval judge` (the sim judge and the shortcut judges, forward and swapped) →
`eval retrieve`, through the command line, checked against the store."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from PIL import Image
from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.cli import main
from playlisteval.config import Settings
from playlisteval.index.embedders import get_embedder
from playlisteval.index.vectors import decode
from playlisteval.select.pairs import pair_texts, side_of
from playlisteval.store import open_store
from tests.helpers import QUIET_SIM, built_synthetic_project, env_for

OVERRIDES: dict[str, object] = dict(
    index__embedder="hash", index__ocr="none", index__segment_min_s=60, index__segment_max_s=90, eval__frames=16,
    select__questions_per_domain=0, select__pairs_per_domain=30, **QUIET_SIM)
SHORTCUTS = ["shortcut/random", "shortcut/always-a", "shortcut/longer-answer", "shortcut/transcript-overlap"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return built_synthetic_project(tmp_path_factory.mktemp("proj"), **OVERRIDES)


def cli(settings: Settings, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--project", str(settings.root), *args], env=env_for(**OVERRIDES),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("{")]
    return [json.loads(line) for line in lines]


def rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params))


@pytest.fixture(scope="module")
def selected(built: Settings) -> dict[str, Any]:
    [out] = cli(built, "select", "--json")
    return out  # type: ignore[no-any-return]


def test_select_pairs_every_sampled_question_and_keeps_what_a_weak_judge_gets_wrong(
        built: Settings, selected: dict[str, Any]) -> None:
    engine = open_store(built)
    accepted = rows(engine, "SELECT id FROM item WHERE state IN ('accepted', 'selected', 'too_easy')")
    assert len(accepted) >= 10 and selected["created"]
    pairs = rows(engine, "SELECT item_id, gap, kept, difficulty FROM pair")
    by_item: dict[int, list[int]] = defaultdict(list)
    for item_id, gap, _, _ in pairs:
        by_item[item_id].append(gap)
    sampled = rows(engine, "SELECT item_id FROM benchmark_question WHERE benchmark_id = :b",
                   b=selected["benchmark_id"])
    assert set(by_item) == {i for (i,) in sampled}  # pairs are made for the sampled questions
    common = min(d["accepted"] for d in selected["domains"].values())  # questions_per_domain = 0
    assert all(d["sampled"] == common for d in selected["domains"].values())
    assert all(Counter(gaps) == {1: 4, 2: 3, 3: 2, 4: 1} for gaps in by_item.values())
    for _, _, kept, raw in pairs:
        record = json.loads(raw)
        solved = []
        for role in ("F_first", "F_second"):
            judged = record[role]
            assert judged["correct"] == (judged["outcome"] == "verdict"
                                         and (judged["verdict"] == "A") == record["a_is_better"])
            solved.append(judged["correct"])
        assert bool(kept) == (not all(solved))  # kept iff at least one weak judge fails
        assert record["evidence"]["mode"] == "retrieved" and len(record["evidence"]["frames"]) == 16
    drawn = rows(engine, "SELECT bp.pair_id, bp.a_is_better, p.kept, p.item_id FROM benchmark_pair bp "
                         "JOIN pair p ON p.id = bp.pair_id")
    assert drawn and all(kept for _, _, kept, _ in drawn)
    keys = {pid: t.key for pid, t in pair_texts(engine, [pid for pid, *_ in drawn]).items()}
    assert all(bool(a) == side_of(built.project.seed, keys[pid]) for pid, a, _, _ in drawn)  # keyed by content
    per_domain = selected["domains"]
    assert all(d["pairs"] == min(30, d["kept_pairs"]) for d in per_domain.values())
    assert sum(d["pairs"] for d in per_domain.values()) == len(drawn) == selected["pairs"]
    # the items' moves, through the state machine
    states = dict(rows(engine, "SELECT id, state FROM item"))
    with_drawn = {item for _, _, _, item in drawn}
    kept_any = {item for item, _, kept, _ in pairs if kept}
    for item, state in states.items():
        if item in with_drawn:
            assert state == "selected"
        elif item in by_item and item not in kept_any:
            assert state == "too_easy"
        else:
            assert state == "accepted"  # not sampled, or sampled with kept pairs none of which was drawn
    events = Counter(e for (e,) in rows(engine, "SELECT event FROM item_event WHERE event IN ('selected', 'too_easy')"))
    assert events["selected"] == len(with_drawn) == selected["selected"]
    assert all(p == "select" for (p,) in rows(engine, "SELECT DISTINCT purpose FROM model_call WHERE role LIKE 'F_%'"))


def test_selecting_again_changes_nothing_and_another_name_draws_the_same_pairs(
        built: Settings, selected: dict[str, Any]) -> None:
    engine = open_store(built)
    before = rows(engine, "SELECT * FROM benchmark_pair ORDER BY id")
    calls = rows(engine, "SELECT COUNT(*) FROM model_call")
    [again] = cli(built, "select", "--json")
    assert not again["created"] and again["pairs"] == selected["pairs"]
    assert rows(engine, "SELECT * FROM benchmark_pair ORDER BY id") == before
    assert rows(engine, "SELECT COUNT(*) FROM model_call") == calls
    [other] = cli(built, "select", "--name", "second", "--json")
    assert other["created"]
    first = rows(engine, "SELECT pair_id, a_is_better FROM benchmark_pair WHERE benchmark_id = :b ORDER BY pair_id",
                 b=selected["benchmark_id"])
    second = rows(engine, "SELECT pair_id, a_is_better FROM benchmark_pair WHERE benchmark_id = :b ORDER BY pair_id",
                  b=other["benchmark_id"])
    assert first == second  # seeded draws from the same store: the same benchmark


def test_export_writes_parquet_jsonl_and_a_card_that_datasets_loads(built: Settings, selected: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "bench"
    cli(built, "export", str(out))
    table = pq.read_table(out / "data" / "test.parquet")
    assert table.num_rows == selected["pairs"]
    lines = (out / "data" / "test.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == table.to_pylist()
    row = table.to_pylist()[0]
    assert row["label"] == ("A" if row["a_is_better"] else "B")
    assert row["chosen_rating"] - row["rejected_rating"] == row["gap"]
    assert (row["answer_a"], row["answer_b"]) == ((row["chosen"], row["rejected"]) if row["a_is_better"]
                                                  else (row["rejected"], row["chosen"]))
    assert "@" not in row["chosen"] and "@" in row["gold_answer"]  # citations only in the gold as written
    assert [s["clip"] for s in row["segments"]] == [1, 2]
    card = (out / "README.md").read_text()
    assert "path: data/test.parquet" in card and "Longer answer wins (%)" in card
    stats = json.loads((out / "stats.json").read_text())
    assert stats["pairs"] == table.num_rows and sum(stats["pairs_by_gap"].values()) == table.num_rows
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("parquet", data_files=str(out / "data" / "test.parquet"),
                               cache_dir=str(tmp_path / "hf"))["train"]
    assert ds.num_rows == table.num_rows and ds[0]["pair_id"] == row["pair_id"]


def test_judge_runs_forward_and_swapped_record_sides_verdicts_and_evidence(built: Settings,
                                                                            selected: dict[str, Any]) -> None:
    engine = open_store(built)
    judges = ["sim/judge", *SHORTCUTS]
    forward = cli(built, "eval", "judge", *sum((["--judge", j] for j in judges), []), "--json")
    swapped = cli(built, "eval", "judge", *sum((["--judge", j] for j in judges), []), "--swap", "--json")
    sides = dict(rows(engine, "SELECT pair_id, a_is_better FROM benchmark_pair WHERE benchmark_id = :b",
                      b=selected["benchmark_id"]))
    for run, flipped in [(r, False) for r in forward] + [(r, True) for r in swapped]:
        judged = rows(engine, "SELECT pair_id, a_is_better, verdict, score, outcome, evidence, call_id FROM judgment "
                              "WHERE run_id = :r", r=run["run_id"])
        assert len(judged) == len(sides) == run["pairs"]
        for pair_id, a_is_better, verdict, value, outcome, _, _ in judged:
            assert bool(a_is_better) == (bool(sides[pair_id]) != flipped)
            expected = 0.5 if verdict is None else float((verdict == "A") == bool(a_is_better))
            assert value == expected and (verdict is None) == (outcome != "verdict")
        assert run["accuracy"] == pytest.approx(sum(j[3] for j in judged) / len(judged))
        if run["judge"] == "shortcut/always-a":
            assert {j[2] for j in judged} == {"A"}
            assert run["accuracy"] == pytest.approx(np.mean([bool(j[1]) for j in judged]))
    sim_run = forward[0]
    calls = rows(engine, "SELECT DISTINCT purpose, run_id, role FROM model_call WHERE run_id = :r", r=sim_run["run_id"])
    assert calls == [("eval", sim_run["run_id"], "G")]
    # the same command again continues the same runs: nothing new is judged or paid for
    paid = rows(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'")
    assert [r["run_id"] for r in cli(built, "eval", "judge", "--judge", "sim/judge", "--json")] == [sim_run["run_id"]]
    assert rows(engine, "SELECT COUNT(*) FROM model_call WHERE status = 'ok'") == paid
    assert rows(engine, "SELECT COUNT(*) FROM judge_run WHERE judge = 'sim/judge'") == [(2,)]


def test_retrieved_evidence_is_the_top_chunks_in_playlist_order_with_real_frames(built: Settings,
                                                                                selected: dict[str, Any]) -> None:
    engine = open_store(built)
    [run] = cli(built, "eval", "judge", "--judge", "sim/judge", "--frames", "8", "--json")
    judged = rows(engine, "SELECT j.evidence, q.question, s.domain_id FROM judgment j JOIN pair p ON p.id = j.pair_id "
                          "JOIN item i ON i.id = p.item_id JOIN qa q ON q.id = i.current_qa_id "
                          "JOIN seed s ON s.id = i.seed_id WHERE j.run_id = :r", r=run["run_id"])
    order = {vid: k for k, (vid,) in enumerate(rows(
        engine, "SELECT v.id FROM video v JOIN playlist p ON p.id = v.playlist_id ORDER BY p.id, v.position, v.id"))}
    embedder = get_embedder("hash")
    for raw, question, domain_id in judged[:6]:
        ev = json.loads(raw)
        assert len(ev["chunks"]) == 4 and len(ev["frames"]) == 8  # 8 frames = 4 chunks x 2
        keys = [(order[v], t) for v, t in ev["frames"]]
        assert keys == sorted(keys)  # chronological within a video, playlist order across videos
        # an independent ranking of the domain's chunks by cosine similarity to the question
        vectors = rows(engine, "SELECT c.id, cv.vector FROM chunk c JOIN chunk_vector cv ON cv.chunk_id = c.id "
                               "JOIN video v ON v.id = c.video_id JOIN playlist p ON p.id = v.playlist_id "
                               "WHERE p.domain_id = :d AND cv.embedder = 'hash' ORDER BY c.id", d=domain_id)
        q = embedder.embed_texts([question])[0]
        sims = sorted(((-float(decode(blob) @ q), cid) for cid, blob in vectors))
        assert set(ev["chunks"]) == {cid for _, cid in sims[:4]}
        assert ev["transcript_lines"] == len(ev["chunks"])
    # the frames are JPEG files at the judge's size (640x360 synthetic video fits 640x480 as 640x360)
    frames = sorted((built.root / "media" / "frames").rglob("*.jpg"))
    assert frames and all(Image.open(f).size == (640, 360) for f in frames[:5])


def test_uniform_and_oracle_evidence_and_the_audio_stream(built: Settings, selected: dict[str, Any]) -> None:
    engine = open_store(built)
    [uni] = cli(built, "eval", "judge", "--judge", "sim/judge", "--evidence", "uniform", "--json")
    cli(built, "select", "--name", "tiny", "--pairs-per-domain", "2", "--json")  # audio is slow to make: few pairs
    [orc] = cli(built, "eval", "judge", "--judge", "sim/judge", "--benchmark", "tiny", "--evidence", "oracle",
                "--frames", "12", "--modality", "frames+audio", "--audio-speed", "1.5", "--json")
    [turns] = cli(built, "eval", "judge", "--judge", "sim/judge", "--benchmark", "tiny", "--modality", "audio",
                  "--audio-mode", "turns", "--json")
    assert orc["settings"]["scope"] == "oracle" and orc["settings"]["audio_speed"] == 1.5
    uniform_frames = {json.dumps(json.loads(r)["frames"]) for (r,) in rows(
        engine, "SELECT j.evidence FROM judgment j JOIN pair p ON p.id = j.pair_id JOIN item i ON i.id = p.item_id "
                "JOIN seed s ON s.id = i.seed_id WHERE j.run_id = :r AND s.domain_id = 1", r=uni["run_id"])}
    assert len(uniform_frames) == 1  # blind to the question: one set of frames per domain
    assert len(json.loads(uniform_frames.pop())) == 16
    for raw, s1, e1, v1, s2, e2, v2 in rows(
            engine, "SELECT j.evidence, g1.start, g1.end, g1.video_id, g2.start, g2.end, g2.video_id FROM judgment j "
                    "JOIN pair p ON p.id = j.pair_id JOIN item i ON i.id = p.item_id JOIN seed s ON s.id = i.seed_id "
                    "JOIN segment g1 ON g1.id = s.segment1_id JOIN segment g2 ON g2.id = s.segment2_id "
                    "WHERE j.run_id = :r", r=orc["run_id"]):
        ev = json.loads(raw)
        assert len(ev["frames"]) == 12 and ev["stream"] == "audio" and len(ev["audio"]) == 1
        assert all((v == v1 and s1 <= t < e1) or (v == v2 and s2 <= t < e2) for v, t in ev["frames"])
        assert Path(ev["audio"][0]).is_file() and ev["audio"][0].endswith(".mp3")
    for (raw,) in rows(engine, "SELECT evidence FROM judgment WHERE run_id = :r", r=turns["run_id"]):
        ev = json.loads(raw)
        assert not ev["frames_shown"] and len(ev["audio"]) == len(ev["chunks"]) == 8  # one part per chunk


def test_retriever_runs_store_the_gold_segments_ranks(built: Settings, selected: dict[str, Any]) -> None:
    engine = open_store(built)
    [summary] = cli(built, "eval", "retrieve", "--json")
    ranked = rows(engine, "SELECT item_id, rank1, rank2, n_segments, segment1_id, segment2_id, top_segments "
                          "FROM ranking WHERE run_id = :r", r=summary["run_id"])
    questions = rows(engine, "SELECT item_id FROM benchmark_question WHERE benchmark_id = :b",
                     b=selected["benchmark_id"])
    assert sorted(r[0] for r in ranked) == sorted(q for (q,) in questions)
    embedder = get_embedder("hash")
    for item_id, rank1, rank2, n, seg1, seg2, top in ranked:
        assert 1 <= rank1 <= n and 1 <= rank2 <= n and rank1 != rank2
        # an independent computation: every segment of the domain, the mean of its best three chunks
        [(question, domain_id)] = rows(engine, "SELECT q.question, s.domain_id FROM item i JOIN qa q ON "
                                               "q.id = i.current_qa_id JOIN seed s ON s.id = i.seed_id "
                                               "WHERE i.id = :i", i=item_id)
        q = embedder.embed_texts([question])[0]
        scored = []
        for seg_id, video_id, first, last in rows(
                engine, "SELECT g.id, g.video_id, g.first_chunk, g.last_chunk FROM segment g "
                        "JOIN video v ON v.id = g.video_id JOIN playlist p ON p.id = v.playlist_id "
                        "WHERE p.domain_id = :d AND g.embedder = 'hash'", d=domain_id):
            sims = sorted((float(decode(b) @ q) for (b,) in rows(
                engine, "SELECT cv.vector FROM chunk c JOIN chunk_vector cv ON cv.chunk_id = c.id "
                        "WHERE c.video_id = :v AND c.idx BETWEEN :a AND :b AND cv.embedder = 'hash'",
                v=video_id, a=first, b=last)), reverse=True)[:3]
            scored.append((-sum(sims) / len(sims), seg_id))
        expected = [seg for _, seg in sorted(scored)]
        assert n == len(expected)
        assert expected.index(seg1) + 1 == rank1 and expected.index(seg2) + 1 == rank2
        assert json.loads(top) == expected[:10]
    run = rows(engine, "SELECT embedder, dims, chunks, index_bytes, finished_at FROM retrieval_run WHERE id = :r",
               r=summary["run_id"])[0]
    assert run[0] == "hash" and run[1] == 512 and run[2] > 0 and run[3] == run[2] * 512 * 4 and run[4] > 0
    assert 0 <= summary["hit_any"] <= 1 and summary["hit_both"] <= summary["hit_any"]
