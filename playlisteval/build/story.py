"""One item's whole life, read from the store: its seed, segments and clips, every attempt in order with
its output and gate verdicts, the feedback the next attempt received, the model calls it made (tokens,
latency, dollars, errors), its state transitions and where it ended.

Everything here is a read; nothing is recomputed or re-asked. The shape is the one ``playlisteval show
ITEM --json`` prints (keys only ever added, never renamed).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, text
from sqlalchemy.engine import Connection, Engine, Row

from playlisteval.build.stages.feedback import guidance
from playlisteval.errors import PlaylistEvalError
from playlisteval.store.engine import read_core
from playlisteval.store.media_paths import MediaPath
from playlisteval.store.video_fps import call_fps

# store/tables.py's columns as SQL text with the JSON and boolean columns typed (SQLite keeps 0/1 and text):
# `show` reads one item's rows without loading the ORM's 44 table classes (issue 26, a third of its start-up)
_ITEM = text("SELECT state, error, failed_from, phase1_attempts, phase2_attempts, version, claims, seed_id, "
             "current_qa_id, current_set_id FROM item WHERE id = :id")
_LAST_ITEM = text("SELECT max(id) FROM item")
_SEED = text("SELECT seed.id, seed.similarity, seed.segment1_id, seed.segment2_id, domain.name AS domain "
             "FROM seed LEFT JOIN domain ON domain.id = seed.domain_id WHERE seed.id = :id")
_SEGMENT = text('SELECT segment.id, segment.video_id, segment."start", segment."end", segment.first_chunk, '
                "segment.last_chunk, video.title, video.path, playlist.name AS playlist FROM segment "
                "LEFT JOIN video ON video.id = segment.video_id LEFT JOIN playlist ON playlist.id = video.playlist_id "
                "WHERE segment.id = :id").columns(path=MediaPath)  # the file path, not its stored form
_GATES = text("SELECT phase, attempt, gate, verdict, reason, details, call_ids FROM gate_result "
              "WHERE item_id = :id ORDER BY id").columns(details=JSON, call_ids=JSON)
_QAS = text("SELECT id, attempt, question, answer, keyword, template, template_hash, malformed, payload FROM qa "
            "WHERE item_id = :id ORDER BY attempt, id").columns(malformed=Boolean, payload=JSON)
_SETS = text("SELECT id, attempt, qa_id, template, template_hash, malformed, payload FROM distractor_set "
             "WHERE item_id = :id ORDER BY attempt, id").columns(malformed=Boolean, payload=JSON)
_ANSWERS = text("SELECT rating, text, degraded_weight FROM answer WHERE set_id = :id ORDER BY rating DESC")
_EVENTS = text("SELECT version, from_state, event, to_state, worker, at FROM item_event WHERE item_id = :id "
               "ORDER BY version, id")
_CALLS = text("SELECT id, role, provider, model, purpose, status, cache_hit, input_tokens, output_tokens, "
              "thinking_tokens, latency_s, usd, estimated_usd, error, request_hash FROM model_call "
              "WHERE item_id = :id ORDER BY id").columns(cache_hit=Boolean)
_REPLY = text("SELECT response FROM response_cache WHERE request_hash = :h").columns(response=JSON)
_PROMPT = text("SELECT text FROM model_prompt WHERE request_hash = :h")


class ItemNotFound(PlaylistEvalError):
    pass


def _segment(s: Connection, segment_id: int) -> dict[str, Any]:
    seg = s.execute(_SEGMENT, {"id": segment_id}).first()
    if seg is None:
        return {"id": segment_id, "missing": True}
    return {
        "id": seg.id, "video_id": seg.video_id, "video": seg.title, "path": seg.path, "playlist": seg.playlist,
        "start": seg.start, "end": seg.end, "chunks": [seg.first_chunk, seg.last_chunk],
    }


def _gates(rows: list[Row[Any]], phase: int, attempt: int, prompts_dir: str | None) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r.phase != phase or r.attempt != attempt:
            continue
        entry: dict[str, Any] = {"gate": r.gate, "verdict": r.verdict, "reason": r.reason,
                                 "details": r.details or {}, "call_ids": r.call_ids or []}
        if r.verdict == "reject":
            # what the generator's next attempt was told about this rejection (SPEC E1/E4)
            entry["feedback"] = guidance(r.gate, prompts_dir, r.reason)
        out.append(entry)
    return out


def _calls(s: Connection, item_id: int) -> list[dict[str, Any]]:
    calls = []
    for c in s.execute(_CALLS, {"id": item_id}).all():
        cached = s.execute(_REPLY, {"h": c.request_hash}).scalar()
        asked = s.execute(_PROMPT, {"h": c.request_hash.split(":try", 1)[0]}).first()
        reply = (cached or {}).get("text") if cached is not None else None
        calls.append({
            "id": c.id, "role": c.role, "model": f"{c.provider}/{c.model}", "purpose": c.purpose,
            "status": c.status, "cache_hit": bool(c.cache_hit), "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens, "thinking_tokens": c.thinking_tokens,
            "latency_s": round(c.latency_s, 3), "usd": c.usd, "estimated_usd": c.estimated_usd,
            "error": c.error, "request_hash": c.request_hash, "prompt": asked.text if asked else None,
            "reply": reply,
            # issue 42: the fps its clips got (frames sent / seconds covered, or a video file's sampling rate)
            "fps": call_fps(((cached or {}).get("raw") or {}).get("frames") if isinstance(cached, dict) else None),
        })
    return calls


def item_story(engine: Engine, item_id: int, prompts_dir: str | None = None) -> dict[str, Any]:
    """The item's story as plain data (JSON-ready)."""
    with read_core(engine) as s:
        item = s.execute(_ITEM, {"id": item_id}).first()
        if item is None:
            last = s.execute(_LAST_ITEM).scalar()
            hint = f"items are numbered 1–{last}" if last else "the store has no items yet: run `playlisteval build`"
            raise ItemNotFound(f"no item {item_id}: {hint}")
        seed = s.execute(_SEED, {"id": item.seed_id}).first()
        gates = list(s.execute(_GATES, {"id": item_id}).all())
        questions = []
        for qa in s.execute(_QAS, {"id": item_id}).all():
            questions.append({
                "phase": 1, "attempt": qa.attempt, "qa_id": qa.id, "question": qa.question,
                "answer": qa.answer, "keyword": qa.keyword, "template": qa.template,
                "template_hash": qa.template_hash, "malformed": qa.malformed, "output": qa.payload or {},
                "gates": _gates(gates, 1, qa.attempt, prompts_dir),
                "current": qa.id == item.current_qa_id,
            })
        sets = []
        for ds in s.execute(_SETS, {"id": item_id}).all():
            answers = s.execute(_ANSWERS, {"id": ds.id}).all()
            sets.append({
                "phase": 2, "attempt": ds.attempt, "set_id": ds.id, "qa_id": ds.qa_id,
                "template": ds.template, "template_hash": ds.template_hash, "malformed": ds.malformed,
                "answers": [{"rating": a.rating, "text": a.text, "degraded_weight": a.degraded_weight}
                            for a in answers],
                "output": ds.payload or {}, "gates": _gates(gates, 2, ds.attempt, prompts_dir),
                "current": ds.id == item.current_set_id,
            })
        events = [{"version": e.version, "from": e.from_state, "event": e.event, "to": e.to_state,
                   "worker": e.worker, "at": e.at}
                  for e in s.execute(_EVENTS, {"id": item_id}).all()]
        calls = _calls(s, item_id)
        story: dict[str, Any] = {
            "item": item_id, "state": item.state, "error": item.error, "failed_from": item.failed_from,
            "phase1_attempts": item.phase1_attempts, "phase2_attempts": item.phase2_attempts,
            "version": item.version, "claims": item.claims,
            "seed": {"id": seed.id if seed else None, "domain": seed.domain if seed else None,
                     "similarity": seed.similarity if seed else None,
                     "segments": [_segment(s, seed.segment1_id), _segment(s, seed.segment2_id)] if seed else []},
            "attempts": questions + sets, "events": events, "calls": calls,
        }
    paid = [c for c in calls if c["status"] == "ok"]
    story["spend"] = {
        "usd": round(sum(c["usd"] for c in paid), 6), "calls": len(calls), "paid_calls": len(paid),
        "cache_hits": sum(1 for c in calls if c["cache_hit"]),
        "errors": sum(1 for c in calls if c["status"] in ("error", "malformed", "interrupted")),
        "input_tokens": sum(c["input_tokens"] for c in calls),
        "output_tokens": sum(c["output_tokens"] for c in calls),
    }
    return story
