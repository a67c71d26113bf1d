"""Captions (SRT or WebVTT sidecars, embedded text subtitle tracks) as timed cues: the preferred
transcript source (SPEC A4, DESIGN).

A cue belongs to the chunk that holds its midpoint, so every caption line lands in exactly one chunk
even when it straddles a chunk boundary.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from playlisteval.errors import MediaError
from playlisteval.index import fsnames

CAPTION_SUFFIXES = (".srt", ".vtt")
# a sidecar in one of these languages wins over others (".en.srt" over ".fr.srt")
_PREFERRED_LANGS = ("en", "en-us", "en-gb", "eng", "english")

_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}")
_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")  # <i>, <c.colour>, <00:00:01.000>, {\an8}
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    text: str

    @property
    def mid(self) -> float:
        return (self.start + self.end) / 2


def _seconds(hours: str | None, minutes: str, seconds: str, fraction: str) -> float:
    # "5" after a comma is 500 ms: pad the fraction on the right
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(fraction.ljust(3, "0")) / 1000


def _clean(lines: list[str]) -> str:
    text = " ".join(_TAG.sub("", line) for line in lines)
    text = text.replace("&nbsp;", " ").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class CaptionFile:
    """What a caption document held: its cues and how much of it could not be read (index/caption_checks.py)."""

    cues: list[Cue]
    blocks: int = 0  # blocks that should be cues: a timing line, or text that is not a header or a note
    unreadable: int = 0  # of those, the blocks with no "start --> end" line (or times that run backwards)
    binary: bool = False  # NUL bytes or other control characters: not a text file at all


_HEADERS = ("WEBVTT", "NOTE", "STYLE", "REGION", "X-TIMESTAMP-MAP")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")


def parse_caption_file(text: str) -> CaptionFile:
    """Cues of an SRT or WebVTT document (both share the "start --> end" timing line), with a count of the
    blocks that could not be read.

    Counter lines (SRT), cue identifiers, NOTE/STYLE/REGION blocks (WebVTT) and markup are dropped.
    Consecutive repeats of one line (rolling auto-captions) are kept once.
    """
    cues: list[Cue] = []
    blocks = unreadable = 0
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").split("\n")
        timing_at = next((i for i, line in enumerate(lines) if _TIMING.match(line)), None)
        if timing_at is None:
            first = lines[0].strip()
            if first and not first.startswith(_HEADERS) and not (len(lines) == 1 and first.isdigit()):
                blocks, unreadable = blocks + 1, unreadable + 1  # junk where a cue should be
            continue
        blocks += 1
        match = _TIMING.match(lines[timing_at])
        assert match is not None
        g = match.groups()
        start, end = _seconds(*g[0:4]), _seconds(*g[4:8])
        body = _clean(lines[timing_at + 1:])
        if end < start:
            unreadable += 1
            continue
        if not body:
            continue
        if cues and cues[-1].text == body:
            # rolling captions repeat a line in the next cue: extend instead of duplicating
            last = cues[-1]
            cues[-1] = Cue(last.start, max(last.end, end), last.text)
            continue
        cues.append(Cue(start, end, body))
    cues.sort(key=lambda c: (c.start, c.end))
    return CaptionFile(cues, blocks, unreadable, binary=bool(_CONTROL.search(text)))


def parse_captions(text: str) -> list[Cue]:
    """The cues of an SRT or WebVTT document (``parse_caption_file`` without the count of what was unreadable)."""
    return parse_caption_file(text).cues


def read_caption_file(path: str | Path) -> CaptionFile:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MediaError(path, f"cannot read captions: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # old SRT files; never fails, at worst mangles accents
    return parse_caption_file(text)


def read_captions(path: str | Path) -> list[Cue]:
    return read_caption_file(path).cues


def text_between(cues: list[Cue], start: float, end: float) -> str:
    """The text of the cues whose midpoint lies in [start, end)."""
    return " ".join(c.text for c in cues if start <= c.mid < end)


def place_words(cues: list[Cue], spans: list[tuple[float, float]]) -> list[str]:
    """One text per span: each timed word (or cue) goes to the span holding its midpoint, so a word
    said across a chunk boundary lands in exactly one chunk."""
    return [text_between(cues, start, end) for start, end in spans]


def find_sidecar(video_path: str | Path) -> Path | None:
    """The caption file beside a video: ``stem.srt``/``stem.vtt``, else ``stem.<lang>.srt``, English first."""
    video = Path(video_path)
    folder = video.parent
    for suffix in CAPTION_SUFFIXES:
        exact = folder / f"{video.stem}{suffix}"
        if exact.is_file():
            return exact
    if not folder.is_dir():
        return None
    candidates: list[tuple[int, str, Path]] = []
    prefix = video.stem + "."
    for entry in folder.iterdir():
        if not entry.is_file() or entry.suffix.lower() not in CAPTION_SUFFIXES:
            continue
        if fsnames.undecodable(entry.name):  # not UTF-8: the store cannot keep its path (index/fsnames.py)
            continue
        if not entry.name.startswith(prefix):
            continue
        lang = entry.name[len(prefix):-len(entry.suffix)].lower()
        if "." in lang:  # "stem.part2.en.srt" belongs to another video "stem.part2"
            continue
        rank = _PREFERRED_LANGS.index(lang) if lang in _PREFERRED_LANGS else len(_PREFERRED_LANGS)
        candidates.append((rank, entry.name, entry))
    return min(candidates)[2] if candidates else None


def read_embedded(video_path: str | Path, track: int = 0, timeout_s: float = 300) -> list[Cue]:
    return read_embedded_file(video_path, track, timeout_s).cues


def read_embedded_file(video_path: str | Path, track: int = 0, timeout_s: float = 300) -> CaptionFile:
    """Cues of the video's ``track``-th text subtitle stream, converted to WebVTT by ffmpeg."""
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", str(video_path), "-map", f"0:s:{track}",
           "-f", "webvtt", "-"]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MediaError(video_path, f"cannot read embedded subtitles: {exc}") from None
    if done.returncode != 0:
        detail = (done.stderr.decode(errors="replace").strip().splitlines() or ["unknown error"])[-1]
        raise MediaError(video_path, f"cannot read embedded subtitles: {detail}")
    return parse_caption_file(done.stdout.decode("utf-8", errors="replace"))
