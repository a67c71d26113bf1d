"""Narrated test media for the speech benchmarks: a fixed text, spoken by espeak-ng (or ffmpeg's flite) one
sentence at a time so that every sentence's time is known, muxed under ordinary 30-fps 720p video; and
the word error rate of a transcript against the text.
"""

from __future__ import annotations

import re
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Six short talks on unrelated subjects, written for this benchmark: no digits (a recogniser may write
# "ten" or "10", and either is right), American spelling (the recognisers' own).
NARRATION = """\
Glaciers are rivers of ice that move slowly down a mountain. As they grind forward, they carve deep \
valleys with steep walls and wide floors. When the climate warms, the ice melts back and leaves long \
ridges of broken rock behind. Many lakes in the northern countries sit in basins that glaciers dug \
thousands of years ago.

The Roman army built roads to move soldiers quickly across the empire. Engineers laid a bed of sand \
and gravel, then fitted heavy stones on top so that rain would run off to the sides. Some of these \
roads are still used today. Milestones along the way told travelers how far they were from the city.

Bread rises because yeast feeds on sugar and releases small bubbles of gas. Kneading the dough \
stretches the gluten into a net that traps those bubbles. A warm kitchen makes the yeast work faster, \
while a cold one slows it down. Bakers often leave the dough overnight to give it a deeper flavor.

Honeybees tell each other where to find flowers by dancing. A forager returns to the hive and walks \
a figure of eight, shaking her body in the middle. The angle of the dance points toward the food, and \
its length says how far away it is. The other bees follow the dancer and then fly out on their own.

A lighthouse warns ships away from rocks and shallow water. Its lamp sits behind a large glass lens \
that bends the light into a narrow beam. Each lighthouse flashes in its own pattern, so that sailors \
can tell which coast they are passing at night. Today most of them run without a keeper.

Copper wire carries electricity because its electrons move freely between the atoms. Thicker wire \
has less resistance, so it wastes less energy as heat. Power lines use very high voltage to send \
electricity over long distances, and transformers near our homes step it down to a safer level.
"""


def sentences(text: str = NARRATION) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]


def words(text: str) -> list[str]:
    """Lower-case words without punctuation (hyphens split: "figure-of-eight" is three words)."""
    return re.findall(r"[a-z']+", text.lower().replace("-", " "))


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: (substitutions + deletions + insertions) / reference words, by edit distance."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(1, len(ref))


@dataclass(frozen=True)
class Spoken:
    text: str
    start: float
    end: float


def _speak(sentence: str, wav: Path, voice: str) -> None:
    if voice == "flite":  # ffmpeg's flite voice: another synthesiser than espeak-ng
        text = wav.with_suffix(".txt")  # a file, not the filter's text option, where commas end the filter
        text.write_text(sentence)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"flite=textfile={text}:voice=slt", "-ar", "22050", "-ac", "1", str(wav)], check=True)
        text.unlink()
    else:
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(wav), sentence], check=True)


def narrate(out: Path, voice: str = "en-us", text: str = NARRATION, pause_s: float = 0.6,
            lead_s: float = 1.0) -> list[Spoken]:
    """A 22.05 kHz mono WAV of ``text``, one sentence after another with pauses; each sentence's times."""
    spoken: list[Spoken] = []
    pieces: list[np.ndarray] = []
    rate = 22050
    t = lead_s
    pieces.append(np.zeros(round(lead_s * rate), dtype="<i2"))
    part = out.with_suffix(".part.wav")
    for sentence in sentences(text):
        _speak(sentence, part, voice)
        with wave.open(str(part)) as w:
            assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, rate), part
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        spoken.append(Spoken(sentence, t, t + len(samples) / rate))
        pieces += [samples, np.zeros(round(pause_s * rate), dtype="<i2")]
        t += len(samples) / rate + pause_s
    part.unlink(missing_ok=True)
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.concatenate(pieces).tobytes())
    return spoken


def video_720p(audio: Path, out: Path, fps: int = 30) -> Path:
    """Ordinary 1280x720 H.264 video under ``audio`` (AAC): slowly moving colour gradients with grain, so
    that every frame differs and the stream runs at about 3 Mbit/s like downloaded 720p video; x264's
    default keyframe interval; no text on screen."""
    picture = f"gradients=s=640x360:r={fps}:speed=0.02:n=4,scale=1280:720,noise=alls=8:allf=t"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", picture, "-i", str(audio),
                    "-map", "0:v", "-map", "1:a",
                    "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-c:a", "aac",
                    "-b:a", "96k", "-shortest", str(out)], check=True)
    return out
