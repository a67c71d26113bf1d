"""Whether a video's captions can be trusted as its transcript (issue 44, deliverable 3).

Captions were taken as they came: a garbage ``.srt`` beside a narrated lecture gave empty transcripts
labelled "captions"; a video replaced in place kept the old episode's sidecar; 98,200 cues past a video's
end were dropped with no word. Each check below names what it found; a *problem* makes the captions unfit
(the transcript then comes from the next source: embedded subtitles, else speech recognition), a *note* is
said and the captions kept:

- parse: no cue could be read, most blocks were unreadable, or the file is not text;
- span: a share of cues start past the video's end (captions of another, longer video), or the last cue
  ends far past it; a few stray cues past the end are a note (they are dropped);
- coverage: under ``[index] captions_min_share`` of the chunks get any text;
- age: a sidecar older than its video by more than ``[index] captions_stale_s`` (the video was re-encoded
  or replaced after the captions were written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playlisteval.config import IndexSettings
from playlisteval.index.captions import CaptionFile

_PAST_END_SHARE = 0.1  # more cues than this past the end: the captions are another video's
_UNREADABLE_SHARE = 0.5  # more blocks than this unreadable: the file is not the captions it claims to be


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)  # any: the captions are not used
    notes: list[str] = field(default_factory=list)  # said, the captions kept


def _slack(duration: float) -> float:
    """How far past the end a cue may run: encoders pad and round the last frames."""
    return max(2.0, 0.02 * duration)


def check(found: CaptionFile, texts: list[str], duration: float, cfg: IndexSettings, *,
          sidecar: Path | None = None, video: Path | None = None) -> Verdict:
    """The problems and notes of captions ``found``, placed as ``texts`` (one per chunk) on a video of
    ``duration`` seconds; the age check needs the ``sidecar`` and ``video`` paths."""
    verdict = Verdict()
    _parse(found, verdict)
    if found.cues and duration > 0:
        _span(found, duration, verdict)
    if found.cues and texts and not verdict.problems:
        with_text = sum(1 for t in texts if t.strip())
        if with_text / len(texts) < cfg.captions_min_share:
            verdict.problems.append(f"only {with_text} of {len(texts)} chunks get any text (under "
                                    f"[index] captions_min_share = {cfg.captions_min_share:g})")
    if sidecar is not None and video is not None and cfg.captions_stale_s > 0:
        _age(sidecar, video, cfg.captions_stale_s, verdict)
    return verdict


def _parse(found: CaptionFile, verdict: Verdict) -> None:
    if found.binary:
        verdict.problems.append("not a text file (control characters)")
    elif not found.cues:
        verdict.problems.append(f"no cue could be read ({found.blocks} block(s), none with text under a "
                                "'start --> end' timing line)")
    elif found.blocks and found.unreadable / found.blocks > _UNREADABLE_SHARE:
        verdict.problems.append(f"{found.unreadable} of {found.blocks} blocks unreadable")
    elif found.unreadable:
        verdict.notes.append(f"{found.unreadable} of {found.blocks} blocks unreadable, skipped")


def _span(found: CaptionFile, duration: float, verdict: Verdict) -> None:
    limit = duration + _slack(duration)
    past = [c for c in found.cues if c.start >= limit]
    last_end = max(c.end for c in found.cues)
    where = f"the video is {duration:.1f} s, the last cue ends at {last_end:.1f} s"
    if past and len(past) / len(found.cues) > _PAST_END_SHARE:
        verdict.problems.append(f"{len(past)} of {len(found.cues)} cues start past the video's end ({where}): "
                                "captions of another video")
    elif past:
        verdict.notes.append(f"{len(past)} of {len(found.cues)} cues start past the video's end ({where}); "
                             "dropped")


def _age(sidecar: Path, video: Path, stale_s: float, verdict: Verdict) -> None:
    try:
        behind = video.stat().st_mtime - sidecar.stat().st_mtime
    except OSError:
        return  # a file that cannot be read is reported where it is read
    if behind > stale_s:
        verdict.problems.append(f"older than its video by {behind / 3600:.1f} h (over [index] captions_stale_s = "
                                f"{stale_s:g} s): the video was re-encoded or replaced after its captions")
