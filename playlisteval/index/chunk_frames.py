"""A video's sampled frames, chunk by chunk, for the index (index/work.py): kept frames reused or decoded
(and kept), read one chunk ahead on a thread of their own, with text detection there when OCR runs ahead.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from PIL import Image

from playlisteval.index import phases
from playlisteval.index.ocr_ahead import DetectAhead, Seen
from playlisteval.logs import get_logger
from playlisteval.media.frames import FrameReader
from playlisteval.media.kept import MAX_SIDE, KeptFrames

log = get_logger(__name__)


class FramesAhead:
    """The chunks' frames read one chunk ahead on a thread of their own: decoding (PyAV, outside the GIL)
    runs while the chunk before is OCR'd (ONNX, outside the GIL too), so on two cores a lone video costs
    about the longer of the two instead of their sum (issue 26: decode was 0.6 s of the 5-minute 720p
    lecture's 4.5 s, all of it in series with OCR). Chunks are taken in order, each once."""

    def __init__(self, frames: ChunkFrames, times: list[list[float]], detect: DetectAhead | None = None) -> None:
        self.frames, self.times, self.detect = frames, times, detect
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="frames")
        self.pending: dict[int, Future[tuple[list[Image.Image], list[Seen] | None]]] = {}

    def _read(self, i: int) -> tuple[list[Image.Image], list[Seen] | None]:
        with phases.timed("decode"):
            images = self.frames.read(self.times[i])
        if self.detect is None:
            return images, None
        with phases.timed("OCR detection ahead"):
            return images, self.detect.see(images)

    def _submit(self, i: int) -> None:
        if i < len(self.times) and i not in self.pending:
            self.pending[i] = self.pool.submit(self._read, i)

    def take(self, i: int) -> tuple[list[Image.Image], list[Seen] | None]:
        self._submit(i)
        self._submit(i + 1)  # the next chunk decodes while this one is OCR'd
        return self.pending.pop(i).result()  # what reading raised (a corrupt file) is raised here

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class ChunkFrames:
    """A chunk's sampled frames: the kept ones when all are kept and big enough, else decoded (and kept).

    The decoder is opened on the first chunk that needs it, so a video whose frames are all kept is
    never decoded.
    """

    def __init__(self, path: str, codec: str | None, side: int, source: tuple[int, int], keys: list[float],
                 kept: KeptFrames) -> None:
        self.path, self.codec, self.side, self.source, self.keys, self.kept = path, codec, side, source, keys, kept
        self.reader: FrameReader | None = None
        self.reused = 0
        self.backend = "kept"

    def read(self, times: list[float]) -> list[Image.Image]:
        if self.side <= MAX_SIDE:  # kept frames are MAX_SIDE at most: a bigger need decodes
            images = self.kept.load(times)
            if images is not None:
                self.reused += len(images)
                return images
        if self.reader is None:
            self.reader = FrameReader(self.path, self.codec, (self.side, self.side), self.source, keyframes=self.keys)
        images = self.reader.read(times)
        self.backend = self.reader.backend
        if self.side <= MAX_SIDE:
            # what is read is the frames as kept, so a video decoded now and one whose frames were kept by an
            # earlier (or killed) run make the same chunks (issue 25)
            images = [self.kept.keep(t, image) for t, image in zip(times, images, strict=True)]
            if self.kept.unwritable:  # a full or read-only disk costs later reuse, not this index
                log.warning("index.frames_not_kept", folder=str(self.kept.folder), error=self.kept.unwritable)
                self.kept.unwritable = ""
            return images
        try:
            for t, image in zip(times, images, strict=True):
                self.kept.save(t, image)
        except OSError as exc:  # a full or read-only disk costs later reuse, not this index
            log.warning("index.frames_not_kept", folder=str(self.kept.folder), error=str(exc)[:200])
        return images

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
