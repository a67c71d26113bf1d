"""One item's whole life, read from the store: its seed, segments and clips, every attempt in order with
its output and gate verdicts, the feedback the next attempt received, the model calls it made (tokens,
latency, dollars, errors), its state transitions and where it ended.

Everything here is a read; nothing is recomputed or re-asked. The shape is the one ``playlisteval show
ITEM --json`` prints (keys only ever added, never renamed).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.build.stages.feedback import guidance
from playlisteval.errors import PlaylistEvalError
from playlisteval.store.engine import transaction
from playlisteval.store.tables import (
    QA,
    Answer,
    DistractorSet,
    Domain,
    GateResult,
    Item,
    ItemEvent,
    ModelCall,
    ModelPrompt,
    Playlist,
    ResponseCache,
    Seed,
    Segment,
    Video,
)


class ItemNotFound(PlaylistEvalError):
    pass


def _segment(s: Any, segment_id: int) -> dict[str, Any]:
    seg = s.get(Segment, segment_id)
    if seg is None:
        return {"id": segment_id, "missing": True}
    video = s.get(Video, seg.video_id)
    playlist = s.get(Playlist, video.playlist_id) if video else None
    return {
        "id": seg.id, "video_id": seg.video_id, "video": video.title if video else None,
        "path": video.path if video else None, "playlist": playlist.name if playlist else None,
        "start": seg.start, "end": seg.end, "chunks": [seg.first_chunk, seg.last_chunk],
    }


def _gates(rows: list[GateResult], phase: int, attempt: int, prompts_dir: str | None) -> list[dict[str, Any]]:
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


def _calls(s: Any, item_id: int) -> list[dict[str, Any]]:
    calls = []
    for c in s.exec(select(ModelCall).where(ModelCall.item_id == item_id).order_by(col(ModelCall.id))):
        cached = s.get(ResponseCache, c.request_hash)
        asked = s.get(ModelPrompt, c.request_hash.split(":try", 1)[0])
        reply = (cached.response or {}).get("text") if cached is not None else None
        calls.append({
            "id": c.id, "role": c.role, "model": f"{c.provider}/{c.model}", "purpose": c.purpose,
            "status": c.status, "cache_hit": bool(c.cache_hit), "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens, "thinking_tokens": c.thinking_tokens,
            "latency_s": round(c.latency_s, 3), "usd": c.usd, "estimated_usd": c.estimated_usd,
            "error": c.error, "request_hash": c.request_hash, "prompt": asked.text if asked else None,
            "reply": reply,
        })
    return calls


def item_story(engine: Engine, item_id: int, prompts_dir: str | None = None) -> dict[str, Any]:
    """The item's story as plain data (JSON-ready)."""
    with transaction(engine) as s:
        item = s.get(Item, item_id)
        if item is None:
            last = s.exec(select(Item.id).order_by(col(Item.id).desc()).limit(1)).first()
            hint = f"items are numbered 1–{last}" if last else "the store has no items yet: run `playlisteval build`"
            raise ItemNotFound(f"no item {item_id}: {hint}")
        seed = s.get(Seed, item.seed_id)
        domain = s.get(Domain, seed.domain_id) if seed else None
        gates = list(s.exec(select(GateResult).where(GateResult.item_id == item_id)
                            .order_by(col(GateResult.id))).all())
        questions = []
        for qa in s.exec(select(QA).where(QA.item_id == item_id).order_by(col(QA.attempt), col(QA.id))):
            questions.append({
                "phase": 1, "attempt": qa.attempt, "qa_id": qa.id, "question": qa.question,
                "answer": qa.answer, "keyword": qa.keyword, "template": qa.template,
                "template_hash": qa.template_hash, "malformed": qa.malformed, "output": qa.payload or {},
                "gates": _gates(gates, 1, qa.attempt, prompts_dir),
                "current": qa.id == item.current_qa_id,
            })
        sets = []
        for ds in s.exec(select(DistractorSet).where(DistractorSet.item_id == item_id)
                         .order_by(col(DistractorSet.attempt), col(DistractorSet.id))):
            answers = s.exec(select(Answer).where(Answer.set_id == ds.id).order_by(col(Answer.rating).desc()))
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
                  for e in s.exec(select(ItemEvent).where(ItemEvent.item_id == item_id)
                                  .order_by(col(ItemEvent.version), col(ItemEvent.id)))]
        calls = _calls(s, item_id)
        story: dict[str, Any] = {
            "item": item_id, "state": item.state, "error": item.error, "failed_from": item.failed_from,
            "phase1_attempts": item.phase1_attempts, "phase2_attempts": item.phase2_attempts,
            "version": item.version, "claims": item.claims,
            "seed": {"id": seed.id if seed else None, "domain": domain.name if domain else None,
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
