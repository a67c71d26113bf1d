"""pocketsphinx: the ASR fallback (issue 11; Whisper is far better on real narration).

Audio is streamed from ffmpeg as 16 kHz mono PCM and cut into speech regions by pocketsphinx's VAD
segmenter (decoding whole files drifts and is weak on synthetic speech); each region is decoded on
its own and its words are placed on the video's clock, so they can be assigned to 30-s chunks.
"""

from __future__ import annotations

import re
import threading
import warnings
from pathlib import Path
from typing import Any

from playlisteval.errors import ConfigError
from playlisteval.index.captions import Cue, place_words
from playlisteval.media.audio import pcm_stream

SAMPLE_RATE = 16000  # the rate pocketsphinx's bundled en-us acoustic model was trained on
_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[[a-z_]+\]|\+\+.*\+\+)$", re.IGNORECASE)
_ALTERNATE = re.compile(r"\(\d+\)$")  # "read(2)": the second pronunciation of "read"

Spans = list[tuple[float, float]]
_decoder: Any = None
_initial_cmn: str | None = None  # the decoder's cepstral means before any audio
_decoder_lock = threading.Lock()  # one decoder per process; it is not thread-safe


def _get_decoder() -> Any:
    """The process's decoder, reset to its initial state: live cepstral mean normalisation adapts to
    what it heard, so without the reset a file's transcript would depend on the files before it."""
    global _decoder, _initial_cmn
    if _decoder is None:
        try:
            from pocketsphinx import Decoder
        except ImportError as exc:
            raise ConfigError(f"pocketsphinx ASR is not installed: {exc}") from None
        _decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
        _initial_cmn = _decoder.get_cmn()
    if _initial_cmn is not None:
        _decoder.set_cmn(_initial_cmn)
    with warnings.catch_warnings():
        # "deprecated and unnecessary", says pocketsphinx 5, yet without it a file's words still
        # depend on the files decoded before it (tests/test_index_media.py)
        warnings.simplefilter("ignore", DeprecationWarning)
        _decoder.start_stream()
    return _decoder


def pocketsphinx_words(path: str | Path) -> list[Cue]:
    """Recognised words with their times in seconds on the video's clock; [] for silence.

    Raises MediaError when the audio cannot be decoded.
    """
    from pocketsphinx import Segmenter

    words: list[Cue] = []
    with _decoder_lock:
        decoder = _get_decoder()
        frame_s = 1.0 / float(decoder.config["frate"])
        segmenter = Segmenter(sample_rate=SAMPLE_RATE)
        with pcm_stream(path, SAMPLE_RATE) as stream:
            for region in segmenter.segment(stream):
                decoder.start_utt()
                decoder.process_raw(region.pcm, full_utt=True)
                decoder.end_utt()
                for seg in decoder.seg():
                    word = _ALTERNATE.sub("", seg.word)
                    if not word or _FILLERS.match(word):
                        continue
                    start = region.start_time + seg.start_frame * frame_s
                    end = region.start_time + (seg.end_frame + 1) * frame_s
                    words.append(Cue(start, end, word))
    return words


class PocketSphinx:
    """The ``pocketsphinx`` backend: its bundled en-us model, words placed by their times."""

    name = "pocketsphinx"
    model = "pocketsphinx en-us"

    def words(self, path: str | Path, spans: Spans) -> list[Cue]:
        return pocketsphinx_words(path)

    def transcribe(self, path: str | Path, spans: Spans) -> list[str]:
        return place_words(self.words(path, spans), spans)
