"""SPEC C1: the structural gate, no model. Paragraphs, parseable citations, evidence per segment.

Reasons start with a stable kind ("too few paragraphs: …") so the funnel can count them by kind.
"""

from __future__ import annotations

from playlisteval.config import BuildSettings
from playlisteval.gates import GateVerdict
from playlisteval.gates.citations import chunks_by_clip, count_paragraphs, parse_citations


def check(
    answer: str, cfg: BuildSettings, chunk_s: float, clip_lengths: dict[int, float] | None = None,
    offsets: dict[int, float] | None = None,
) -> GateVerdict:
    paragraphs = count_paragraphs(answer)
    if paragraphs < cfg.min_paragraphs:
        return GateVerdict.reject("C1", f"too few paragraphs: {paragraphs}, at least {cfg.min_paragraphs} required",
                                  paragraphs=paragraphs)
    parsed = parse_citations(answer, clip_lengths=clip_lengths)
    if parsed.problems:
        return GateVerdict.reject("C1", "malformed citation: " + "; ".join(parsed.problems[:3]),
                                  problems=parsed.problems)
    covered = chunks_by_clip(parsed.citations, chunk_s, offsets)
    per_clip = {clip: len(covered.get(clip, set())) for clip in (1, 2)}
    total = sum(per_clip.values())
    details = {"paragraphs": paragraphs, "chunks_per_clip": per_clip, "chunks_total": total,
               "citations": len(parsed.citations)}
    for clip, n in per_clip.items():
        if n < cfg.min_chunks_per_segment:
            return GateVerdict.reject(
                "C1", f"too little evidence from one clip: clip {clip} cites {n} chunk(s), at least "
                f"{cfg.min_chunks_per_segment} required", **details)
    if not cfg.min_chunks_total <= total <= cfg.max_chunks_total:
        return GateVerdict.reject(
            "C1", f"evidence total out of range: {total} chunks cited, "
            f"{cfg.min_chunks_total}–{cfg.max_chunks_total} required", **details)
    return GateVerdict.ok("C1", "structure and citations valid", **details)
