"""Issue 43: a version's rows, data/test.jsonl and data/annotations.jsonl, built set-based and streamed into
the seal (select/rows.py, select/content.py), are byte for byte what the pair-by-pair build wrote — the
reference below rebuilds them that way, from ORM objects and the chunked helpers (benchmark/pairs.py
``pair_texts``, benchmark/keys.py ``question_keys``), each row encoded whole by ``json.dumps``. The store is
edited first so that the texts hold what encoders trip on (quotes, backslashes, control and non-ASCII
characters, U+2028, citations) and weak judges' verdicts are there to turn into the row's order."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.actors.build_run import build
from playlisteval.benchmark.keys import question_keys
from playlisteval.benchmark.pairs import find_benchmark, pair_texts
from playlisteval.config import Settings
from playlisteval.prompts.citations import strip_citations
from playlisteval.select import annotations as released  # not `annotations`: that is __future__'s name
from playlisteval.select import sealed
from playlisteval.select.content import Sealed, jsonl_text
from playlisteval.select.rows import benchmark_rows, collection_root, gather
from playlisteval.select.sampling import select_benchmark
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import (
    QA,
    Answer,
    Benchmark,
    BenchmarkPair,
    Domain,
    Item,
    Pair,
    Playlist,
    Seed,
    Segment,
    Video,
)
from tests.eval_helpers import indexed_seeded_store
from tests.helpers import project
from tests.judged_project import OVERRIDES

ODD = ['quote " back\\slash', "tab\tnew\nline", "ünïcödé — 漢字 \u2028 sep", "\x01 control", "emoji 🎬 ,  spaced ."]


def _edited(settings: Settings) -> Engine:
    """The selected store with odd texts in its answers, questions and titles, and weak judges' verdicts on
    its pairs (some the benchmark's own copy, some the pair's)."""
    engine = open_store(settings)
    with transaction(engine) as s:
        for i, answer in enumerate(s.exec(select(Answer).order_by(col(Answer.id))).all()):
            answer.text = f"{answer.text} {ODD[i % len(ODD)]} (clip1 @ 0:0{i % 9} - 0:1{i % 9})."
            s.add(answer)
        for i, qa in enumerate(s.exec(select(QA).order_by(col(QA.id))).all()):
            qa.question, qa.keyword = f"{qa.question} {ODD[i % len(ODD)]}", ODD[(i + 1) % len(ODD)]
            qa.payload = {**(qa.payload or {}), "question_type": {"row": i % 3, "column": "ü"}}
            s.add(qa)
        for video in s.exec(select(Video)).all():
            video.title = f"{video.title} {ODD[2]}"
            s.add(video)
        for i, bp in enumerate(s.exec(select(BenchmarkPair).order_by(col(BenchmarkPair.id))).all()):
            verdicts = {"a_is_better": i % 2 == 0,
                        "F_first": {"model": "sim/weak", "verdict": "AB"[i % 2], "correct": i % 3 == 0},
                        "C3": {"model": "sim/other", "verdict": None if i % 4 == 0 else "A", "correct": True},
                        "note": "not a verdict"}
            if i % 2:
                bp.difficulty = verdicts
                s.add(bp)
            else:  # the benchmark keeps no copy: the pair's verdicts are the row's
                pair = s.get(Pair, bp.pair_id)
                assert pair is not None
                pair.difficulty, bp.difficulty = verdicts, None
                s.add_all([pair, bp])
    return engine


def _reference_rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    """The rows as the pair-by-pair build made them (before issue 43)."""
    root = collection_root(engine)
    with transaction(engine) as s:
        sides = {int(p): bool(a) for p, a in s.exec(select(BenchmarkPair.pair_id, BenchmarkPair.a_is_better)
                                                     .where(BenchmarkPair.benchmark_id == bench.id)).all()}
        difficulty = {}
        for bp in s.exec(select(BenchmarkPair).where(BenchmarkPair.benchmark_id == bench.id)).all():
            pair = s.get(Pair, bp.pair_id)
            assert pair is not None
            difficulty[bp.pair_id] = (bp.difficulty if bp.difficulty is not None else pair.difficulty) or {}
    texts = pair_texts(engine, sides)
    rows = []
    with transaction(engine) as s:
        for pair_id in sorted(texts, key=lambda p: (texts[p].domain, texts[p].question_key, texts[p].key)):
            t, a_is_better = texts[pair_id], sides[pair_id]
            item = s.get(Item, t.item_id)
            assert item is not None
            qa, seed = s.get(QA, item.current_qa_id), s.get(Seed, item.seed_id)
            assert qa is not None and seed is not None
            segments = []
            for clip, seg_id in ((1, seed.segment1_id), (2, seed.segment2_id)):
                seg = s.get(Segment, seg_id)
                assert seg is not None
                video = s.get(Video, seg.video_id)
                assert video is not None
                playlist = s.get(Playlist, video.playlist_id)
                assert playlist is not None
                rel = Path(os.path.relpath(video.path, root)).as_posix()
                stable = (video.sha256 or hashlib.sha256(rel.encode()).hexdigest())[:16]
                segments.append({"clip": clip, "playlist": playlist.name, "video_title": video.title,
                                 "video_id": f"v-{stable}", "video_path": rel, "video_sha256": video.sha256 or "",
                                 "video_url": video.url or "", "start": seg.start, "end": seg.end})
            chosen, rejected = strip_citations(t.better), strip_citations(t.worse)
            qtype = (qa.payload or {}).get("question_type") or {}
            d = difficulty[pair_id]
            weak = []
            for role, v in sorted(d.items()):
                if not (isinstance(v, dict) and "model" in v):
                    continue
                seen, verdict, picked = v.get("verdict"), None, None
                if seen in ("A", "B"):
                    better_picked = (seen == "A") == bool(d.get("a_is_better"))
                    picked = "chosen" if better_picked else "rejected"
                    verdict = "A" if better_picked == a_is_better else "B"
                weak.append({"role": role, "model": str(v.get("model", "")), "verdict": verdict, "picked": picked,
                             "correct": bool(v.get("correct"))})
            rows.append({
                "pair_id": t.key, "question_id": t.question_key, "domain": t.domain, "question": t.question,
                "keyword": qa.keyword, "bloom_row": str(qtype.get("row", "")),
                "bloom_column": str(qtype.get("column", "")),
                "answer_a": chosen if a_is_better else rejected, "answer_b": rejected if a_is_better else chosen,
                "label": "A" if a_is_better else "B", "a_is_better": a_is_better, "chosen": chosen,
                "rejected": rejected, "chosen_rating": t.better_rating, "rejected_rating": t.worse_rating,
                "gap": t.gap, "gold_answer": qa.answer, "segments": segments, "weak_judges": weak})
    return rows


def _reference_annotations(engine: Engine, bench: Benchmark) -> str:
    """data/annotations.jsonl as the ORM build wrote it (before issue 43)."""
    with transaction(engine) as s:
        sets = dict(s.exec(select(Pair.item_id, Pair.set_id).join(BenchmarkPair, col(BenchmarkPair.pair_id)
                                                                  == col(Pair.id))
                           .where(BenchmarkPair.benchmark_id == bench.id).order_by(col(Pair.id))).all())
        keys = question_keys(s, list(sets))
        described = {d.name: d.description for d in s.exec(select(Domain)).all()}
        rows = []
        for item_id, set_id in sets.items():
            item = s.get(Item, item_id)
            assert item is not None
            seed = s.get(Seed, item.seed_id)
            assert seed is not None
            domain = s.get(Domain, seed.domain_id)
            assert domain is not None
            by_rating = {a.rating: a for a in s.exec(select(Answer).where(Answer.set_id == set_id)).all()}
            gold = (by_rating[5].record if 5 in by_rating else None) or {}
            wrong = [{"rating": r, "degraded_weight": by_rating[r].degraded_weight,
                      "attribute_degradations": (by_rating[r].record or {}).get("attribute_degradations") or [],
                      **{k: released._attributes((by_rating[r].record or {}).get(k), v)
                         for k, v in released.KINDS.items()}}
                     for r in (4, 3, 2, 1) if r in by_rating]
            rows.append({"question_id": keys.get(item_id, ""), "domain": domain.name,
                         "domain_description": described.get(domain.name, ""),
                         "causal_attributes": gold.get("causal_attributes") or [],
                         "gold_standard_analysis": gold.get("gold_standard_analysis") or {}, "wrong_answers": wrong})
    rows.sort(key=lambda r: (r["domain"], r["question_id"]))
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def _selected(root: Path, **extra: object) -> Settings:
    settings = project(root, **OVERRIDES, **extra)
    indexed_seeded_store(settings, 3)
    build(settings)
    assert select_benchmark(project(root, **OVERRIDES, **extra)).created
    return project(root, **OVERRIDES, **extra)


def _check(settings: Settings) -> None:
    engine = _edited(settings)
    bench = find_benchmark(engine, settings.select.benchmark)
    expected = _reference_rows(engine, bench)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in expected)
    assert any(w["verdict"] for r in expected for w in r["weak_judges"]) and "🎬" in text and "\\u2028" not in text
    assert benchmark_rows(engine, bench) == expected
    assert "".join(gather(engine, bench).lines()) == text == jsonl_text(expected)
    content = sealed.build(engine, bench)
    assert zlib.decompress(content.rows_z) == text.encode("utf-8")
    assert content.content_hash == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert content.annotations_text == _reference_annotations(engine, bench)
    assert sorted(content.domains) == sorted({r["domain"] for r in expected})


def test_rows_and_seal_are_the_pair_by_pair_build(tmp_path: Path) -> None:
    _check(_selected(tmp_path))


def test_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    _check(_selected(tmp_path, store__url=pg_url))


@pytest.mark.parametrize("lines", [0, 1, 4095, 4096, 4097, 9000])
def test_streamed_seal_is_the_text_compressed_and_hashed_whole(lines: int) -> None:
    """Block boundaries (select/content.py BLOCK) change neither the bytes nor the hash."""
    rows = [f'{{"n": {i}, "t": "é{"x" * (i % 7)}"}}\n' for i in range(lines)]
    whole = "".join(rows)
    streamed = Sealed.from_lines(iter(rows), "a\n", {}, {})
    assert zlib.decompress(streamed.rows_z).decode("utf-8") == whole == streamed.rows_text
    assert streamed.content_hash == hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert streamed.annotations_text == "a\n"
