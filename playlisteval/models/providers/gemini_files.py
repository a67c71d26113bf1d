"""Gemini Files API uploads, reused while valid and remembered in the store for every worker.

An upload is found by (provider, content fingerprint of the local file) in RemoteFile. It is reused
until ``file_margin_s`` before it expires; then, or when the API says it no longer knows it, the file
is uploaded again. After an upload the file is polled until the API has processed it (ACTIVE). Threads
of one process share a lock per file, so a clip is uploaded once even when many items need it at once;
two processes may both upload it, and the later row simply replaces the earlier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError, TransientModelError
from playlisteval.media.clips import content_fingerprint
from playlisteval.store import open_store, transaction
from playlisteval.store.tables import RemoteFile

PROVIDER = "gemini"


class RemoteFiles:
    def __init__(self, settings: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.sleep = sleep
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.uploads = 0  # uploads made by this process (tests and logs)

    def _lock_for(self, fingerprint: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(fingerprint, threading.Lock())

    def ensure(self, client: genai.Client, path: Path, mime: str) -> str:
        """The URI of a valid upload of ``path``, uploading it if there is none."""
        fingerprint = content_fingerprint(path)
        with self._lock_for(fingerprint):
            uri = self._valid(fingerprint)
            if uri is not None:
                return uri
            uploaded = self._upload(client, path, mime)
            self._remember(fingerprint, uploaded)
            return str(uploaded.uri)

    def forget(self, path: Path) -> None:
        fingerprint = content_fingerprint(path)
        with transaction(open_store(self.settings)) as s:
            s.exec(delete(RemoteFile).where(col(RemoteFile.provider) == PROVIDER,
                                            col(RemoteFile.fingerprint) == fingerprint))

    # -- steps -------------------------------------------------------------------------------------
    def _valid(self, fingerprint: str) -> str | None:
        with transaction(open_store(self.settings)) as s:
            row = s.exec(select(RemoteFile).where(RemoteFile.provider == PROVIDER,
                                                  RemoteFile.fingerprint == fingerprint)).first()
        if row is None or not row.uri:
            return None
        if row.expires_at is not None and row.expires_at - self.settings.providers.file_margin_s <= time.time():
            return None
        return row.uri

    def _upload(self, client: genai.Client, path: Path, mime: str) -> types.File:
        cfg = self.settings.providers
        uploaded = client.files.upload(file=path, config=types.UploadFileConfig(mime_type=mime,
                                                                                display_name=path.name))
        deadline = time.monotonic() + cfg.file_wait_s
        self.uploads += 1
        while _state(uploaded) == "PROCESSING":
            if time.monotonic() > deadline:
                raise TransientModelError(f"gemini: upload {uploaded.name} still processing after "
                                          f"{cfg.file_wait_s:.0f} s")
            self.sleep(cfg.file_poll_s)
            uploaded = client.files.get(name=str(uploaded.name))
        if _state(uploaded) == "FAILED":
            detail = uploaded.error.message if uploaded.error else "no detail"
            raise PermanentModelError(f"gemini: the API could not process {path.name}: {detail}")
        if not uploaded.uri:
            raise TransientModelError(f"gemini: upload {uploaded.name} has no URI")
        return uploaded

    def _remember(self, fingerprint: str, uploaded: types.File) -> None:
        expires = (uploaded.expiration_time.timestamp() if uploaded.expiration_time
                   else time.time() + self.settings.providers.file_ttl_s)
        values: dict[str, Any] = {"remote_name": str(uploaded.name), "uri": str(uploaded.uri), "expires_at": expires}
        engine = open_store(self.settings)
        try:
            with transaction(engine) as s:
                row = s.exec(select(RemoteFile).where(RemoteFile.provider == PROVIDER,
                                                      RemoteFile.fingerprint == fingerprint)).first()
                if row is None:
                    s.add(RemoteFile(provider=PROVIDER, fingerprint=fingerprint, **values))
                else:
                    for key, value in values.items():
                        setattr(row, key, value)
                    s.add(row)
        except IntegrityError:  # another process stored its upload first: either is valid
            pass


def _state(uploaded: types.File) -> str:
    state = uploaded.state
    return state.value if state is not None else "ACTIVE"
