"""SPEC C1: the structural gate, no model. The question's Bloom keyword (SPEC B2), paragraphs, parseable
citations, evidence per segment.

Reasons start with a stable kind ("too few paragraphs: …") so the funnel can count them by kind.
"""

from __future__ import annotations

import re

from playlisteval.build.gates import GateVerdict
from playlisteval.build.gates.citations import chunks_by_clip, count_paragraphs, parse_citations
from playlisteval.config import BuildSettings


def has_keyword(question: str, keyword: str) -> bool:
    """SPEC B2: the question contains its keyword word for word (any case, any spacing inside a
    several-word keyword such as "find out"); "use" is not found in "user" or "reused"."""
    words = [re.escape(w) for w in keyword.split()]
    return bool(words) and re.search(r"(?<![\w-])" + r"\s+".join(words) + r"(?![\w-])", question, re.I) is not None


def check(
    answer: str, cfg: BuildSettings, chunk_s: float, clip_lengths: dict[int, float] | None = None,
    offsets: dict[int, float] | None = None, *, question: str = "", keyword: str = "",
) -> GateVerdict:
    """``keyword``: the Bloom keyword drawn for the request that wrote ``question`` (none: not checked,
    e.g. a question stored before keywords were)."""
    if keyword.strip() and not has_keyword(question, keyword):
        return GateVerdict.reject("C1", f"Bloom keyword missing: the question does not contain {keyword.strip()!r}",
                                  keyword=keyword.strip())
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
