"""A video's transcript per chunk, from the best source it has (SPEC A4, DESIGN offline components):
a caption sidecar (WebVTT/SRT), else an embedded text subtitle track, else ASR on the audio, else
nothing. The source (and for ASR the model) is recorded with every chunk. Failures fall through to
the next source with a warning: one bad caption file must not stop the collection (SPEC A2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playlisteval.config import IndexSettings
from playlisteval.errors import MediaError
from playlisteval.index.asr import transcribe
from playlisteval.index.captions import find_sidecar, place_words, read_captions, read_embedded
from playlisteval.media.probe import ProbeInfo
from playlisteval.store.tables import Video

Spans = list[tuple[float, float]]


@dataclass
class Transcripts:
    texts: list[str]  # one per span
    source: str  # captions / subtitles / faster-whisper / qwen3-asr / pocketsphinx / none
    model: str = ""  # the ASR model ("" for captions, subtitles and none)
    captions_path: str | None = None
    warnings: list[str] = field(default_factory=list)


def transcripts_for(video: Video, info: ProbeInfo, spans: Spans, cfg: IndexSettings) -> Transcripts:
    """The transcript of each span and where it came from; ConfigError for an ASR setting to fix."""
    warnings: list[str] = []
    captions = Path(video.captions_path) if video.captions_path else None
    if captions is None or not captions.is_file():
        captions = find_sidecar(video.path)  # a sidecar may have appeared (or moved) since `add`
    if captions is not None:
        try:
            cues = read_captions(captions)
            return Transcripts(place_words(cues, spans), "captions", "", str(captions), warnings)
        except MediaError as exc:
            warnings.append(f"{video.path}: captions unreadable ({exc.reason}); trying the next source")
    if info.subtitles:
        try:
            cues = read_embedded(video.path)
            return Transcripts(place_words(cues, spans), "subtitles", "", None, warnings)
        except MediaError as exc:
            warnings.append(f"{video.path}: embedded subtitles unreadable ({exc.reason}); trying ASR")
    if not info.has_audio:
        warnings.append(f"{video.path}: no audio track and no captions; only its frames can be indexed")
        return Transcripts(["" for _ in spans], "none", "", None, warnings)
    speech = transcribe(video.path, spans, cfg)
    return Transcripts(speech.texts, speech.source, speech.model, None, warnings + speech.warnings)
