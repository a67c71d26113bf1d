"""Named media roots (issue 41): folders outside the project whose videos are stored as "@NAME/…".

Media that live outside the project folder (a shared disk, a mount) are stored under a root's name, so
moving them, or opening a copy of the project on a machine that mounts them elsewhere, is one command:
``playlisteval media-root set NAME FOLDER``. Setting a root also adopts the videos already stored by
absolute path under FOLDER. The store keeps the roots (table ``media_root``); a process that opened the
store before a root was re-pointed (a running worker) keeps the old folder until it restarts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from playlisteval.errors import ConfigError
from playlisteval.store.engine import read_core, transaction
from playlisteval.store.media_paths import ROOT_MARK, MediaRoots, attach, attached, check_name, rewrite_portable


@dataclass
class RootState:
    """A root, its folder and how many of the collection's videos it holds and lack their file there."""

    name: str
    folder: str
    videos: int = 0
    missing: list[str] = field(default_factory=list)  # stored forms ("@NAME/…") with no file in the folder
    previous: str | None = None  # set: the folder it named before (None: a new root)
    adopted: int = 0  # set: paths stored absolute under the folder, now stored under the root

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "folder": self.folder, "videos": self.videos, "missing": len(self.missing),
                "missing_paths": self.missing[:20], "previous": self.previous, "adopted": self.adopted}


def _roots(engine: Engine) -> MediaRoots:
    roots = attached(engine.dialect)
    if roots is None:  # open_store attaches them; a bare engine has no project to be relative to
        raise ConfigError("the store was opened without its project: media roots need the project folder")
    return roots


def _videos_under(conn: Connection, name: str) -> list[str]:
    """The stored paths of the videos under root ``name`` (stored forms: no column type applies here)."""
    pattern = f"{ROOT_MARK}{name.replace('_', chr(92) + '_')}/%"  # "_" is LIKE's any-character
    rows = conn.execute(text("SELECT path FROM video WHERE path LIKE :p ESCAPE '\\' OR path = :n ORDER BY path"),
                        {"p": pattern, "n": f"{ROOT_MARK}{name}"})
    return [str(r[0]) for r in rows]


def _state(conn: Connection, roots: MediaRoots, name: str) -> RootState:
    stored = _videos_under(conn, name)
    missing = [s for s in stored if not os.path.isfile(roots.resolve(s))]
    return RootState(name, str(roots.named[name]), len(stored), missing)


def list_roots(engine: Engine) -> list[RootState]:
    roots = _roots(engine)
    with read_core(engine) as conn:
        return [_state(conn, roots, name) for name in sorted(roots.named)]


def set_root(engine: Engine, name: str, folder: str | Path) -> RootState:
    """Create root ``name`` at ``folder`` or re-point it there; videos stored by absolute path under the
    folder are stored under the root from now on. The folder must exist (a typo would make every video of
    the root missing); one inside the project needs no root (its videos are stored relative already)."""
    from playlisteval.store.tables import MediaRoot

    check_name(name)
    roots = _roots(engine)
    target = Path(folder).expanduser().resolve()
    if target == roots.project or target.is_relative_to(roots.project):
        raise ConfigError(f"media root {name!r}: {target} is inside the project folder {roots.project}, whose "
                          "videos are stored relative to it already; no root is needed")
    if not target.is_dir():
        raise ConfigError(f"media root {name!r}: {target} is not a folder on this machine; nothing was changed")
    taken = [n for n, f in roots.named.items() if f == target and n != name]
    if taken:
        raise ConfigError(f"{target} is media root {taken[0]!r} already: re-point that one, or choose another folder")
    previous = roots.named.get(name)
    changed = MediaRoots(roots.project, {**roots.named, name: target})
    with transaction(engine) as s:
        row = s.get(MediaRoot, name)
        if row is None:
            row = MediaRoot(name=name, path=str(target))
        row.path = str(target)
        s.add(row)
        s.flush()
        adopted = rewrite_portable(s.connection(), changed)
    attach(engine, changed)  # this process reads the new folder from now on
    with read_core(engine) as conn:
        state = _state(conn, changed, name)
    state.previous, state.adopted = (str(previous) if previous else None), adopted
    return state
