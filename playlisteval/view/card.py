"""One benchmark pair as the paper's Fig. 6 shows it (issue 22): the question; the gold answer with each
citation a link into its clip (the cited range of the video: clip k is the seed's segment k, times
counted from the segment's start); the four graded answers, each with its word differences from the
gold and its causal record (what was degraded, kept, upgraded); the weak judges' verdicts of the
difficulty gate; and every judgment of the pair across runs, with the frames the judge was served
(judgment.evidence) laid on a timeline of each video.

Everything is read from the store and returned as plain data; the template escapes every text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from playlisteval.human.diff import Piece, word_diff
from playlisteval.prompts.citations import parse_citations

GOLD = 5
_GROUP = re.compile(r"\(([^()\[\]]*@[^()\[\]]*)\)")  # a round-bracket citation group (prompts/citations.py)


@dataclass
class Clip:
    """Segment k of the seed: the clip a citation "k @ m:ss" counts from."""

    n: int
    video_id: int
    title: str
    start: float
    end: float
    duration: float


@dataclass
class TimelineRow:
    video_id: int
    title: str
    duration: float
    frames: list[float]
    gold: list[tuple[float, float]] = field(default_factory=list)  # the seed's segments in this video
    cited: list[tuple[float, float]] = field(default_factory=list)  # the gold's cited ranges in this video


def mmss(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    return f"{s // 60}:{s % 60:02d}"


def cited_pieces(answer: str, clips: dict[int, Clip]) -> list[dict[str, Any]]:
    """The answer as pieces: plain text, or a citation group with one link per range (absolute times in
    the clip's video); a range naming a clip the seed does not have stays plain text."""
    out: list[dict[str, Any]] = []
    at = 0
    for match in _GROUP.finditer(answer):
        parsed = parse_citations(match.group(0), clips=tuple(clips))
        links = [{"video_id": clips[c.clip].video_id, "start": clips[c.clip].start + c.start,
                  "end": clips[c.clip].start + c.end, "label": f"clip {c.clip} @ {mmss(c.start)}–{mmss(c.end)}"}
                 for c in parsed.citations if c.clip in clips]
        if not links:
            continue
        out.append({"text": answer[at:match.start()]})
        out.append({"links": links})
        at = match.end()
    out.append({"text": answer[at:]})
    return [p for p in out if p.get("links") or p.get("text")]


def _record_lines(record: dict[str, Any] | None) -> list[str]:
    """A degraded answer's causal record in short lines: "Colour accuracy: pink -> cyan (visual_only)"."""
    if not record:
        return []
    lines = []
    for deg in record.get("attribute_degradations") or []:
        name = str(deg.get("attribute_name", "?"))
        for el in deg.get("degradation_by_elements") or [{}]:
            modality = f" ({el['modality']})" if el.get("modality") else ""
            lines.append(f"degraded {name}: {el.get('element', '')}{modality} — {el.get('impact', '')}".rstrip(" —"))
    for key, said in (("constant_attributes", "kept"), ("upgraded_attributes", "upgraded")):
        if record.get(key):  # names, or {attribute_name, …} records (the full record is under "causal record")
            lines.append(f"{said}: " + ", ".join(_attribute_name(a) for a in record[key]))
    for attr in record.get("causal_attributes") or []:
        lines.append(f"attribute {attr.get('attribute_name', '?')} (weight {attr.get('importance_score', '?')}): "
                     f"{attr.get('description', '')}")
    return lines


def _attribute_name(attribute: Any) -> str:
    return str(attribute.get("attribute_name", "?")) if isinstance(attribute, dict) else str(attribute)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str) if value else ""


def _one(conn: Any, sql: str, **params: Any) -> dict[str, Any] | None:
    row = conn.execute(text(sql), params).first()
    return dict(row._mapping) if row is not None else None


def _clips(conn: Any, seed_id: int) -> dict[int, Clip]:
    rows = conn.execute(text(
        "SELECT k.n, g.video_id, v.title, g.start, g.\"end\" AS stop, COALESCE(v.duration, 0) AS duration FROM "
        "(SELECT 1 AS n, segment1_id AS sid FROM seed WHERE id = :s UNION ALL "
        "SELECT 2, segment2_id FROM seed WHERE id = :s) AS k JOIN segment AS g ON g.id = k.sid "
        "JOIN video AS v ON v.id = g.video_id ORDER BY k.n"), {"s": seed_id}).all()
    return {int(r.n): Clip(int(r.n), int(r.video_id), str(r.title), float(r.start), float(r.stop),
                           float(r.duration)) for r in rows}


def _timeline(conn: Any, evidence: dict[str, Any], clips: dict[int, Clip],
              cited: list[dict[str, Any]]) -> list[TimelineRow]:
    """The served frames per video, in the order the judge saw the videos, with the gold's ranges."""
    by_video: dict[int, list[float]] = {}
    for frame in evidence.get("frames") or []:
        try:
            video_id, t = int(frame[0]), float(frame[1])
        except (TypeError, ValueError, IndexError):
            continue  # a record this viewer cannot read: shown raw, not guessed
        by_video.setdefault(video_id, []).append(t)
    if not by_video:
        return []
    marks = ", ".join(f":v{n}" for n in range(len(by_video)))
    videos = {int(r.id): r for r in conn.execute(text(
        f"SELECT id, title, COALESCE(duration, 0) AS duration FROM video WHERE id IN ({marks})"),
        {f"v{n}": v for n, v in enumerate(by_video)})}
    rows = []
    for video_id, times in by_video.items():
        v = videos.get(video_id)
        duration = max([float(v.duration) if v else 0.0, *times, 1.0])
        rows.append(TimelineRow(
            video_id, str(v.title) if v else f"video {video_id} (not in the store)", duration, times,
            gold=[(c.start, c.end) for c in clips.values() if c.video_id == video_id],
            cited=[(link["start"], link["end"]) for piece in cited for link in piece.get("links", [])
                   if link["video_id"] == video_id]))
    return rows


def _diff_side(gold: str, other: str) -> tuple[list[Piece], int]:
    diff = word_diff(gold, other)
    return diff.b, diff.changes


def pair_card(engine: Engine, pair_id: int, benchmark_id: int | None = None) -> dict[str, Any] | None:
    """The pair's card as plain data, or None when the store has no such pair."""
    with engine.connect() as conn:
        pair = _one(conn, "SELECT p.*, i.seed_id, d.name AS domain, ds.qa_id FROM pair AS p "
                          "JOIN item AS i ON i.id = p.item_id JOIN seed AS s ON s.id = i.seed_id "
                          "JOIN domain AS d ON d.id = s.domain_id JOIN distractor_set AS ds ON ds.id = p.set_id "
                          "WHERE p.id = :p", p=pair_id)
        if pair is None:
            return None
        qa = _one(conn, "SELECT question, answer, keyword FROM qa WHERE id = :q", q=pair["qa_id"]) or {}
        clips = _clips(conn, int(pair["seed_id"]))
        answers = [dict(r._mapping) for r in conn.execute(text(
            "SELECT rating, text, degraded_weight, record FROM answer WHERE set_id = :s ORDER BY rating DESC"),
            {"s": pair["set_id"]})]
        side = _one(conn, "SELECT a_is_better FROM benchmark_pair WHERE pair_id = :p AND benchmark_id = :b",
                    p=pair_id, b=benchmark_id) if benchmark_id else None
        # the benchmark's own gate record (store/benchmark_gate.py): another draw may have gated the pair
        # since with other weak judges and rewritten the pair's (issue 41)
        gate = _one(conn, "SELECT difficulty, kept FROM benchmark_gate WHERE pair_id = :p AND benchmark_id = :b",
                    p=pair_id, b=benchmark_id) if benchmark_id else None
        if gate is not None:
            pair = {**pair, "difficulty": gate["difficulty"], "kept": gate["kept"]}
        judged = [dict(r._mapping) for r in conn.execute(text(
            "SELECT j.run_id, r.judge, r.evidence, r.scope, r.swapped, r.modality, r.options_hash, r.benchmark_id, "
            "j.a_is_better, j.verdict, j.score, j.outcome, j.raw, j.evidence AS served FROM judgment AS j "
            "JOIN judge_run AS r ON r.id = j.run_id WHERE j.pair_id = :p ORDER BY j.run_id"), {"p": pair_id})]
        errors = [dict(r._mapping) for r in conn.execute(text(
            "SELECT e.run_id, r.judge, e.error, e.attempts FROM judge_error AS e JOIN judge_run AS r "
            "ON r.id = e.run_id WHERE e.pair_id = :p ORDER BY e.run_id"), {"p": pair_id})]
        gold_text = next((a["text"] for a in answers if a["rating"] == GOLD), qa.get("answer", ""))
        gold_cited = cited_pieces(gold_text, clips)
        for j in judged:
            served = _loads(j.pop("served"))
            j["timeline"] = _timeline(conn, served, clips, gold_cited)
            j["served"] = served
            j["frame_count"] = len(served.get("frames") or [])
            j["transcript_chunks"] = len(served.get("chunks") or [])
    difficulty = _loads(pair["difficulty"])
    graded = []
    for a in answers:
        if a["rating"] == GOLD:
            continue
        pieces, changes = _diff_side(gold_text, a["text"])
        record = _loads(a["record"])
        graded.append({"rating": a["rating"], "text": a["text"], "pieces": pieces, "changes": changes,
                       "weight": a["degraded_weight"], "record": _record_lines(record), "record_json": _pretty(record),
                       "in_pair": a["rating"] in (pair["better_rating"], pair["worse_rating"])})
    gold_record = _loads(next((a["record"] for a in answers if a["rating"] == GOLD), None))
    return {
        "pair_id": pair_id, "item_id": pair["item_id"], "domain": pair["domain"], "gap": pair["gap"],
        "better": pair["better_rating"], "worse": pair["worse_rating"], "kept": pair["kept"],
        "a_is_better": side["a_is_better"] if side else None,
        "question": qa.get("question", ""), "keyword": qa.get("keyword", ""),
        "gold": {"text": gold_text, "pieces": gold_cited, "record": _record_lines(gold_record),
                 "record_json": _pretty(gold_record)},
        "clips": list(clips.values()), "graded": graded,
        "weak": [{"gate": k, **v} for k, v in sorted(difficulty.items()) if k.startswith("F_") and isinstance(v, dict)],
        "difficulty_json": _pretty(difficulty), "judgments": judged, "errors": errors,
    }


def _loads(value: Any) -> dict[str, Any]:
    """A JSON column as a dict (SQLite hands back text, PostgreSQL a dict); anything else → {}."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}
