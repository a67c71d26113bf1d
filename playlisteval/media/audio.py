"""Audio as 16-bit mono PCM, decoded by ffmpeg and streamed through a pipe.

Streaming keeps memory flat for hour-long videos (an hour at 16 kHz is 115 MB as raw PCM); per-chunk
audio (what an ASR backend is given, SPEC A4) is cut from that one stream by sample counts.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from playlisteval.errors import MediaError


@contextmanager
def pcm_stream(path: str | Path, sample_rate: int = 16000) -> Iterator[IO[bytes]]:
    """A readable stream of s16le mono PCM at ``sample_rate``; MediaError if ffmpeg fails."""
    cmd = [
        "ffmpeg", "-nostdin", "-v", "error", "-i", str(path),
        "-vn", "-ac", "1", "-ar", str(sample_rate), "-f", "s16le", "-",
    ]
    # stderr goes to a file: a pipe nobody reads fills up on a noisy corrupt file and hangs ffmpeg
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors)
        except FileNotFoundError:
            raise MediaError(path, "ffmpeg is not installed") from None
        assert proc.stdout is not None
        finished = False
        try:
            yield proc.stdout
            finished = True
        finally:
            if not finished:
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
            errors.seek(0)
            err = errors.read().decode(errors="replace").strip()
    # only a stream read to its end can tell whether the decode itself failed
    if finished and code != 0:
        detail = (err.splitlines() or ["unknown error"])[-1]
        raise MediaError(path, f"audio decode failed: {detail}")


def chunk_pcm(path: str | Path, spans: Sequence[tuple[float, float]],
              sample_rate: int = 16000) -> Iterator[np.ndarray]:
    """16-bit mono PCM of each (start, end) span, in order, from one ffmpeg decode of the file.

    Cuts are exact sample counts on the audio clock (not keyframe-bound stream copies), and memory
    holds one chunk at a time. A track that ends early is padded with silence, so every chunk has
    its full length (ASR models expect the whole window).
    """
    position = 0  # samples consumed so far
    with pcm_stream(path, sample_rate) as stream:
        for start, end in spans:
            first, last = round(start * sample_rate), round(end * sample_rate)
            if first > position:  # a gap between spans: skip it
                position += len(_read_exact(stream, (first - position) * 2)) // 2
            raw = _read_exact(stream, (last - first) * 2) if first >= position else b""
            position = max(position, first) + len(raw) // 2
            samples = np.frombuffer(raw, dtype="<i2")
            if len(samples) < last - first:
                samples = np.concatenate([samples, np.zeros(last - first - len(samples), dtype="<i2")])
            yield samples
        # drain the rest, so that ffmpeg exits cleanly and a decode error is still reported
        while stream.read(1 << 16):
            pass


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    parts: list[bytes] = []
    while n > 0:
        part = stream.read(n)
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)
