"""The agentic judge's tools (SPEC G6, issue 20): search the corpus, fetch frames of a time range, read a
transcript range.

The judge names videos by the numbers of the corpus listing its prompt gives (``Video 3``) and times in
seconds on each video's own clock, as the transcript block does. Every tool works inside the run's scope
(the oracle scope is the two gold segments): a range outside it is refused with a message the judge can
read, never widened. Search is the run's retriever (index/search.py's vectors through eval/evidence.py);
frames are the same JPEGs a fixed-evidence judge gets (eval/media.py), at the fps and size the judge
asks for, capped by ``[eval] agent_max_frames`` and ``agent_max_fps`` (the fps actually used is said in
the result). Tools are deterministic: the same calls give the same results, so a replayed conversation
hashes the same at every turn and costs nothing.

Arguments come from a model and are untrusted: each is checked and a bad one is answered with an error
line, not raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from playlisteval.config import Settings
from playlisteval.errors import ConfigError, MediaError
from playlisteval.eval.corpus import CorpusVideo, Question
from playlisteval.eval.evidence import Evidence, Frame, Retriever, mmss
from playlisteval.eval.media import image_parts
from playlisteval.models.request import ImagePart, ToolCall, ToolSpec

SEARCH, FRAMES, TRANSCRIPT = "search", "fetch_frames", "read_transcript"
MAX_TRANSCRIPT_CHARS = 6000

TOOLS = [
    ToolSpec(name=SEARCH, description=(
        "Search the video collection for the moments that best match a text query. Returns the best "
        "30-second chunks as 'Video N start-end s' with their similarity and what is said there."),
        parameters={"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for, in words."},
            "k": {"type": "integer", "description": "How many chunks to return (default 8)."}},
            "required": ["query"]}),
    ToolSpec(name=FRAMES, description=(
        "Look at a time range of one video: returns frames sampled evenly over [start, end) seconds at "
        "the given frames per second, each fit inside the given size."),
        parameters={"type": "object", "properties": {
            "video": {"type": "integer", "description": "The video's number in the listing."},
            "start": {"type": "number", "description": "Seconds on that video's clock."},
            "end": {"type": "number", "description": "Seconds on that video's clock."},
            "fps": {"type": "number", "description": "Frames per second (default 0.5)."},
            "width": {"type": "integer", "description": "Frame width in pixels (default 640)."},
            "height": {"type": "integer", "description": "Frame height in pixels (default 480)."}},
            "required": ["video", "start", "end"]}),
    ToolSpec(name=TRANSCRIPT, description=(
        "Read what is said in a time range of one video: one line per 30-second chunk."),
        parameters={"type": "object", "properties": {
            "video": {"type": "integer", "description": "The video's number in the listing."},
            "start": {"type": "number", "description": "Seconds on that video's clock."},
            "end": {"type": "number", "description": "Seconds on that video's clock."}},
            "required": ["video", "start", "end"]}),
]


@dataclass
class ToolResult:
    """What a call returned: text for the model, frames that follow it, and what it served (recorded)."""

    text: str
    images: list[ImagePart] = field(default_factory=list)
    chunks: list[int] = field(default_factory=list)
    frames: list[tuple[int, float]] = field(default_factory=list)  # (video id, t)
    error: bool = False


def listing(videos: list[CorpusVideo]) -> str:
    """The corpus as the judge's prompt lists it: one line per video, its number, file name and range."""
    return "\n".join(f"Video {n}: {Path(v.path).stem} ({v.start:.0f}-{v.end:.0f} s)" for n, v in enumerate(videos, 1))


class Toolbox:
    """The tools over one question's corpus (the run's scope)."""

    def __init__(self, settings: Settings, question: Question, videos: list[CorpusVideo],
                 retriever: Retriever | None, size: tuple[int, int]) -> None:
        self.settings = settings
        self.question = question
        self.videos = videos
        self.retriever = retriever
        self.size = size
        self.number = {v.video_id: n for n, v in enumerate(videos, 1)}

    def run(self, call: ToolCall) -> ToolResult:
        args = call.arguments
        if "_unparsed" in args:
            return ToolResult(f"error: the arguments were not a JSON object: {args['_unparsed'][:200]}", error=True)
        try:
            if call.name == SEARCH:
                return self.search(str(args.get("query") or ""), _int(args.get("k"), self.settings.eval.agent_search_k))
            if call.name == FRAMES:
                return self.fetch_frames(_int(args.get("video"), 0), _num(args.get("start")), _num(args.get("end")),
                                         _num(args.get("fps"), 0.5), _int(args.get("width"), self.size[0]),
                                         _int(args.get("height"), self.size[1]))
            if call.name == TRANSCRIPT:
                return self.read_transcript(_int(args.get("video"), 0), _num(args.get("start")), _num(args.get("end")))
        except _BadArgument as exc:
            return ToolResult(f"error: {exc}", error=True)
        return ToolResult(f"error: no tool named {call.name!r}; the tools are {SEARCH}, {FRAMES}, {TRANSCRIPT}",
                          error=True)

    # -- the tools ---------------------------------------------------------------------------------
    def search(self, query: str, k: int) -> ToolResult:
        if not query.strip():
            raise _BadArgument("search needs a query")
        if self.retriever is None:
            return ToolResult("error: this run has no retriever to search with", error=True)
        k = max(1, min(k, 4 * self.settings.eval.agent_search_k))
        try:
            top = self.retriever.top_chunks(replace(self.question, text=query), self.videos, k, whole_domain=False)
        except ConfigError as exc:
            return ToolResult(f"error: {exc}", error=True)
        where = {c.chunk_id: (v, c) for v in self.videos for c in v.chunks}
        lines, chunks = [], []
        for chunk_id, score in top:
            if chunk_id not in where:
                continue
            video, chunk = where[chunk_id]
            chunks.append(chunk_id)
            said = " ".join(chunk.transcript.split())[:300]
            lines.append(f"Video {self.number[video.video_id]} {chunk.start:.0f}-{chunk.end:.0f} s "
                         f"(similarity {score:.3f}): {said}")
        return ToolResult("\n".join(lines) or "no chunk matches", chunks=chunks)

    def fetch_frames(self, number: int, start: float, end: float, fps: float, width: int, height: int) -> ToolResult:
        video = self._video(number)
        start, end = max(start, video.start), min(end, video.end)
        if end <= start:
            raise _BadArgument(_outside(number, video))
        cfg = self.settings.eval
        fps = max(1e-3, min(fps, cfg.agent_max_fps))
        count = max(1, min(int((end - start) * fps), cfg.agent_max_frames))
        width, height = max(16, min(width, 1920)), max(16, min(height, 1080))
        times = [start + (j + 0.5) * (end - start) / count for j in range(count)]
        chunk_of = _chunk_finder(video)
        frames = [Frame(video.video_id, video.path, video.codec, t, chunk_of(t)) for t in times]
        evidence = Evidence("agentic", "", frames, [], 1, end - start)
        try:
            images = image_parts(self.settings, evidence, (width, height))
        except MediaError as exc:
            return ToolResult(f"error: the frames could not be read: {exc}", error=True)
        used = count / (end - start)
        note = f" (lowered from {fps:g} to fit {cfg.agent_max_frames} frames)" if used < fps - 1e-9 else ""
        text = (f"{count} frame(s) of Video {number} from {mmss(start)} to {mmss(end)} at {used:.3g} fps{note}, "
                f"each within {width}x{height}; they follow, each marked with its time.")
        return ToolResult(text, images=images, chunks=sorted({f.chunk_id for f in frames}),
                          frames=[(video.video_id, round(t, 3)) for t in times])

    def read_transcript(self, number: int, start: float, end: float) -> ToolResult:
        video = self._video(number)
        chunks = [c for c in video.chunks if c.end > start and c.start < end]
        if not chunks:
            raise _BadArgument(_outside(number, video))
        lines = [f"[Video {number} @ {mmss(c.start)}] {' '.join(c.transcript.split())}" for c in chunks]
        text = "\n".join(lines)
        if len(text) > MAX_TRANSCRIPT_CHARS:
            text = text[:MAX_TRANSCRIPT_CHARS] + "\n(cut: ask for a shorter range)"
        return ToolResult(text, chunks=[c.chunk_id for c in chunks])

    def _video(self, number: int) -> CorpusVideo:
        if not 1 <= number <= len(self.videos):
            raise _BadArgument(f"there is no Video {number}: the listing numbers 1 to {len(self.videos)}")
        return self.videos[number - 1]


class _BadArgument(ValueError):
    pass


def _outside(number: int, video: CorpusVideo) -> str:
    return f"Video {number} has nothing in that range: it spans {video.start:.0f}-{video.end:.0f} s"


def _int(value: Any, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _BadArgument(f"{value!r} is not a whole number") from None


def _num(value: Any, default: float | None = None) -> float:
    if value is None:
        if default is None:
            raise _BadArgument("a start and an end in seconds are needed")
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _BadArgument(f"{value!r} is not a number of seconds") from None


def _chunk_finder(video: CorpusVideo) -> Any:
    def chunk_of(t: float) -> int:
        for chunk in video.chunks:
            if chunk.start <= t < chunk.end:
                return chunk.chunk_id
        return video.chunks[-1].chunk_id
    return chunk_of
