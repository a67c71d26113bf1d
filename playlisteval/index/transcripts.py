"""A video's transcript per chunk, from the best source it has (SPEC A4, DESIGN offline components):
a caption sidecar (WebVTT/SRT), else an embedded text subtitle track, else ASR on the audio, else
nothing. The source is recorded with every chunk. Failures fall through to the next source with a
warning: one bad caption file must not stop the collection (SPEC A2).
"""

from __future__ import annotations

from pathlib import Path

from playlisteval.errors import ConfigError, MediaError
from playlisteval.index.asr import transcribe
from playlisteval.index.captions import find_sidecar, read_captions, read_embedded, text_between
from playlisteval.media.probe import ProbeInfo
from playlisteval.store.tables import Video

Spans = list[tuple[float, float]]


def transcripts_for(video: Video, info: ProbeInfo, spans: Spans,
                    asr: str) -> tuple[list[str], str, str | None, list[str]]:
    """(one transcript per span, source, captions path or None, warnings)."""
    warnings: list[str] = []
    captions = Path(video.captions_path) if video.captions_path else None
    if captions is None or not captions.is_file():
        captions = find_sidecar(video.path)  # a sidecar may have appeared (or moved) since `add`
    if captions is not None:
        try:
            cues = read_captions(captions)
            return [text_between(cues, s, e) for s, e in spans], "captions", str(captions), warnings
        except MediaError as exc:
            warnings.append(f"{video.path}: captions unreadable ({exc.reason}); trying the next source")
    if info.subtitles:
        try:
            cues = read_embedded(video.path)
            return [text_between(cues, s, e) for s, e in spans], "subtitles", None, warnings
        except MediaError as exc:
            warnings.append(f"{video.path}: embedded subtitles unreadable ({exc.reason}); trying ASR")
    if not info.has_audio:
        warnings.append(f"{video.path}: no audio track and no captions; transcript left empty")
        return ["" for _ in spans], "none", None, warnings
    try:
        words = transcribe(video.path, asr)
    except ConfigError:
        raise  # an unknown backend is the user's setting to fix, not this video's fault
    except Exception as exc:  # a failed ASR must not stop the collection (SPEC A2)
        reason = exc.reason if isinstance(exc, MediaError) else f"{type(exc).__name__}: {exc}"
        warnings.append(f"{video.path}: ASR ({asr}) failed ({reason}); empty transcript")
        return ["" for _ in spans], "none", None, warnings
    return [text_between(words, s, e) for s, e in spans], asr, None, warnings
