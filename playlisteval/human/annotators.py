"""Invitations (issue 12): each annotator joins with a link token of their own.

The token is shown once, by `human invite NAME`; the store keeps only its SHA-256, so a copy of the
store lets nobody in. The app's CSRF token is an HMAC of the annotator's token: a page of another site
cannot compute it, and the server needs no secret of its own to check it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.engine import Engine
from sqlmodel import select

from playlisteval.human.errors import HumanStudyError
from playlisteval.store.engine import transaction
from playlisteval.store.tables import HumanAnnotator, HumanStudy

TOKEN_BYTES = 24


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_for(token: str) -> str:
    return hmac.new(token.encode(), b"playlisteval-human-csrf", hashlib.sha256).hexdigest()[:40]


def csrf_ok(token: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(csrf_for(token), given or "")


def invite(engine: Engine, study: HumanStudy, name: str, *, reissue: bool = False) -> str:
    """A new link token for NAME (returned once). Reissuing replaces the old token, which stops working."""
    name = " ".join(name.split())
    if not name or len(name) > 80:
        raise HumanStudyError("an annotator's name must be 1 to 80 characters")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with transaction(engine) as s:
        row = s.exec(select(HumanAnnotator).where(HumanAnnotator.study_id == study.id,
                                                  HumanAnnotator.name == name)).first()
        if row is not None and not reissue:
            raise HumanStudyError(f"{name!r} is already invited to study {study.name!r}; "
                                  "`human invite --reissue` makes a new link and retires the old one")
        if row is None:
            row = HumanAnnotator(study_id=int(study.id or 0), name=name, token_hash=token_hash(token))
        else:
            row.token_hash = token_hash(token)
        s.add(row)
    return token


def by_token(engine: Engine, study_id: int, token: str | None) -> HumanAnnotator | None:
    if not token or len(token) > 200:
        return None
    with transaction(engine) as s:
        row = s.exec(select(HumanAnnotator).where(HumanAnnotator.token_hash == token_hash(token))).first()
    return row if row is not None and row.study_id == study_id else None


def annotators(engine: Engine, study_id: int) -> list[HumanAnnotator]:
    with transaction(engine) as s:
        return list(s.exec(select(HumanAnnotator).where(HumanAnnotator.study_id == study_id)
                           .order_by(HumanAnnotator.name)).all())
