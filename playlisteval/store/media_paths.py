"""Where the store's media files are: stored portable, resolved in one place (issue 41, relocatable projects).

A video's path, its captions' path and the folder (or manifest) its playlist was added from are stored in
one of three forms:

- inside the project folder (the one holding playlisteval.toml): relative to it, ``media/cooking/ep1.mp4``,
  so a copied, moved or mounted-elsewhere project reads its own files;
- under a named media root (``playlisteval media-root set NAME FOLDER``): ``@NAME/cooking/ep1.mp4``; the
  root's folder is kept in the store's ``media_root`` table, and re-pointing it is one command;
- anywhere else: absolute, as every path was before (such a store keeps working; migration
  ``4131_media_paths_relative`` rewrites its paths inside the project).

``MediaRoots.resolve`` is the one function that turns a stored form into a file path. The column type
``MediaPath`` (video.path, video.captions_path, playlist.source) applies it to every value read through the
ORM or a typed statement, and ``portable`` to every value written or compared, so the code above the store
only ever sees file paths. The roots are attached to the engine (its dialect: every connection, session and
typed SQL text of the engine reaches them) by ``open_store``; an engine opened without a project (a bare
``make_engine``) reads and writes the stored forms as they are.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import String, TypeDecorator, text
from sqlalchemy.engine import Connection, Engine

from playlisteval.errors import ConfigError

ROOT_MARK = "@"  # "@NAME/rest": under the named media root NAME
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ATTR = "playlisteval_media_roots"  # the attribute of the engine's dialect holding its MediaRoots


@dataclass(frozen=True)
class MediaRoots:
    """The project folder and the named media roots (NAME → folder) that stored paths are relative to."""

    project: Path
    named: dict[str, Path] = field(default_factory=dict)

    def portable(self, path: str) -> str:
        """The stored form of ``path``: relative inside the project, ``@NAME/…`` under a named root, else as
        given. A value already in a stored form is returned unchanged; a trailing separator is kept (a
        folder prefix for LIKE, `remove FOLDER`)."""
        if not os.path.isabs(path):
            return path
        trailing = path.endswith(os.sep) and len(path) > 1
        target = Path(os.path.normpath(path))
        if target == self.project or target.is_relative_to(self.project):
            rel = target.relative_to(self.project).as_posix()
            out = "" if rel == "." else rel
        else:
            # the deepest root that holds it, so that a root inside another wins
            holders = [(name, root) for name, root in self.named.items() if target.is_relative_to(root)]
            if not holders:
                return path
            name, root = max(holders, key=lambda h: len(h[1].parts))
            rel = target.relative_to(root).as_posix()
            out = f"{ROOT_MARK}{name}" + ("" if rel == "." else f"/{rel}")
        return out + "/" if trailing and out else out

    def resolve(self, stored: str) -> str:
        """The file path a stored form names: absolute as stored; relative against the project folder;
        ``@NAME/…`` against the root's folder. A root not set is left as stored (``@NAME/…``): no such
        file, so readers report it missing, and `check` names the root to set."""
        if os.path.isabs(stored):
            return stored
        if stored.startswith(ROOT_MARK):
            name, _, rest = stored[len(ROOT_MARK):].partition("/")
            root = self.named.get(name)
            if root is None:
                return stored
            return str(root / PurePosixPath(rest)) if rest else str(root)
        return str(self.project / PurePosixPath(stored)) if stored else str(self.project)


def unset_root(path: str) -> str | None:
    """The name of the media root a resolved path still names because it is not set ("@NAME/…"), or None."""
    if path.startswith(ROOT_MARK):
        return path[len(ROOT_MARK):].partition("/")[0]
    return None


def attached(dialect: Any) -> MediaRoots | None:
    return getattr(dialect, _ATTR, None)


def attach(engine: Engine, roots: MediaRoots) -> None:
    """Make ``engine`` store and resolve media paths against ``roots`` (open_store; `media-root set`)."""
    setattr(engine.dialect, _ATTR, roots)


class MediaPath(TypeDecorator[str]):
    """A media file's path column: written and compared in its portable form, read as a file path."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        roots = attached(dialect)
        return value if value is None or roots is None else roots.portable(str(value))

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        roots = attached(dialect)
        return value if value is None or roots is None else roots.resolve(str(value))


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ConfigError(f"media root name {name!r}: letters, digits, '_', '.', '-' (at most 64, first a letter "
                          "or digit)")
    return name


def read_roots(conn: Connection) -> dict[str, Path]:
    """NAME → folder of the store's media roots ({} for a store whose migrations have not run yet)."""
    from sqlalchemy import inspect

    if not inspect(conn).has_table("media_root"):
        return {}
    return {str(n): Path(str(p)) for n, p in conn.execute(text("SELECT name, path FROM media_root ORDER BY name"))}


def load(engine: Engine, project: Path) -> MediaRoots:
    """The project's roots (its folder and the store's named roots), attached to ``engine``."""
    with engine.connect() as conn:
        roots = MediaRoots(project.resolve(), read_roots(conn))
    attach(engine, roots)
    return roots


#: (table, column) of every stored media path
COLUMNS = (("video", "path"), ("video", "captions_path"), ("playlist", "source"))


def rewrite_portable(conn: Connection, roots: MediaRoots) -> int:
    """Every stored media path put in its portable form under ``roots``; the number of values rewritten."""
    changed = 0
    for table, column in COLUMNS:
        rows = conn.execute(text(f"SELECT id, {column} FROM {table} WHERE {column} IS NOT NULL")).all()
        for row_id, value in rows:
            new = roots.portable(str(value))
            if new != value:
                conn.execute(text(f"UPDATE {table} SET {column} = :v WHERE id = :i"), {"v": new, "i": row_id})
                changed += 1
    return changed


def relative_inside_project(conn: Connection) -> None:
    """Migration: the absolute paths of a store written before issue 41 that lie inside the project folder
    become relative to it (a copy of the project then reads its own files). Paths elsewhere stay absolute
    until a media root adopts them (`playlisteval media-root set`). Only open_store opens a store with its
    project folder (attached before it migrates); an engine opened bare (tests) has no folder to be relative
    to, and its paths are left as they are."""
    roots = attached(conn.dialect)
    if roots is None:
        return
    rewrite_portable(conn, MediaRoots(roots.project))


def outside_every_root(engine: Engine, paths: list[str]) -> list[str]:
    """The paths among ``paths`` that the engine's project would store absolute (outside it and every root)."""
    roots = attached(engine.dialect)
    return [] if roots is None else [p for p in paths if os.path.isabs(roots.portable(p))]
