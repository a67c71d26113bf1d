"""Multilingual transcripts offline (issue 42): Whisper base joined from its two wheels, the language set per
playlist; an English-only model refused for another language before any audio is decoded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sqlmodel import Session, select

from playlisteval.actors.indexing import index_collection
from playlisteval.errors import ConfigError
from playlisteval.index import asr_shipped
from playlisteval.index.collection import add_paths
from playlisteval.index.languages import language_for
from playlisteval.store.tables import Chunk, Video
from tests.index_helpers import make_narrated, settings_for, store

GERMAN = "Die Katze schläft heute auf dem warmen Sofa im Wohnzimmer"
shipped = pytest.mark.skipif(any(importlib.util.find_spec(p) is None for p in asr_shipped.PACKAGES),
                             reason="the 'multilingual' extra (make whisper-base) is not installed")


@shipped
def test_whisper_base_is_joined_once_checked_and_hears_german_in_a_german_playlist(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = asr_shipped.model_dir()
    assert folder == tmp_path / "cache" / "playlisteval" / "whisper-base-1.0.0"
    assert (folder / "model.bin").stat().st_size == 145217532
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no half-joined folder left

    settings = settings_for(tmp_path, asr_model="whisper-base", asr_languages={"Kurse/Deutsch": "de"})
    engine = store(settings)
    make_narrated(tmp_path / "media" / "Deutsch" / "katze.mp4", 8, [(0.5, GERMAN)], voice="de")
    add_paths(engine, "Kurse", [tmp_path / "media" / "Deutsch"])
    report = index_collection(settings, engine)
    assert report.videos_indexed == 1, report.warnings
    assert report.transcript_models == {asr_shipped.RECORDED_NAME: 1}
    with Session(engine) as s:
        text = " ".join(c.transcript for c in s.exec(select(Chunk)).all()).lower()
    # espeak-ng's German is rough and heard differently from host to host ("die katzer schlifft heute auf
    # dem …", "die katzer schläft heuter auf dem …"): four of the sentence's German words, whichever four, are
    # what a model forced to English, or English-only, does not write
    german = {"die", "katze", "schläft", "heute", "auf", "dem", "warmen", "sofa", "im", "wohnzimmer"}
    heard = german & set(text.replace(".", " ").replace(",", " ").split())
    assert len(heard) >= 4, text


def test_an_english_only_model_is_refused_for_another_language_naming_the_fix(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, asr_languages={"Kurse": "de"})
    engine = store(settings)
    make_narrated(tmp_path / "media" / "Deutsch" / "katze.mp4", 4, [(0.5, "Hallo")], voice="de")
    add_paths(engine, "Kurse", [tmp_path / "media" / "Deutsch"])
    with Session(engine) as s:
        video = s.exec(select(Video)).one()
    with pytest.raises(ConfigError) as err:
        language_for(engine, video, settings.index)
    assert '"Kurse"' in str(err.value) and 'asr_model = "whisper-base"' in str(err.value)
    english = settings_for(tmp_path, asr_languages={"Other": "fr"})
    assert language_for(engine, video, english.index).asr_language == "en"  # another domain's setting
    set_here = settings_for(tmp_path, asr_model="whisper-base", asr_languages={"Kurse": "", "Kurse/Deutsch": "de"})
    assert language_for(engine, video, set_here.index).asr_language == "de"  # the playlist's own first


def test_a_part_with_the_wrong_content_is_refused_and_nothing_is_kept(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake = tmp_path / "site"
    for n, package in enumerate(asr_shipped.PACKAGES, 1):
        data = fake / package / "data"
        data.mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
        (data / f"model.bin.part{n}").write_bytes(b"not a model")
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (fake / asr_shipped.PACKAGES[0] / "data" / name).write_text("{}")
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.setattr(asr_shipped, "_data", lambda package: fake / package / "data")
    with pytest.raises(ConfigError) as err:
        asr_shipped.model_dir()
    assert "sha256" in str(err.value) and "not version 1.0.0" in str(err.value)
    assert not (tmp_path / "cache" / "playlisteval" / "whisper-base-1.0.0").exists()
    assert list((tmp_path / "cache" / "playlisteval").iterdir()) == []
