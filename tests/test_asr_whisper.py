"""ASR backends (issue 11): faster-whisper with the pinned bundled model (words land in their exact
30-s chunk, no text from a tone), Qwen3-ASR through the real openai SDK against a local wire fake of
vLLM's /v1/audio/transcriptions, the pocketsphinx fallback, and the source and model on every chunk."""

from __future__ import annotations

import io
import shutil
import wave
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

import pytest
from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.index import asr, asr_whisper
from playlisteval.index.asr_vllm import clean_text
from playlisteval.index.collection import add_paths
from playlisteval.index.search import search
from playlisteval.store.tables import Chunk, Video
from tests.index_helpers import make_narrated, make_video, settings_for, store
from tests.provider_fakes import Canned, FakeAPI

pytestmark = pytest.mark.skipif(not (shutil.which("ffmpeg") and shutil.which("espeak-ng")),
                                reason="ffmpeg and espeak-ng make the narrated test videos")

GLACIER = "Glaciers carve deep valleys into the mountains."
ROME = "The Roman legions marched along stone roads."
TIDES = "The moon pulls the oceans and makes the tides."
SPANS = [(0.0, 30.0), (30.0, 60.0), (60.0, 70.0)]


@pytest.fixture(scope="module")
def narrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """70 s: one sentence in each chunk, the second said across nothing but its own chunk's middle."""
    folder = tmp_path_factory.mktemp("narrated")
    return make_narrated(folder / "Geo" / "talk.mp4", 70, [(3, GLACIER), (40, ROME), (62, TIDES)])


def _words(text: str) -> set[str]:
    return {w.strip(".,!?").lower() for w in text.split()}


def test_whisper_words_land_in_their_exact_chunks(narrated: Path) -> None:
    speech = asr.transcribe(narrated, SPANS, IndexSettings())
    assert (speech.source, speech.model) == ("faster-whisper", asr_whisper.BUNDLED_NAME)
    assert speech.warnings == []
    first, second, third = (_words(t) for t in speech.texts)
    assert {"glaciers", "valleys", "mountains"} <= first and not first & {"roman", "moon", "tides"}
    assert {"roman", "legions", "stone", "roads"} <= second and not second & {"glaciers", "moon"}
    assert {"moon", "oceans", "tides"} <= third and not third & {"glaciers", "roman"}
    assert asr.transcribe(narrated, SPANS, IndexSettings()).texts == speech.texts  # no sampling: reproducible
    # word times are on the video's clock, inside the chunk they were placed in
    backend = asr.get_backend("faster-whisper", IndexSettings())
    words = backend.words(narrated, SPANS)  # type: ignore[attr-defined]
    said = {w.text.strip(".,").lower(): w for w in words}
    # (within a second of when it was said: Whisper's word times are not exact)
    assert 2 <= said["glaciers"].mid < 6 and 39 <= said["roman"].mid < 44 and 61 <= said["moon"].mid < 66


def test_a_tone_and_silence_give_no_text(tmp_path: Path) -> None:
    tone = make_video(tmp_path / "tone.mp4", 35, audio="sine")
    assert asr.transcribe(tone, [(0.0, 30.0), (30.0, 35.0)], IndexSettings()).texts == ["", ""]


def test_the_bundled_model_is_checked_against_pinned_sums(tmp_path: Path) -> None:
    bundled = asr_whisper.bundled_model_dir()
    asr_whisper.verify_files(bundled, asr_whisper.BUNDLED_SHA256)  # the installed package is the pinned one
    copy = tmp_path / "model"
    copy.mkdir()
    for name in asr_whisper.BUNDLED_SHA256:
        (copy / name).symlink_to(bundled / name)
    asr_whisper.verify_files(copy, asr_whisper.BUNDLED_SHA256)
    (copy / "config.json").unlink()
    (copy / "config.json").write_bytes((bundled / "config.json").read_bytes() + b"\n")  # one byte more
    with pytest.raises(ConfigError, match=r"config.json has sha256 .* expected 14b1b421"):
        asr_whisper.verify_files(copy, asr_whisper.BUNDLED_SHA256)
    (copy / "vocabulary.txt").unlink()
    with pytest.raises(ConfigError, match="vocabulary.txt is missing"):
        asr_whisper.verify_files(copy, asr_whisper.BUNDLED_SHA256)


def test_a_user_model_folder_or_size(tmp_path: Path) -> None:
    bundled = asr_whisper.bundled_model_dir()
    mine = tmp_path / "my-whisper"
    mine.mkdir()
    for name in ("model.bin", "config.json"):
        (mine / name).symlink_to(bundled / name)
    with pytest.raises(ConfigError, match="not a CTranslate2 Whisper folder: tokenizer.json missing"):
        asr_whisper.resolve_model(str(mine))
    (mine / "tokenizer.json").symlink_to(bundled / "tokenizer.json")
    assert asr_whisper.resolve_model(str(mine)) == (str(mine.resolve()), f"whisper {mine.resolve()}")
    assert asr_whisper.resolve_model("small.en") == ("small.en", "whisper-small.en")
    with pytest.raises(ConfigError, match="no such folder"):
        asr_whisper.resolve_model(str(tmp_path / "nowhere"))


def test_unknown_backends_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown ASR backend 'whisper.cpp' in \[index\] asr; known: faster-whisper"):
        asr.check_backends(IndexSettings(asr="whisper.cpp"))
    with pytest.raises(ConfigError, match="in \\[index\\] asr_fallback"):
        asr.check_backends(IndexSettings(asr_fallback="nope"))


# -- Qwen3-ASR through vLLM's OpenAI-compatible endpoint ------------------------------------------------

TRANSCRIBE = "transcribe"


class VllmAsrFake(FakeAPI):
    """The wire fake, taught vLLM's /v1/audio/transcriptions (multipart form: file, model, …)."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: list[str] = []

    def _route(self, method: str, path: str) -> str:
        return TRANSCRIBE if path.split("?", 1)[0].endswith("/audio/transcriptions") else super()._route(method, path)

    def _answer(self, seen):  # type: ignore[no-untyped-def]
        with self._lock:
            if seen.route == TRANSCRIBE and not self.script[TRANSCRIBE]:
                return Canned(body={"text": self.replies.pop(0)})
        return super()._answer(seen)


def form(seen) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    """The multipart form the SDK sent: field name → raw value."""
    head = f"Content-Type: {seen.headers['content-type']}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + seen.body)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()}


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[VllmAsrFake]:
    monkeypatch.setenv("VLLM_API_KEY", "test-vllm-key-0000")
    api = VllmAsrFake().start()
    try:
        yield api
    finally:
        api.stop()


def test_qwen3_asr_sends_each_chunk_with_speech(vllm: VllmAsrFake, narrated: Path) -> None:
    # a server that does not strip Qwen3-ASR's "language X<asr_text>" prefix, and one that does
    vllm.replies = ["language English<asr_text>Glaciers carve deep valleys.", "The Roman legions marched.",
                    "The moon makes the tides."]
    cfg = IndexSettings(asr="qwen3-asr", asr_base_url=f"{vllm.url}/v1", asr_fallback="")
    tone = make_video(narrated.parent / "tone.mp4", 35, audio="sine")
    speech = asr.transcribe(narrated, SPANS, cfg)
    assert speech.texts == ["Glaciers carve deep valleys.", "The Roman legions marched.", "The moon makes the tides."]
    assert (speech.source, speech.model) == ("qwen3-asr", "Qwen/Qwen3-ASR-1.7B")
    sent = vllm.requests(TRANSCRIBE)
    assert len(sent) == 3 and all(s.headers["authorization"] == "Bearer test-vllm-key-0000" for s in sent)
    fields = form(sent[1])
    assert fields["model"] == b"Qwen/Qwen3-ASR-1.7B" and fields["language"] == b"en"
    with wave.open(io.BytesIO(fields["file"])) as w:  # speech only: the chunk's silence was cut out
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        assert 1.5 < w.getnframes() / 16000 < 12
    # a tone is not speech: nothing is sent, nothing is transcribed
    assert asr.transcribe(tone, [(0.0, 30.0), (30.0, 35.0)], cfg).texts == ["", ""]
    assert len(vllm.requests(TRANSCRIBE)) == 3


def test_a_failing_server_falls_back_and_says_so(vllm: VllmAsrFake, narrated: Path) -> None:
    vllm.queue(TRANSCRIBE, Canned(400, {"error": {"message": "audio too long", "type": "BadRequestError"}}))
    cfg = IndexSettings(asr="qwen3-asr", asr_base_url=f"{vllm.url}/v1", asr_fallback="faster-whisper")
    speech = asr.transcribe(narrated, SPANS, cfg)
    assert speech.source == "faster-whisper" and "glaciers" in _words(speech.texts[0])
    assert len(speech.warnings) == 1 and "ASR (qwen3-asr) failed" in speech.warnings[0]
    assert "HTTP 400" in speech.warnings[0] and "trying faster-whisper" in speech.warnings[0]
    # without a fallback the chunks stay empty, with the warning
    vllm.queue(TRANSCRIBE, Canned(400, {"error": {"message": "audio too long"}}))
    alone = asr.transcribe(narrated, SPANS, cfg.model_copy(update={"asr_fallback": ""}))
    assert (alone.source, alone.texts) == ("none", ["", "", ""]) and "empty transcript" in alone.warnings[0]


def test_a_model_the_server_does_not_serve_is_a_setting_to_fix(vllm: VllmAsrFake, narrated: Path) -> None:
    vllm.queue(TRANSCRIBE, Canned(404, {"error": {"message": "The model `Qwen/Nope` does not exist."}}))
    cfg = IndexSettings(asr="qwen3-asr", asr_model="Qwen/Nope", asr_base_url=f"{vllm.url}/v1")
    with pytest.raises(ConfigError, match="refused model 'Qwen/Nope': HTTP 404"):
        asr.transcribe(narrated, SPANS, cfg)


def test_clean_text() -> None:
    assert clean_text("language English<asr_text> Rivers  carry\nsilt.") == "Rivers carry silt."
    assert clean_text("") == ""


# -- through the index -------------------------------------------------------------------------------


def test_the_default_index_hears_a_narration_and_records_its_source(tmp_path: Path, narrated: Path) -> None:
    settings = settings_for(tmp_path, embedder="minilm")
    assert settings.index.asr == "faster-whisper"  # the default
    engine = store(settings)
    folder = tmp_path / "Geo"
    shutil.copytree(narrated.parent, folder, ignore=shutil.ignore_patterns("tone.mp4"))
    add_paths(engine, "Education", [folder])
    report = index_collection(settings, engine)
    assert report.videos_indexed == 1 and report.transcript_sources == {"faster-whisper": 3}
    assert report.transcript_models == {asr_whisper.BUNDLED_NAME: 3} and report.no_text == 0
    with Session(engine) as s:
        chunks = s.exec(select(Chunk).order_by(Chunk.idx)).all()  # type: ignore[arg-type]
        assert {(c.transcript_source, c.transcript_model) for c in chunks} == {
            ("faster-whisper", asr_whisper.BUNDLED_NAME)}
        assert s.exec(select(Video)).one().status == "indexed"
    # a sentence that is only spoken finds its chunk first
    for sentence, start in ((ROME, 30), (GLACIER, 0), (TIDES, 60)):
        assert search(settings, engine, sentence, k=3)[0].start == start
