"""Kept frames: the frames `index` read, saved once as small JPEGs and reused instead of decoding again.

Decoding is the cost of every frame consumer (OCR, judge evidence, human-evaluation posters), and on
ordinary 30-fps video a cold frame costs half a GOP of decoding. So the frames the index samples are
written beside the project, under ``<media>/kept_frames/<content fingerprint>/<seconds>.jpg``, fitted
inside ``MAX_SIDE`` px: the folder is named by the video's content (a moved file keeps its frames, an
edited one gets new ones) and each file by the timestamp it shows, so every process finds them without
the store. A file is written once (atomic rename; a second writer of the same frame just replaces it
with an identical one) and never changed.
"""

from __future__ import annotations

import bisect
import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from playlisteval.media.clips import content_fingerprint

MAX_SIDE = 640
QUALITY = 85
_listings: dict[Path, tuple[int, list[float]]] = {}  # folder → (its mtime, sorted times)
_lock = threading.Lock()


def frame_name(t: float) -> str:
    return f"{t:010.3f}.jpg"


class KeptFrames:
    """One video's kept frames."""

    def __init__(self, root: Path, video_path: str | Path) -> None:
        self.folder = root / content_fingerprint(video_path)
        self.unwritable = ""  # why the last frame could not be written, if it could not

    def path(self, t: float) -> Path:
        return self.folder / frame_name(t)

    def has(self, t: float) -> bool:
        return self.path(t).is_file()

    def save(self, t: float, image: Image.Image) -> Path:
        """Keep ``image`` as the frame at ``t`` unless it is kept already; returns its file."""
        target = self.path(t)
        if target.is_file():
            return target
        self.folder.mkdir(parents=True, exist_ok=True)
        if max(image.size) > MAX_SIDE:
            scale = MAX_SIDE / max(image.size)
            image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                                 Image.Resampling.BILINEAR)
        tmp = target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        image.convert("RGB").save(tmp, "JPEG", quality=QUALITY)
        tmp.replace(target)
        return target

    def keep(self, t: float, image: Image.Image) -> Image.Image:
        """``image`` as kept: the kept file's image when the frame is kept already, else the image fitted, JPEG
        encoded and decoded as ``save`` writes it (written too when the disk allows). Whoever reads a frame
        first, and whichever process that was, what is made from it is the same as from ``load`` later: a
        video re-indexed after its worker died mid-way (its frames partly kept) gets the same chunks."""
        target = self.path(t)
        if target.is_file():
            with Image.open(target) as im:
                return im.convert("RGB")
        if max(image.size) > MAX_SIDE:
            scale = MAX_SIDE / max(image.size)
            image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                                 Image.Resampling.BILINEAR)
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, "JPEG", quality=QUALITY)
        data = buffer.getvalue()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        except OSError as exc:  # a full or read-only disk costs later reuse, not this frame
            self.unwritable = str(exc)[:200]
        with Image.open(io.BytesIO(data)) as im:
            return im.convert("RGB")

    def load(self, times: Sequence[float]) -> list[Image.Image] | None:
        """The kept images at ``times`` (decoded JPEGs), or None when any of them is not kept."""
        paths = [self.path(t) for t in times]
        if not all(p.is_file() for p in paths):
            return None
        images = []
        for p in paths:
            with Image.open(p) as im:
                images.append(im.convert("RGB"))
        return images

    def times(self) -> list[float]:
        """The kept timestamps, sorted; the listing is cached until the folder changes."""
        try:
            mtime = self.folder.stat().st_mtime_ns
        except OSError:
            return []
        with _lock:
            cached = _listings.get(self.folder)
            if cached is not None and cached[0] == mtime:
                return cached[1]
        found = []
        for entry in os.scandir(self.folder):
            if entry.name.endswith(".jpg"):
                try:
                    found.append(float(entry.name[:-4]))
                except ValueError:
                    continue
        found.sort()
        with _lock:
            _listings[self.folder] = (mtime, found)
        return found

    def within(self, start: float, end: float) -> list[float]:
        """The kept timestamps in [start, end)."""
        times = self.times()
        return times[bisect.bisect_left(times, start - 5e-4):bisect.bisect_left(times, end - 5e-4)]


def kept_root(media_dir: Path) -> Path:
    return media_dir / "kept_frames"
