"""Qwen3-ASR behind a vLLM server's OpenAI-compatible ``/v1/audio/transcriptions`` endpoint (issue 11).

Qwen3-ASR gives text without word times, so each exact 30-s chunk is sent on its own and its text is
that chunk's transcript: nothing has to be placed afterwards. Each chunk's audio first goes through
the Silero voice-activity detector that ships with faster-whisper; only its speech is sent (as a
16 kHz mono WAV), and a chunk without speech is not sent at all — music and silence are where
speech models invent text, and an unsent chunk costs nothing.

The API key, if the server wants one, comes from ``VLLM_API_KEY`` in the environment.
"""

from __future__ import annotations

import io
import os
import re
import threading
import wave
from pathlib import Path
from typing import Any

import numpy as np

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError, PlaylistEvalError
from playlisteval.media.audio import chunk_pcm

Spans = list[tuple[float, float]]
SAMPLE_RATE = 16000
DEFAULT_MODEL = "Qwen/Qwen3-ASR-1.7B"
# Qwen3-ASR's raw output starts "language English<asr_text>"; servers that do not strip it pass it on
_PREFIX = re.compile(r"^\s*language\s+[A-Za-z]+\s*<asr_text>", re.IGNORECASE)


class AsrServerError(PlaylistEvalError):
    """The transcription server failed on a chunk after the SDK's retries (the fallback may take over)."""


def speech_only(pcm: np.ndarray, enabled: bool = True) -> np.ndarray:
    """The speech of a 16 kHz int16 chunk, its pauses cut out (an empty array: no speech at all)."""
    if not enabled or not len(pcm):
        return pcm
    try:
        from faster_whisper.vad import VadOptions, get_speech_timestamps
    except ImportError as exc:
        raise ConfigError(f"voice-activity filtering needs faster-whisper ({exc}); or set [index] asr_vad = false"
                          ) from None
    audio = pcm.astype(np.float32) / 32768.0
    regions = get_speech_timestamps(audio, VadOptions(), sampling_rate=SAMPLE_RATE)
    if not regions:
        return pcm[:0]
    return np.concatenate([pcm[r["start"]:r["end"]] for r in regions])


def wav_bytes(pcm: np.ndarray) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.ascontiguousarray(pcm, dtype="<i2").tobytes())
    return out.getvalue()


def clean_text(text: str) -> str:
    return " ".join(_PREFIX.sub("", text or "").split())


class VllmAsr:
    """The ``qwen3-asr`` backend: one transcription request per chunk with speech."""

    name = "qwen3-asr"

    def __init__(self, cfg: IndexSettings) -> None:
        self.cfg = cfg
        self.model = cfg.asr_model or DEFAULT_MODEL
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:
                    raise ConfigError(f"ASR 'qwen3-asr' needs the openai package ({exc}): "
                                      "pip install 'playlisteval[api]'") from None
                self._client = openai.OpenAI(api_key=os.environ.get("VLLM_API_KEY") or "EMPTY",
                                             base_url=self.cfg.asr_base_url, timeout=self.cfg.asr_timeout_s,
                                             max_retries=3)
            return self._client

    def transcribe(self, path: str | Path, spans: Spans) -> list[str]:
        client = self.client()
        texts: list[str] = []
        for (start, end), pcm in zip(spans, chunk_pcm(path, spans, SAMPLE_RATE), strict=True):
            speech = speech_only(pcm, self.cfg.asr_vad)
            if len(speech) < SAMPLE_RATE // 10:  # under 0.1 s of speech: nothing to send
                texts.append("")
                continue
            texts.append(self._request(client, speech, f"{Path(path).name} {start:.0f}-{end:.0f}s"))
        return texts

    def _request(self, client: Any, speech: np.ndarray, where: str) -> str:
        import openai

        extra: dict[str, Any] = {"language": self.cfg.asr_language} if self.cfg.asr_language else {}
        try:
            reply = client.audio.transcriptions.create(
                model=self.model, file=("chunk.wav", wav_bytes(speech), "audio/wav"), response_format="json",
                temperature=0.0, **extra)
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            # every chunk would fail alike: a setting to fix, not this video's fault
            raise ConfigError(f"qwen3-asr at {self.cfg.asr_base_url} refused model {self.model!r}: "
                              f"{_reason(exc)}") from None
        except openai.OpenAIError as exc:
            raise AsrServerError(f"qwen3-asr at {self.cfg.asr_base_url} failed on {where}: {_reason(exc)}") from None
        text = reply if isinstance(reply, str) else getattr(reply, "text", None)
        if not isinstance(text, str):
            raise AsrServerError(f"qwen3-asr at {self.cfg.asr_base_url} gave no text for {where}")
        return clean_text(text)


def _reason(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return (f"HTTP {status}: " if status else "") + (str(exc).splitlines() or [type(exc).__name__])[0][:300]
