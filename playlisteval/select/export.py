"""`playlisteval export OUT`: the benchmark as a dataset — Parquet and JSON Lines with the same rows,
and a dataset card (README.md) holding the SPEC F4 statistics.

One row per preference pair: the question, both answers as a judge sees them (citations removed) on
their shared sides (SPEC G5), which one is better, the ratings and gap, the gold answer with its
citations, the two evidence segments (video, playlist, time range) and the weak judges' verdicts. The
card's YAML header names the Parquet file, so ``datasets.load_dataset("parquet", data_files=…)`` and
``load_dataset(OUT)`` both read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.config import Settings
from playlisteval.errors import ConfigError
from playlisteval.gates.citations import strip_citations
from playlisteval.select.pairs import find_benchmark, pair_texts
from playlisteval.select.stats import BenchmarkStats, benchmark_stats
from playlisteval.store import open_store
from playlisteval.store.engine import transaction
from playlisteval.store.tables import QA, Benchmark, BenchmarkPair, Item, Pair, Playlist, Seed, Segment, Video

PARQUET = "data/test.parquet"
JSONL = "data/test.jsonl"


@dataclass
class ExportReport:
    out: Path
    rows: int
    files: list[Path]
    stats: BenchmarkStats


def _segments(engine: Engine, item_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    with transaction(engine) as s:
        for item_id, seed in s.exec(select(Item.id, Seed).join(Seed, col(Seed.id) == col(Item.seed_id))
                                    .where(col(Item.id).in_(item_ids))).all():
            segs = []
            for clip, seg_id in ((1, seed.segment1_id), (2, seed.segment2_id)):
                seg = s.get(Segment, seg_id)
                video = s.get(Video, seg.video_id) if seg else None
                playlist = s.get(Playlist, video.playlist_id) if video else None
                if seg is None or video is None or playlist is None:
                    continue
                segs.append({"clip": clip, "playlist": playlist.name, "video_title": video.title,
                             "video_path": video.path, "video_url": video.url or "", "start": seg.start,
                             "end": seg.end})
            out[int(item_id or 0)] = segs
    return out


def benchmark_rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    with transaction(engine) as s:
        sides = {int(p): bool(a) for p, a in s.exec(select(BenchmarkPair.pair_id, BenchmarkPair.a_is_better)
                                                     .where(BenchmarkPair.benchmark_id == bench.id)).all()}
        pairs = {int(p.id or 0): p for p in s.exec(select(Pair).where(col(Pair.id).in_(list(sides)))).all()}
    texts = pair_texts(engine, sides)
    items = sorted({t.item_id for t in texts.values()})
    with transaction(engine) as s:
        qas = {int(i or 0): qa for i, qa in s.exec(select(Item.id, QA).join(QA, col(QA.id) == col(Item.current_qa_id))
                                                     .where(col(Item.id).in_(items))).all()}
    segments = _segments(engine, items)
    rows = []
    # ids and order from content keys (select/keys.py), not row ids: the same export from any store
    for pair_id in sorted(texts, key=lambda p: (texts[p].domain, texts[p].question_key, texts[p].key)):
        t, qa, a_is_better = texts[pair_id], qas[texts[pair_id].item_id], sides[pair_id]
        answer_a, answer_b = t.shown(a_is_better)
        qtype = (qa.payload or {}).get("question_type") or {}
        difficulty = pairs[pair_id].difficulty or {}
        rows.append({
            "pair_id": t.key, "question_id": t.question_key, "domain": t.domain, "question": t.question,
            "keyword": qa.keyword, "bloom_row": str(qtype.get("row", "")), "bloom_column": str(qtype.get("column", "")),
            "answer_a": strip_citations(answer_a), "answer_b": strip_citations(answer_b),
            "label": "A" if a_is_better else "B", "a_is_better": a_is_better,
            "chosen": strip_citations(t.better), "rejected": strip_citations(t.worse),
            "chosen_rating": t.better_rating, "rejected_rating": t.worse_rating, "gap": t.gap,
            "gold_answer": qa.answer,
            "segments": segments.get(t.item_id, []),
            "weak_judges": [{"role": role, "model": str(v.get("model", "")), "verdict": v.get("verdict"),
                             "correct": bool(v.get("correct"))}
                            for role, v in sorted(difficulty.items()) if isinstance(v, dict) and "model" in v],
        })
    return rows


def _card(name: str, st: BenchmarkStats, rows: int) -> str:
    gaps = ", ".join(f"gap {g}: {n}" for g, n in st.pairs_by_gap.items())
    domains = "\n".join(f"| {d} | {n} |" for d, n in st.pairs_by_domain.items())
    return f"""---
configs:
- config_name: default
  data_files:
  - split: test
    path: {PARQUET}
task_categories:
- video-text-to-text
tags:
- judge-evaluation
- preference-pairs
- long-video
pretty_name: {name}
---

# {name}

Video-language **judge** benchmark made by playlisteval: {rows} preference pairs. Each row is a two-hop
question over a playlist collection, two answers (`answer_a`, `answer_b`, citations removed, sides drawn
once per pair from a shared seed), `label` — the better one — and the rating gap (gold = 5 … 1).
The wrong answers differ from the gold only in what is *seen*, so a judge needs the video to tell them
apart. `segments` locates the two evidence segments; `weak_judges` records the difficulty gate.

```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files="{PARQUET}")["train"]
```

## Statistics

| Statistic | Value |
|---|---|
| Domains | {st.domains} |
| Playlists | {st.playlists} |
| Source videos | {st.videos} |
| Accepted questions | {st.accepted_questions} |
| Sampled questions (before pair sampling) | {st.sampled_before} |
| Sampled questions (after pair sampling) | {st.sampled_after} |
| Preference pairs | {st.pairs} ({gaps}) |
| Words in question (mean / max) | {st.question_words.mean} / {st.question_words.max} |
| Words in gold answer (mean / max) | {st.gold_words.mean} / {st.gold_words.max} |
| Words in degraded answers (mean / max) | {st.degraded_words.mean} / {st.degraded_words.max} |
| Chosen minus rejected, words (per pair) | {st.chosen_minus_rejected_words} |
| Longer answer wins (%) | {st.longer_answer_wins_pct} |

Word counts are of the texts without citations.

| Domain | Pairs |
|---|---|
{domains}
"""


def export(settings: Settings, out: Path, name: str | None = None) -> ExportReport:
    engine = open_store(settings)
    bench = find_benchmark(engine, name or settings.select.benchmark)
    rows = benchmark_rows(engine, bench)
    if not rows:
        raise ConfigError(f"benchmark {bench.name!r} has no pairs to export")
    st = benchmark_stats(engine, int(bench.id or 0))
    (out / "data").mkdir(parents=True, exist_ok=True)
    parquet, jsonl, card, stats = out / PARQUET, out / JSONL, out / "README.md", out / "stats.json"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    with jsonl.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    card.write_text(_card(bench.name, st, len(rows)), encoding="utf-8")
    stats.write_text(json.dumps(st.as_dict(), indent=2), encoding="utf-8")
    return ExportReport(out, len(rows), [parquet, jsonl, card, stats], st)
