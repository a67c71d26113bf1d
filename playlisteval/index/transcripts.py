"""A video's transcript per chunk, from the best source it has (SPEC A4, DESIGN offline components):
a caption sidecar (WebVTT/SRT), else an embedded text subtitle track, else ASR on the audio, else
nothing. The source (and for ASR the model) is recorded with every chunk. Failures fall through to
the next source with a warning: one bad caption file must not stop the collection (SPEC A2). Captions
that fail their checks (index/caption_checks.py: unreadable, another video's span, too few chunks with
text, a sidecar older than a re-encoded video) fall through alike, with a warning naming the file and why
(issue 44); only for a video with no audio and no other source are they kept, with the warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playlisteval.config import IndexSettings
from playlisteval.errors import MediaError
from playlisteval.index import caption_checks
from playlisteval.index.asr import transcribe
from playlisteval.index.captions import CaptionFile, find_sidecar, place_words, read_caption_file, read_embedded_file
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
    warnings: list[str] = []  # shared by every Transcripts made here: what one source said stays said
    unfit: Transcripts | None = None  # captions that failed their checks: kept only when nothing else can speak
    captions = Path(video.captions_path) if video.captions_path else None
    if captions is None or not captions.is_file():
        captions = find_sidecar(video.path)  # a sidecar may have appeared (or moved) since `add`
    if captions is not None:
        try:
            found = read_caption_file(captions)
        except MediaError as exc:
            warnings.append(f"{video.path}: captions unreadable ({exc.reason}); trying the next source")
        else:
            made = Transcripts(place_words(found.cues, spans), "captions", "", str(captions), warnings)
            if _trusted(made, found, info, cfg, str(captions), sidecar=captions, video=Path(video.path)):
                return made
            unfit = made
    if info.subtitles:
        try:
            found = read_embedded_file(video.path)
        except MediaError as exc:
            warnings.append(f"{video.path}: embedded subtitles unreadable ({exc.reason}); trying ASR")
        else:
            made = Transcripts(place_words(found.cues, spans), "subtitles", "", None, warnings)
            if _trusted(made, found, info, cfg, f"{video.path}: embedded subtitles"):
                return made
            unfit = unfit or made
    if not info.has_audio:
        if unfit is not None and any(t.strip() for t in unfit.texts):
            warnings.append(f"{video.path}: no audio track to recognise; the {unfit.source} above are kept")
            return unfit
        warnings.append(f"{video.path}: no audio track and no captions; only its frames can be indexed")
        return Transcripts(["" for _ in spans], "none", "", None, warnings)
    speech = transcribe(video.path, spans, cfg)
    return Transcripts(speech.texts, speech.source, speech.model, None, warnings + speech.warnings)


def _trusted(made: Transcripts, found: CaptionFile, info: ProbeInfo, cfg: IndexSettings, name: str, *,
             sidecar: Path | None = None, video: Path | None = None) -> bool:
    """Whether captions pass their checks; the notes and problems go to ``made.warnings``, named by ``name``."""
    verdict = caption_checks.check(found, made.texts, info.duration, cfg, sidecar=sidecar, video=video)
    made.warnings.extend(f"{name}: {note}" for note in verdict.notes)
    if not verdict.problems:
        return True
    then = "trying embedded subtitles" if sidecar is not None and info.subtitles else \
        "speech recognition instead" if info.has_audio else "no audio to recognise"
    made.warnings.append(f"{name}: not used as the transcript: {'; '.join(verdict.problems)}; {then}")
    return False
