"""SPEC C1: the structural gate, no model. Paragraphs, parseable citations, evidence per segment."""

from __future__ import annotations

from playlisteval.config import BuildSettings
from playlisteval.gates import GateVerdict
from playlisteval.gates.citations import chunks_by_clip, count_paragraphs, parse_citations


def check(answer: str, cfg: BuildSettings, chunk_s: float) -> GateVerdict:
    paragraphs = count_paragraphs(answer)
    if paragraphs < cfg.min_paragraphs:
        return GateVerdict.reject("C1", f"{paragraphs} paragraph(s); at least {cfg.min_paragraphs} required",
                                  paragraphs=paragraphs)
    parsed = parse_citations(answer)
    if parsed.problems:
        return GateVerdict.reject("C1", "malformed citations: " + "; ".join(parsed.problems[:3]),
                                  problems=parsed.problems)
    covered = chunks_by_clip(parsed.citations, chunk_s)
    per_clip = {clip: len(covered.get(clip, set())) for clip in (1, 2)}
    total = sum(per_clip.values())
    details = {"paragraphs": paragraphs, "chunks_per_clip": per_clip, "chunks_total": total}
    short = [clip for clip, n in per_clip.items() if n < cfg.min_chunks_per_segment]
    if short:
        return GateVerdict.reject(
            "C1", f"clip {short[0]} cites {per_clip[short[0]]} chunk(s); at least "
            f"{cfg.min_chunks_per_segment} per clip required", **details)
    if not cfg.min_chunks_total <= total <= cfg.max_chunks_total:
        return GateVerdict.reject(
            "C1", f"{total} chunks cited; {cfg.min_chunks_total}–{cfg.max_chunks_total} required", **details)
    return GateVerdict.ok("C1", "structure and citations valid", **details)
