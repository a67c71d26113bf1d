"""A benchmark's exported rows (select/export.py writes them, select/sealed.py seals them): one per
preference pair — the question, both answers as a judge sees them (citations removed) on their shared
sides (SPEC G5), the label, ratings and gap, the gold answer, the two evidence segments and the weak
judges' verdicts in the row's own A/B order.

Built set-based (issue 43): recording version 1 builds every row, so at 100k pairs a per-row ORM object or
a statement per 500 ids cost minutes. Here a handful of statements join from the benchmark's own pairs
(no parameter per row: SQLite's limit, issue 26) and fetch plain columns, never table objects; what pairs
share is computed once — a question's key, gold and segments per item, an answer's stripped text per
(answer set, rating) — so the work per pair is the row's dict alone. The rows, their order and every value
are those the pair-by-pair build gave (tests/test_rows_set_based.py checks it against that build).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.benchmark.keys import content_key, pair_key, place, segments_of
from playlisteval.build.gates.citations import strip_citations
from playlisteval.logs import get_logger
from playlisteval.select.collector import paused
from playlisteval.store.engine import read
from playlisteval.store.media_paths import attached
from playlisteval.store.tables import (
    QA,
    Answer,
    Benchmark,
    BenchmarkPair,
    DistractorSet,
    Domain,
    Item,
    Pair,
    Playlist,
    Seed,
    Segment,
    Video,
)

log = get_logger(__name__)


def collection_root(engine: Engine) -> Path:
    """The collection's root folder: where its manifests lie, or the folder above the playlist folders
    it was added from — so a video's relative path is the manifest's own path for it, or at least
    "playlist/file" — and in any case a folder holding every usable video. Paths are read as this project's
    file paths (store/media_paths.py), so a copy of the project exports the same relative paths."""
    with read(engine) as s:
        rows = s.exec(select(Video.path, Playlist.source).join(Playlist, col(Playlist.id) == col(Video.playlist_id))
                      .where(col(Video.status).in_(("new", "indexed")))).all()
    if not rows:
        return Path("/")
    # a playlist's source is its folder, or the manifest file that listed it: the parent of either
    folders = [os.path.dirname(source or os.path.dirname(path)) for path, source in rows]
    root = Path(os.path.commonpath(folders + [os.path.dirname(path) for path, _ in rows]))
    # never above the project when every video is inside it (a playlist added from the project folder
    # itself): a path would start with the project folder's own name, and a copy elsewhere (issue 41)
    # would export other rows
    roots = attached(engine.dialect)
    if roots is not None and roots.project != root and roots.project.is_relative_to(root) and all(
            Path(path).is_relative_to(roots.project) for path, _ in rows):
        return roots.project
    return root


def video_ref(path: str, sha256: str | None, root: Path) -> dict[str, str]:
    """A video as a dataset names it: stable id, path relative to the collection root, content hash."""
    rel = Path(os.path.relpath(path, root)).as_posix()
    digest = sha256 or ""
    stable = (digest or hashlib.sha256(rel.encode()).hexdigest())[:16]
    return {"video_id": f"v-{stable}", "video_path": rel, "video_sha256": digest}


#: a row's fields, in the order export has always written them
FIELDS = ("pair_id", "question_id", "domain", "question", "keyword", "bloom_row", "bloom_column", "answer_a",
          "answer_b", "label", "a_is_better", "chosen", "rejected", "chosen_rating", "rejected_rating", "gap",
          "gold_answer", "segments", "weak_judges")
#: a JSON Lines row as ``json.dumps(row, ensure_ascii=False)`` writes it (", " between items, ": " after a key),
#: one %s per field's encoded value
_LINE = "".join(("{" if i == 0 else ", ") + json.dumps(name) + ": %s" for i, name in enumerate(FIELDS)) + "}\n"


@dataclass
class Rows:
    """A benchmark's pairs as gathered from the store, in export order, each a tuple of ``FIELDS``' values;
    ``dicts`` gives the rows, ``lines`` the same rows as data/test.jsonl's lines."""

    values: list[tuple[Any, ...]]

    @property
    def count(self) -> int:
        return len(self.values)

    def domains(self) -> set[str]:
        return {str(v[2]) for v in self.values}

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(FIELDS, v, strict=True)) for v in self.values]

    def lines(self) -> Iterator[str]:
        """Each row's line, byte for byte ``json.dumps(row, ensure_ascii=False) + "\\n"``: the encoder writes a
        dict with text keys as its keys and values encoded and joined (``_LINE``), a text value with
        ``encode_basestring`` (what it uses when ``ensure_ascii`` is off), an int with ``int.__repr__`` and a bool
        as true / false. What pairs share (a question's texts and segments, an answer's stripped text: one
        object each) is encoded once, not once per pair."""
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        text = encode_basestring
        memo: dict[int, str] = {}
        keep: list[Any] = []  # the shared objects stay alive while their ids key ``memo``

        def once(value: Any) -> str:
            found = memo.get(id(value))
            if found is None:
                found = memo[id(value)] = dumps(value)
                keep.append(value)
            return found

        def number(value: Any) -> str:
            return int.__repr__(value) if type(value) is int else dumps(value)

        for (key, qkey, domain, question, keyword, bloom_row, bloom_column, answer_a, answer_b, label, a_is_better,
             chosen, rejected, better, worse, gap, gold, segments, weak) in self.values:
            yield _LINE % (text(key), once(qkey), once(domain), once(question), once(keyword), once(bloom_row),
                           once(bloom_column), once(answer_a), once(answer_b), text(label),
                           "true" if a_is_better is True else dumps(a_is_better), once(chosen), once(rejected),
                           number(better), number(worse), number(gap), once(gold), once(segments),
                           dumps(weak) if weak else "[]")


def benchmark_rows(engine: Engine, bench: Benchmark) -> list[dict[str, Any]]:
    """The benchmark's rows (``gather``'s, as dicts)."""
    return gather(engine, bench).dicts()


def gather(engine: Engine, bench: Benchmark) -> Rows:
    """The benchmark's rows, in the order of their content keys (domain, question, pair: select/keys.py),
    never of row ids — the same export from any store. Read in one read transaction: one snapshot."""
    with paused():  # a million small containers at 100k pairs: no collector passes over them (collector.py)
        return _gather(engine, bench)


def _gather(engine: Engine, bench: Benchmark) -> Rows:
    in_bench = col(BenchmarkPair.benchmark_id) == bench.id
    items_of = select(Pair.item_id).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)).where(in_bench)
    sets_of = select(Pair.set_id).join(BenchmarkPair, col(BenchmarkPair.pair_id) == col(Pair.id)).where(in_bench)
    root = collection_root(engine)
    with read(engine) as session:
        s = session.connection()  # Core rows: the ORM's per-row loading is not needed for plain columns
        # the question a pair asks is its answer set's; the inner joins keep the pairs a judge could be shown
        pairs: Sequence[Any] = s.execute(
            sa.select(col(BenchmarkPair.pair_id), col(BenchmarkPair.a_is_better),
                      sa.cast(col(BenchmarkPair.difficulty), sa.Text).label("own"),
                      sa.cast(col(Pair.difficulty), sa.Text).label("shared"),
                      col(Pair.item_id), col(Pair.set_id), col(Pair.better_rating), col(Pair.worse_rating),
                      col(QA.question), col(Domain.name))
            .join(Pair, col(Pair.id) == col(BenchmarkPair.pair_id))
            .join(DistractorSet, col(DistractorSet.id) == col(Pair.set_id))
            .join(QA, col(QA.id) == col(DistractorSet.qa_id))
            .join(Item, col(Item.id) == col(Pair.item_id))
            .join(Seed, col(Seed.id) == col(Item.seed_id))
            .join(Domain, col(Domain.id) == col(Seed.domain_id))
            .where(in_bench).order_by(col(BenchmarkPair.pair_id))).all()
        texts = {(int(set_id), int(rating)): text for set_id, rating, text in s.execute(
            sa.select(col(Answer.set_id), col(Answer.rating), col(Answer.text))
            .where(col(Answer.set_id).in_(sets_of))).all()}
        # each item's current question (its key, gold, keyword and Bloom cell) and evidence segments
        items = s.execute(
            sa.select(col(Item.id), col(Domain.name), col(QA.question), col(QA.answer), col(QA.keyword),
                      col(QA.payload), col(Seed.segment1_id), col(Seed.segment2_id))
            .join(QA, col(QA.id) == col(Item.current_qa_id))
            .join(Seed, col(Seed.id) == col(Item.seed_id))
            .join(Domain, col(Domain.id) == col(Seed.domain_id))
            .where(col(Item.id).in_(items_of))).all()
        found: dict[int, Any] = {int(seg_id or 0): rest for seg_id, *rest in s.execute(
            sa.select(col(Segment.id), col(Segment.start), col(Segment.end), col(Video.id), col(Video.path),
                      col(Video.title), col(Video.url), col(Video.sha256), col(Playlist.name))
            .join(Video, col(Video.id) == col(Segment.video_id))
            .join(Playlist, col(Playlist.id) == col(Video.playlist_id))
            .where(segments_of(items_of))).all()}
    refs: dict[int, dict[str, str]] = {}  # per video, computed once

    def segment(clip: int, seg_id: int) -> dict[str, Any]:
        start, end, video_id, path, title, url, sha256, playlist = found[seg_id]
        ref = refs.get(int(video_id))
        if ref is None:
            ref = refs[int(video_id)] = video_ref(path, sha256, root)
        return {"clip": clip, "playlist": playlist, "video_title": title, **ref, "video_url": url or "",
                "start": start, "end": end}

    # per item: (question key, keyword, Bloom row, Bloom column, gold answer, segments)
    facts: dict[int, tuple[str, str, str, str, str, list[dict[str, Any]]]] = {}
    for item_id, domain, question, answer, keyword, payload, one, two in items:
        here = {seg: place(found[seg][3], found[seg][0], found[seg][1]) for seg in (one, two) if seg in found}
        qtype = (payload or {}).get("question_type") or {}
        facts[int(item_id)] = (content_key(domain, question, answer, here.get(one, ""), here.get(two, "")), keyword,
                               str(qtype.get("row", "")), str(qtype.get("column", "")), answer,
                               [segment(clip, seg) for clip, seg in ((1, one), (2, two)) if seg in found])
    stripped = {k: strip_citations(text) for k, text in texts.items()}  # an answer is in four pairs: once
    # the verdicts as their JSON text, decoded once per distinct text (read only below): most pairs of a gate
    # hold the same few, and the column type would decode each pair's again
    decoded: dict[str, Any] = {}

    def verdicts(raw: str | None) -> Any:
        if raw is None:
            return None
        found = decoded.get(raw)
        if found is None:
            found = decoded[raw] = json.loads(raw)
        return found

    keyed = []
    names: dict[str, str] = {}  # one object per domain name and per set's question: their JSON encoded once
    questions: dict[int, str] = {}
    for pair_id, a_is_better, own, shared, item_id, set_id, better, worse, question, domain in pairs:
        # an item without a current question has no key (as question_keys leaves it out) and no row: its
        # facts are missing, an error as it always was
        qkey = facts[item_id][0] if item_id in facts else ""
        domain = names.setdefault(str(domain), str(domain))
        keyed.append(((domain, qkey, pair_key(qkey, better, worse)), pair_id, bool(a_is_better),
                      _first(verdicts(own), verdicts(shared)), item_id, set_id, better, worse,
                      questions.setdefault(set_id, str(question))))
    keyed.sort(key=lambda k: k[0])  # stable: equal keys (equal content) stay in pair-id order
    values = []
    for (domain, qkey, key), _pair_id, a_is_better, difficulty, item_id, set_id, better, worse, question in keyed:
        _, keyword, bloom_row, bloom_column, gold, segments = facts[item_id]
        chosen, rejected = stripped[(set_id, better)], stripped[(set_id, worse)]
        difficulty = difficulty or {}
        values.append((
            key, qkey, domain, question, keyword, bloom_row, bloom_column,
            chosen if a_is_better else rejected, rejected if a_is_better else chosen,
            "A" if a_is_better else "B", a_is_better, chosen, rejected, better, worse, better - worse, gold, segments,
            [weak_verdict(role, v, bool(difficulty.get("a_is_better")), a_is_better)
             for role, v in sorted(difficulty.items()) if isinstance(v, dict) and "model" in v]))
    log.debug("benchmark.rows", benchmark=bench.name, rows=len(values), items=len(facts))
    return Rows(values)


def _first(own: Any, shared: Any) -> Any:
    """The benchmark's own copy of the verdicts, else the pair's (a JSON null is no copy, as SQL NULL is not)."""
    return own if own is not None else shared


def weak_verdict(role: str, v: dict[str, Any], seen_a_is_better: bool, row_a_is_better: bool) -> dict[str, Any]:
    """A weak judge's verdict in the exported row's A/B order. The gate showed the pair on its own sides
    (``seen_a_is_better``, drawn apart from the benchmark's): "A" there may be "B" here."""
    seen = v.get("verdict")
    picked: str | None = None
    verdict: str | None = None
    if seen in ("A", "B"):
        picked_better = (seen == "A") == seen_a_is_better
        picked = "chosen" if picked_better else "rejected"
        verdict = "A" if picked_better == row_a_is_better else "B"
    return {"role": role, "model": str(v.get("model", "")), "verdict": verdict, "picked": picked,
            "correct": bool(v.get("correct"))}
