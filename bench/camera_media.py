"""Bench video like users record it (issue 43, deliverable 1): the headline `index` rows are measured on it.

The lecture of ``bench index-command`` is a flat background with a small inset at ~0.16 Mbit/s: OCR reads
small crops and the decoder idles. Ordinary 720p video is 2-5 Mbit/s with change all over the frame.
``make_camera_video`` makes ``minutes`` of 1280x720, 30 fps H.264 (libx264 veryfast, x264's default
keyframe interval, a target of 2.7 Mbit/s) with:

- full-frame motion: drifting colour gradients under sensor-like temporal noise (every pixel changes);
- an on-screen clock and frame counter that change every frame (``%{pts}``, ``%{n}``) and a ticker
  scrolling along the bottom;
- a slide line whose text changes every 20 s;
- narrated audio (espeak-ng, bench/narration.py, looped) and an SRT sidecar with each spoken sentence.

``bitrate_mbps`` reads the video stream's bitrate back with ffprobe, so every row can print it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.narration import NARRATION, narrate

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
TARGET_BITRATE = "2700k"  # the bitrate of the measurement; the goal says 2-5 Mbit/s
BITRATE_RANGE = (2.0, 5.0)


def _stamp(t: float) -> str:
    ms = int(round(t * 1000))
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _picture(seconds: int, topic: str, subject: str) -> str:
    """The lavfi graph of the picture: motion and noise everywhere, text that changes every frame."""
    slide = (f"drawtext=fontfile={FONT}:fontsize=40:fontcolor=white:box=1:boxcolor=black@0.45:boxborderw=12:"
             f"x=60:y=90:text='Slide %{{eif\\:trunc(t/20)+1\\:d}}\\: {topic}'")
    clock = (f"drawtext=fontfile={MONO}:fontsize=34:fontcolor=yellow:box=1:boxcolor=black@0.5:boxborderw=8:"
             f"x=w-tw-40:y=40:text='%{{pts\\:hms}}  frame %{{n}}'")
    ticker = (f"drawtext=fontfile={FONT}:fontsize=30:fontcolor=white:box=1:boxcolor=0x102040@0.7:boxborderw=10:"
              f"x=w-mod(t*160\\,w+tw):y=h-70:text='LIVE  {subject} news  {topic}  "
              f"more after the break  weather and traffic on the hour'")
    return (f"gradients=s=640x360:r=30:d={seconds}:speed=0.03:n=5,scale=1280:720,"
            f"noise=alls=10:allf=t,{slide},{clock},{ticker}")


def make_camera_video(path: Path, minutes: float, topic: str = "glacier moraine sediment",
                      subject: str = "ice ages") -> Path:
    """The video at ``path`` and its SRT sidecar (the same path with .srt); kept if both exist."""
    if path.is_file() and path.with_suffix(".srt").is_file():
        return path
    seconds = int(minutes * 60)
    path.parent.mkdir(parents=True, exist_ok=True)
    wav = path.with_suffix(".narration.wav")
    spoken = narrate(wav, text=NARRATION)
    loop = spoken[-1].end + 0.6  # the narration's length with its last pause: it repeats from there
    cues, n, offset = [], 0, 0.0
    while offset < seconds:
        for s in spoken:
            if s.start + offset >= seconds:
                break
            n += 1
            cues.append(f"{n}\n{_stamp(s.start + offset)} --> {_stamp(min(s.end + offset, seconds))}\n{s.text}\n")
        offset += loop
    part = path.with_name(path.stem + ".part.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", _picture(seconds, topic, subject),
                    "-stream_loop", "-1", "-i", str(wav), "-map", "0:v", "-map", "1:a", "-t", str(seconds),
                    "-c:v", "libx264", "-preset", "veryfast", "-b:v", TARGET_BITRATE, "-maxrate", "4M",
                    "-bufsize", "6M", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k", str(part)], check=True)
    part.replace(path)
    wav.unlink(missing_ok=True)
    path.with_suffix(".srt").write_text("\n".join(cues))
    return path


def bitrate_mbps(path: Path) -> float:
    """The video stream's bitrate in Mbit/s (ffprobe; from size and duration where the stream has none)."""
    done = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "stream=bit_rate,duration", "-of", "json", str(path)], capture_output=True, text=True,
                          check=True)
    stream = json.loads(done.stdout)["streams"][0]
    if stream.get("bit_rate"):
        return int(stream["bit_rate"]) / 1e6
    return path.stat().st_size * 8 / float(stream["duration"]) / 1e6
