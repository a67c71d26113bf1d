"""Small real media for the index tests: ffmpeg lavfi test patterns, tones, flite speech, SRT sidecars."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.store import open_store


def make_video(path: Path, duration: float, *, audio: str | None = "sine", speech: str = "",
               size: str = "160x120", rate: int = 5) -> Path:
    """A tiny H.264 video of ``duration`` seconds; audio "sine", "speech" (flite) or None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y",
           "-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration={duration}"]
    if audio == "sine":
        cmd += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=16000:duration={duration}"]
    elif audio == "speech":
        cmd += ["-f", "lavfi", "-i", f"flite=text='{speech}':voice=slt"]
    cmd += ["-map", "0:v"]
    if audio:
        cmd += ["-map", "1:a", "-c:a", "aac", "-b:a", "24k", "-af", "apad", "-t", str(duration)]
    cmd += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(cmd, check=True)
    return path


def srt_time(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def write_srt(path: Path, cues: list[tuple[float, float, str]]) -> Path:
    blocks = [f"{i}\n{srt_time(s)} --> {srt_time(e)}\n{text}\n" for i, (s, e, text) in enumerate(cues, 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(blocks))
    return path


def settings_for(tmp_path: Path, **index: object) -> Settings:
    s = Settings()
    s.root = tmp_path
    s.store.url = "sqlite:///x.db"
    s.index.ocr = "none"  # OCR costs ~0.3 s a frame: tests that read on-screen text ask for it
    for key, value in index.items():
        setattr(s.index, key, value)
    return s


def store(settings: Settings) -> Engine:
    return open_store(settings)
