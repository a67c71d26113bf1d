"""Make a synthetic collection: short videos whose every visual and narrated fact is known.

Each video is a run of 15-30 s scenes. A scene's frames show one big glyph (shape, colour, left/centre/
right) on a coloured backdrop under an on-screen sign; its audio is an espeak-ng narration about the
playlist's topic that never says what is shown. Frames are drawn by ffmpeg's lavfi filters at a low
frame rate, so a 3-minute video encodes in under two seconds on one core.

Beside each video: WebVTT captions of the narration (``.vtt``) and its world (``.world.json``). The
last ``vp9`` videos are VP9/Opus WebM instead of H.264/AAC MP4 (the codec web downloads often have,
which decord cannot read: it exercises the PyAV fallback). ``OUT/manifest.csv`` lists every video
as `playlisteval add --manifest` reads it.
"""

from __future__ import annotations

import csv
import io
import os
import random
import re
import shutil
import subprocess
import tempfile
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playlisteval.errors import MediaError, PlaylistEvalError
from playlisteval.world.synth import vocab
from playlisteval.world.synth.world import Scene, VisualFacts, World, save_world, world_path

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
WIDTH, HEIGHT, FPS = 640, 360, 2
SAMPLE_RATE = 22050  # espeak-ng's native rate: no resampling before AAC
SCENE_MIN_S, SCENE_MAX_S = 15.0, 30.0
_GLYPH_X = {"left": "w/6-text_w/2", "centre": "(w-text_w)/2", "right": "5*w/6-text_w/2"}


def make_collection(
    out: Path,
    *,
    domains: int = 2,
    playlists: int = 1,
    videos: int = 3,
    minutes: float = 3.0,
    seed: int = 0,
    vp9: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Write ``out/<Domain>/<Playlist>/<NN> - <Title> Episode <n>.mp4`` with .vtt and .world.json,
    and ``out/manifest.csv``.

    Deterministic from ``seed``; a video whose files already hold the same world is not remade.
    The last ``vp9`` videos (in manifest order) are written as ``.webm`` (VP9 + Opus).
    """
    tools = _check_tools()
    if not 1 <= domains <= len(vocab.DOMAINS):
        raise PlaylistEvalError(f"domains must be 1..{len(vocab.DOMAINS)}, got {domains}")
    rng = random.Random(seed)
    taken: set[str] = set()  # sign words are unique across the collection, so a sign names a scene
    jobs: list[tuple[World, Path]] = []
    for domain in vocab.DOMAINS[:domains]:
        topics = vocab.TOPICS[domain]
        for p in range(playlists):
            name, series, _ = topics[p % len(topics)]
            folder = name if p < len(topics) else f"{name} {p // len(topics) + 1}"
            for n in range(1, videos + 1):
                title = f"{series} Episode {n}"
                world = plan_world(rng, taken, domain=domain, playlist=folder, topic=name, title=title,
                                   episode=n, duration=minutes * 60, seed=seed)
                jobs.append((world, out / domain / folder / f"{n:02d} - {title}.mp4"))
    webm = max(0, len(jobs) - max(0, vp9))
    jobs = [(w, p.with_suffix(".webm") if i >= webm else p) for i, (w, p) in enumerate(jobs)]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        done = list(pool.map(lambda job: _render_if_needed(job[0], job[1], tools, progress), jobs))
    write_manifest(out, jobs)
    return done


def write_manifest(out: Path, jobs: list[tuple[World, Path]]) -> Path:
    """``out/manifest.csv``: domain, playlist, title, path (relative to ``out``), position."""
    rows = [(w.domain, w.playlist, w.title, p.relative_to(out).as_posix(), w.episode - 1) for w, p in jobs]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["domain", "playlist", "title", "path", "position"])
    writer.writerows(rows)
    target = out / "manifest.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(buffer.getvalue())
    return target


def _check_tools() -> dict[str, str]:
    tools = {}
    for tool in ("ffmpeg", "espeak-ng"):
        found = shutil.which(tool)
        if not found:
            raise PlaylistEvalError(f"{tool} is not on PATH: it is needed to make synthetic videos")
        tools[tool] = found
    if not FONT.is_file():
        raise MediaError(FONT, "font not found (install fonts-dejavu-core)")
    return tools


def plan_world(
    rng: random.Random, taken: set[str], *, domain: str, playlist: str, topic: str, title: str,
    episode: int, duration: float, seed: int = 0,
) -> World:
    """The facts of one video, drawn from ``rng``; ``taken`` holds sign words already in use.

    ``topic`` is a playlist name of vocab.TOPICS[domain]. Nothing is rendered: tests use this to
    make worlds without videos.
    """
    nouns = next(t[2] for t in vocab.TOPICS[domain] if t[0] == topic)
    scenes: list[Scene] = []
    t = 0.0
    while duration - t > 1e-6:
        left = duration - t
        if left <= SCENE_MAX_S:
            length = left  # the tail (shorter than 15 s only when the whole video is)
        else:
            # never leave a tail shorter than a scene; boundaries on half seconds = frame times at 2 fps
            length = round(rng.uniform(SCENE_MIN_S, min(SCENE_MAX_S, left - SCENE_MIN_S)) * 2) / 2
        visual = VisualFacts(
            shape=rng.choice(sorted(vocab.SHAPES)), colour=rng.choice(sorted(vocab.COLOURS)),
            position=rng.choice(vocab.POSITIONS), background=rng.choice(sorted(vocab.BACKGROUNDS)),
            sign=vocab.make_sign(rng, taken),
        )
        words = rng.sample(nouns, 4)
        templates = rng.sample(vocab.SENTENCES, 2)
        sentences = [tpl.format(a=words[2 * i], b=words[2 * i + 1]) for i, tpl in enumerate(templates)]
        if not scenes:
            sentences.insert(0, f"Welcome to episode {episode} of {topic}.")
        scenes.append(Scene(index=len(scenes), start=t, end=t + length, visual=visual,
                            narration=" ".join(s[0].upper() + s[1:] for s in sentences),
                            topic_words=[w for w in words if w in " ".join(sentences)]))
        t += length
    return World(title=title, domain=domain, playlist=playlist, episode=episode, topic=topic,
                 duration=duration, seed=seed, scenes=scenes)


def _render_if_needed(
    world: World, video: Path, tools: dict[str, str], progress: Callable[[str], None] | None
) -> Path:
    wpath, vtt = world_path(video), video.with_suffix(".vtt")
    fresh = world.model_dump_json(indent=1)
    if video.is_file() and vtt.is_file() and wpath.is_file() and wpath.read_text() == fresh:
        if progress:
            progress(f"kept {video}")
        return video
    video.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="synth-") as tmp:
        audio = Path(tmp) / "narration.wav"
        speech = _narrate(world, audio, Path(tmp), tools["espeak-ng"], video)
        _encode(world, audio, video, Path(tmp), tools["ffmpeg"])
    vtt.write_text(_webvtt(world, speech))
    video.with_suffix(".srt").unlink(missing_ok=True)  # an older synth's captions would win over .vtt
    for other in (".mp4", ".webm"):  # the same world rendered earlier in the other container
        if other != video.suffix:
            video.with_suffix(other).unlink(missing_ok=True)
    save_world(world, video)  # last: a world file beside a video means the video is complete
    if progress:
        progress(f"made {video}")
    return video


def _narrate(world: World, out: Path, tmp: Path, espeak: str, video: Path) -> list[float]:
    """One WAV track: each scene's speech padded with silence (or cut) to the scene's length.

    Returns the seconds of speech actually heard per scene, for caption timing.
    """
    heard: list[float] = []
    with wave.open(str(out), "wb") as track:
        track.setnchannels(1)
        track.setsampwidth(2)
        track.setframerate(SAMPLE_RATE)
        for scene in world.scenes:
            part = tmp / f"scene{scene.index}.wav"
            _run([espeak, "-v", "en-us", "-s", "165", "-w", str(part), scene.narration], video,
                 "espeak-ng")
            with wave.open(str(part), "rb") as speech:
                if (speech.getnchannels(), speech.getsampwidth()) != (1, 2) or \
                        speech.getframerate() != SAMPLE_RATE:
                    raise MediaError(video, f"espeak-ng wrote an unexpected WAV format ({part.name})")
                frames = speech.readframes(speech.getnframes())
            # frame counts from scene boundaries (not lengths) so rounding never drifts the audio
            want = round(scene.end * SAMPLE_RATE) - round(scene.start * SAMPLE_RATE)
            pcm = frames[: want * 2].ljust(want * 2, b"\0")
            track.writeframes(pcm)
            heard.append(min(len(frames) // 2, want) / SAMPLE_RATE)
    return heard


def _encode(world: World, audio: Path, video: Path, tmp: Path, ffmpeg: str) -> None:
    font = str(FONT)
    # Backdrops are colour sources joined end to end: drawbox fills cost per pixel even at 2 fps.
    graph = [
        f"color=c={vocab.BACKGROUNDS[s.visual.background]}:s={WIDTH}x{HEIGHT}:r={FPS}:"
        f"d={s.end - s.start:g}[b{s.index}]"
        for s in world.scenes
    ]
    joined = "".join(f"[b{s.index}]" for s in world.scenes)
    draw = [f"{joined}concat=n={len(world.scenes)}:v=1:a=0"]
    for s in world.scenes:
        on = f"enable='gte(t,{s.start:g})*lt(t,{s.end:g})'"
        v = s.visual
        draw += [
            f"drawtext=fontfile='{font}':text='{vocab.SHAPES[v.shape]}':fontsize=150:"
            f"fontcolor={vocab.COLOURS[v.colour]}:x={_GLYPH_X[v.position]}:y=(h-text_h)/2+30:{on}",
            f"drawtext=fontfile='{font}':text='{v.sign}':fontsize=40:fontcolor=white:box=1:"
            f"boxcolor=black@0.6:boxborderw=10:x=(w-text_w)/2:y=24:{on}",
        ]
    script = tmp / "graph.txt"
    script.write_text(";\n".join(graph) + ";\n" + ",\n".join(draw) + "[v]")
    partial = video.with_name(video.stem + ".partial" + video.suffix)  # never leave a half-written video
    if video.suffix == ".webm":
        codecs = ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-crf", "40", "-b:v", "0",
                  "-pix_fmt", "yuv420p", "-g", "20", "-threads", "1", "-c:a", "libopus", "-b:a", "32k"]
    else:
        codecs = ["-c:v", "libx264", "-preset", "ultrafast", "-crf", "30", "-pix_fmt", "yuv420p", "-g", "20",
                  "-threads", "1", "-c:a", "aac", "-aac_coder", "fast", "-b:a", "48k", "-movflags", "+faststart"]
    _run([
        ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
        "-i", str(audio), "-filter_complex_script", str(script), "-map", "[v]", "-map", "0:a",
        # bit-exact muxers and encoders, no metadata, one filter thread: the same seed writes the same bytes
        # (the WebM muxer otherwise writes a random segment UID; issue 25)
        "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1",
        "-filter_threads", "1", "-filter_complex_threads", "1",
        *codecs, "-t", f"{world.duration:g}", str(partial),
    ], video, "ffmpeg")
    partial.replace(video)


def _run(cmd: list[str], target: Path, tool: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MediaError(target, f"{tool} could not run: {exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise MediaError(target, f"{tool} failed (exit {proc.returncode}): {' | '.join(tail)}")


def _webvtt(world: World, heard: list[float]) -> str:
    """WebVTT captions of the narration: one cue per sentence, timed by its share of the scene's speech."""
    cues: list[tuple[float, float, str]] = []
    for scene, speech in zip(world.scenes, heard, strict=True):
        sentences = re.split(r"(?<=[.!?])\s+", scene.narration.strip())
        total = sum(len(s) for s in sentences) or 1
        t = scene.start
        for sentence in sentences:
            end = t + speech * len(sentence) / total
            cues.append((t, min(end, scene.end), sentence))
            t = end
    return "WEBVTT\n\n" + "".join(
        f"{i}\n{_stamp(a)} --> {_stamp(b)}\n{text}\n\n" for i, (a, b, text) in enumerate(cues, 1)
    )


def _stamp(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"
