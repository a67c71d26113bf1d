"""SPEC H2's model call: role H grounds the question's two hops and every sentence of the reference
answer to M:S ranges on each segment's own clock.

The request: the prompt (h_evidence.j2), then for each hop its whole segment (no audio, 480p, 2 fps by
default) and the segment's transcript, each line relabelled [M:S-M:S] on the segment's clock, so that
times read from the video and from the transcript share one time base. The model reads the video
itself: the generator's own citations are removed from the reference answer.

``problem`` is the checker of a reply that matches the schema: every hop has a range, every range lies
inside its video and ends after it starts, every sentence number is one the prompt showed. A reply
with a problem is re-asked by the runner with the problem as a repair note, and one that stays
unusable is a fault for the caller, never an empty clip list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from playlisteval.build.gates.citations import strip_citations, to_seconds
from playlisteval.config import Settings
from playlisteval.models.request import ModelRequest, Part, TextPart, VideoPart
from playlisteval.prompts.render import prompts_dir_of, render
from playlisteval.store.engine import transaction
from playlisteval.store.tables import QA, Chunk, DistractorSet, Item, Pair, Seed, Segment, Video

TEMPLATE = "h_evidence.j2"
SLACK_S = 1.0  # a range may end this far past its video's end (M:S rounds to whole seconds)


def mmss(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    return f"{s // 60}:{s % 60:02d}"


@dataclass(frozen=True)
class SegmentMedia:
    hop: int  # 1 or 2
    video_id: int
    path: str
    start: float  # seconds in the video
    end: float
    lines: tuple[tuple[float, float, str], ...]  # (start, end) on the segment's clock, transcript text

    @property
    def length(self) -> float:
        return self.end - self.start

    def transcript(self) -> str:
        text = "\n".join(f"[{mmss(a)}-{mmss(b)}] {t.strip()}" for a, b, t in self.lines if t.strip())
        return text or "(nothing is said)"


@dataclass(frozen=True)
class GroundingInput:
    item_id: int
    question: str
    hop_1: str
    hop_2: str
    sentences: tuple[str, ...]
    segments: tuple[SegmentMedia, SegmentMedia]


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer, each on one line (a sentence ends at . ! ? or a paragraph break)."""
    parts = re.split(r"(?<=[.!?])\s+|\n\s*\n", text.strip())
    return [" ".join(p.split()) for p in parts if p.strip()]


def load_input(engine: Engine, pair_id: int) -> GroundingInput:
    """The pair's question, hops, gold answer and its seed's two segments with their transcripts."""
    with transaction(engine) as s:
        pair = s.get(Pair, pair_id)
        assert pair is not None, f"pair {pair_id} does not exist"
        dset = s.get(DistractorSet, pair.set_id)
        assert dset is not None
        qa = s.get(QA, dset.qa_id)
        item = s.get(Item, pair.item_id)
        assert qa is not None and item is not None
        seed = s.get(Seed, item.seed_id)
        assert seed is not None
        media = []
        for hop, segment_id in ((1, seed.segment1_id), (2, seed.segment2_id)):
            seg = s.get(Segment, segment_id)
            assert seg is not None
            video = s.get(Video, seg.video_id)
            assert video is not None
            chunks = s.exec(select(Chunk).where(Chunk.video_id == video.id, Chunk.start >= seg.start - 1e-6,
                                                Chunk.end <= seg.end + 1e-6).order_by(col(Chunk.idx))).all()
            lines = tuple((c.start - seg.start, c.end - seg.start, c.transcript) for c in chunks)
            media.append(SegmentMedia(hop, int(video.id or 0), video.path, seg.start, seg.end, lines))
        payload = qa.payload or {}
    return GroundingInput(item_id=pair.item_id, question=qa.question, hop_1=str(payload.get("hop_1", "")),
                          hop_2=str(payload.get("hop_2", "")),
                          sentences=tuple(split_sentences(strip_citations(qa.answer))),
                          segments=(media[0], media[1]))


def build_request(settings: Settings, given: GroundingInput, attempt: int) -> ModelRequest:
    cfg = settings.human
    text, digest = render(TEMPLATE, prompts_dir_of(settings), question=" ".join(given.question.split()),
                          hop_1=" ".join(given.hop_1.split()) or "(not recorded)",
                          hop_2=" ".join(given.hop_2.split()) or "(not recorded)", sentences=list(given.sentences))
    parts: list[Part] = [TextPart(text=text)]
    for seg in given.segments:
        parts.append(VideoPart(path=seg.path, start=seg.start, end=seg.end, fps=cfg.grounding_fps,
                               size=cfg.grounding_size, audio=False,
                               label=f"Video {seg.hop} (hop {seg.hop}): the whole segment, {mmss(seg.length)} long"))
        parts.append(TextPart(text=f"=== Transcript {seg.hop}: everything said in Video {seg.hop}, each line "
                                   f"labelled [M:S-M:S] on its clock ===\n{seg.transcript()}"))
    return ModelRequest(role="H", parts=parts, response_schema="EvidenceGrounding", template=TEMPLATE,
                        template_hash=digest, attempt=attempt, item_id=given.item_id, purpose="human")


@dataclass(frozen=True)
class GroundedRange:
    hop: int
    start: float  # seconds on the segment's clock
    end: float
    event: str
    supports: str  # "hop 1", "hop 2" or "sentence N"


def problem(parsed: dict[str, Any], given: GroundingInput) -> str | None:
    """Why a schema-valid grounding cannot be used, or None."""
    lengths = {seg.hop: seg.length for seg in given.segments}
    issues = []
    hops = {g["hop"]: g["ranges"] for g in parsed.get("hop_groundings", [])}
    for hop in (1, 2):
        if not hops.get(hop):
            issues.append(f"hop {hop} has no range")
    for where, r in _all_ranges(parsed):
        start, end = to_seconds(r["start_time"]), to_seconds(r["end_time"])
        if end <= start:
            issues.append(f"{where}: {r['start_time']}-{r['end_time']} does not end after it starts")
        elif end > lengths[r["hop"]] + SLACK_S:
            issues.append(f"{where}: {r['end_time']} is past the end of Video {r['hop']} "
                          f"({mmss(lengths[r['hop']])})")
    numbers = [g["sentence"] for g in parsed.get("groundings", [])]
    unknown = sorted({n for n in numbers if not 0 <= n < len(given.sentences)})
    if unknown:
        issues.append(f"sentence number(s) {unknown} not in 0-{len(given.sentences) - 1}")
    return "; ".join(issues[:6]) or None


def _all_ranges(parsed: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for g in parsed.get("hop_groundings", []):
        out += [(f"hop {g['hop']}", {**r, "hop": g["hop"]}) for r in g["ranges"]]
    for g in parsed.get("groundings", []):
        out += [(f"sentence {g['sentence']}", r) for r in g["ranges"]]
    return out


def ranges(parsed: dict[str, Any]) -> list[GroundedRange]:
    """Every range of a usable grounding, in seconds on its segment's clock."""
    return [GroundedRange(int(r["hop"]), to_seconds(r["start_time"]), to_seconds(r["end_time"]),
                          str(r.get("event", "")), where) for where, r in _all_ranges(parsed)]
