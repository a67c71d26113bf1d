"""Audio as 16-bit mono PCM, decoded by ffmpeg and streamed through a pipe.

Streaming keeps memory flat for hour-long videos (an hour at 16 kHz is 115 MB as raw PCM).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

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
