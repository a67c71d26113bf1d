"""Adding playlists to the collection (SPEC A1–A3): folders, single files, manifests.

Incremental by construction: a (playlist, path) already in the store is left alone, so adding the
same folder twice changes nothing — unless a file changed in place (issue 22): its size or mtime
moved from what was stamped at add/index and its SHA-256 differs; it is reported as changed, and the
next `playlisteval index` re-indexes it (index/changes.py). Files that cannot be used are reported
with a reason and skipped
(A2); one that exists but is unusable is recorded with status "skipped", so that re-adding it after a
repair probes it again. A file whose content (SHA-256) is already in the collection under another
domain or playlist — the same folder added under a second domain name, or as part of a parent folder —
is reported and not added, unless duplicates are allowed. Probing and hashing happen outside any
transaction; each playlist's rows are written in one short transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from playlisteval.errors import MediaError
from playlisteval.index import fsnames
from playlisteval.index.captions import find_sidecar
from playlisteval.index.episodes import episode_order
from playlisteval.index.file_identity import content_moved, file_stamp, sha256_file
from playlisteval.index.manifest import Entry, read_manifest
from playlisteval.media.probe import ProbeInfo, probe
from playlisteval.store.engine import transaction
from playlisteval.store.tables import Domain, Playlist, Video

VIDEO_SUFFIXES = frozenset(
    {".mp4", ".m4v", ".mkv", ".webm", ".mov", ".avi", ".mpg", ".mpeg", ".ts", ".flv", ".wmv", ".3gp", ".ogv"}
)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class SameContent:
    """A file whose content the collection already holds as ``existing`` ("domain/playlist/path")."""

    path: str
    existing: str
    added: bool  # added anyway (duplicates allowed)


@dataclass
class AddReport:
    added: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    playlists: list[str] = field(default_factory=list)  # "domain/playlist", each once
    duplicates: list[SameContent] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # present, but its content changed on disk
    merged: list[str] = field(default_factory=list)  # manifest rows that repeat an earlier row (issue 44)
    warnings: list[str] = field(default_factory=list)  # added, but something about it was wrong (a clamped duration)

    def summary(self) -> str:
        refused = sum(1 for d in self.duplicates if not d.added)
        return (
            f"{len(self.added)} added, {len(self.unchanged)} already present, "
            + (f"{len(self.changed)} changed on disk (the next `playlisteval index` re-indexes them), "
               if self.changed else "") +
            f"{len(self.skipped)} skipped, " + (f"{refused} not added (same content already in the collection), "
                                                if refused else "") + f"in {len(self.playlists)} playlist(s)"
        )

    def as_dict(self) -> dict[str, object]:
        return {"added": self.added, "unchanged": self.unchanged,
                "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
                "duplicates": [{"path": d.path, "existing": d.existing, "added": d.added} for d in self.duplicates],
                "playlists": self.playlists, "changed": self.changed, "merged": self.merged,
                "warnings": self.warnings}


def _folder_entries(domain: str, folder: Path, report: AddReport) -> list[Entry]:
    """A folder's video files form a playlist named after it; its subfolders are playlists too."""
    entries: list[Entry] = []
    children = sorted(folder.iterdir(), key=lambda p: (p.name.lower(), p.name))
    for child in children:
        # dotfiles ("._x.mp4" resource forks, partial downloads) are not the playlist's videos
        if child.is_file() and child.suffix.lower() in VIDEO_SUFFIXES and not child.name.startswith("."):
            if fsnames.undecodable(child):  # the store cannot hold it: skipped, named escaped (fsnames.py)
                report.skipped.append(Skipped(fsnames.shown(child), fsnames.reason(child)))
                continue
            entries.append(Entry(domain, folder.name, child, child.stem))
    for child in children:
        if child.is_dir() and not child.name.startswith("."):
            if fsnames.undecodable(child):  # a playlist name the store cannot hold, nor its videos' paths
                report.skipped.append(Skipped(fsnames.shown(child), fsnames.reason(child)))
                continue
            entries.extend(_folder_entries(domain, child, report))
    return entries


def _path_entries(domain: str, paths: Iterable[Path], report: AddReport) -> list[Entry]:
    entries: list[Entry] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if fsnames.undecodable(path):  # given on the command line as it is (or under such a folder)
            report.skipped.append(Skipped(fsnames.shown(path), fsnames.reason(path)))
            continue
        if path.is_dir():
            before = len(report.skipped)
            found = _folder_entries(domain, path, report)
            if not found and len(report.skipped) == before:  # else what was skipped in it says why
                report.skipped.append(Skipped(str(path), "no video files in folder"))
            entries.extend(found)
        else:
            # a lone file (or a missing path) belongs to the playlist named after its folder
            entries.append(Entry(domain, path.parent.name, path, path.stem))
    return entries


@dataclass
class _Checked:
    entry: Entry
    path: str
    info: ProbeInfo | None = None
    reason: str | None = None
    sha256: str | None = None
    captions: str | None = None
    stamp: tuple[int, float] | None = None


def _existing(engine: Engine, domain: str, playlist: str) -> dict[str, tuple[str, str | None, int, float]]:
    """path → (status, sha256, size, mtime) of the playlist's videos already in the store."""
    with Session(engine) as session:
        rows = session.execute(
            core_select(col(Video.path), col(Video.status), col(Video.sha256), col(Video.file_size),
                        col(Video.file_mtime))
            .join(Playlist, Playlist.id == Video.playlist_id)  # type: ignore[arg-type]
            .join(Domain, Domain.id == Playlist.domain_id)  # type: ignore[arg-type]
            .where(col(Domain.name) == domain, col(Playlist.name) == playlist)
        ).all()
    return {path: (status, sha, int(size or 0), float(mtime or 0)) for path, status, sha, size, mtime in rows}


def _check(entry: Entry) -> _Checked:
    """Probe, hash and find captions for one entry; outside any transaction (this is the slow part)."""
    assert entry.path is not None
    checked = _Checked(entry, str(entry.path.resolve()))
    if entry.path.is_file() and entry.path.suffix.lower() not in VIDEO_SUFFIXES:
        checked.reason = f"not a video (unknown file type {entry.path.suffix or 'without suffix'})"
        return checked
    try:
        checked.info = probe(entry.path)
        checked.stamp = file_stamp(entry.path)
        checked.sha256 = sha256_file(entry.path)
    except MediaError as exc:
        checked.reason = exc.reason
        return checked
    except OSError as exc:
        checked.reason = f"unreadable: {exc.strerror or exc}"
        return checked
    sidecar = find_sidecar(entry.path)
    checked.captions = str(sidecar.resolve()) if sidecar else None
    return checked


def _same_content(engine: Engine, hashes: list[str]) -> dict[str, list[tuple[str, str, str]]]:
    """sha256 → [(domain, playlist, path)] of the videos already stored with that content."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    with Session(engine) as session:
        for start in range(0, len(hashes), 500):
            rows = session.exec(
                select(Video.sha256, Domain.name, Playlist.name, Video.path)
                .join(Playlist, Playlist.id == Video.playlist_id)  # type: ignore[arg-type]
                .join(Domain, Domain.id == Playlist.domain_id)  # type: ignore[arg-type]
                .where(Video.sha256.in_(hashes[start:start + 500]))  # type: ignore[union-attr]
                .order_by(Video.id)  # type: ignore[arg-type]
            ).all()
            for sha, domain, playlist, path in rows:
                found.setdefault(str(sha), []).append((domain, playlist, path))
    return found


def _refuse_same_content(engine: Engine, domain: str, playlist: str, checked: list[_Checked],
                         seen: dict[str, tuple[str, str, str]], report: AddReport, allow: bool) -> list[_Checked]:
    """``checked`` less the files whose content is in the collection (or earlier in this add) elsewhere."""
    stored = _same_content(engine, sorted({c.sha256 for c in checked if c.sha256}))
    kept: list[_Checked] = []
    for item in checked:
        here = (domain, playlist, item.path)
        if item.sha256:
            # a copy inside the same playlist is left to the near-duplicate check of `index` (SPEC A7)
            elsewhere = [w for w in stored.get(item.sha256, []) if w[:2] != here[:2]]
            if item.sha256 in seen and seen[item.sha256][:2] != here[:2]:
                elsewhere.append(seen[item.sha256])
            if elsewhere:
                d, p, path = elsewhere[0]
                report.duplicates.append(SameContent(item.path, f"{d}/{p}/{path}", allow))
                if not allow:
                    continue
            seen.setdefault(item.sha256, here)
        kept.append(item)
    return kept


def _get_or_create(session: Session, domain: str, playlist: str, source: str | None) -> Playlist:
    dom = session.exec(select(Domain).where(Domain.name == domain)).first()
    if dom is None:
        dom = Domain(name=domain)
        session.add(dom)
        session.flush()
    assert dom.id is not None
    pl = session.exec(select(Playlist).where(Playlist.domain_id == dom.id, Playlist.name == playlist)).first()
    if pl is None:
        pl = Playlist(domain_id=dom.id, name=playlist, source=source)
        session.add(pl)
        session.flush()
    return pl


def _write(session: Session, pl: Playlist, item: _Checked) -> str | None:
    """Insert ("inserted") or repair ("repaired") one video row; None when nothing changed."""
    assert pl.id is not None
    row = session.exec(select(Video).where(Video.playlist_id == pl.id, Video.path == item.path)).first()
    if row is not None and (row.status != "skipped" or item.info is None):
        return None  # present already (or still unusable): adding again is a no-op
    outcome = "repaired" if row is not None else "inserted"
    if row is None:
        row = Video(playlist_id=pl.id, path=item.path, title=item.entry.title, url=item.entry.url)
    if item.info is None:
        row.status, row.reason = "skipped", item.reason
    else:
        info = item.info
        row.status, row.reason = "new", None
        row.sha256, row.duration, row.codec = item.sha256, info.duration, info.codec
        row.width, row.height, row.captions_path = info.width, info.height, item.captions
        if item.stamp is not None:
            row.file_size, row.file_mtime = item.stamp
    session.add(row)
    return outcome


def _renumber(session: Session, pl: Playlist, by_name: bool, explicit: dict[str, int],
              appended: list[str]) -> None:
    """Positions 0..n-1: the base order (file names, or manifest order), then episode numbers (A3).

    Manifest adds: an explicit position wins; new rows without one follow the playlist's current end
    in manifest order; every other video keeps its place.
    """
    videos = list(session.exec(select(Video).where(Video.playlist_id == pl.id)).all())
    if by_name:
        videos.sort(key=lambda v: (Path(v.path).name.lower(), v.path))
    else:
        kept = [explicit.get(v.path, v.position) for v in videos if v.path not in appended]
        end = max(kept, default=-1) + 1
        order = {path: end + i for i, path in enumerate(appended)}
        videos.sort(key=lambda v: (order.get(v.path, explicit.get(v.path, v.position)), v.id or 0))
    for position, video in enumerate(episode_order(videos, [v.title for v in videos])):
        if video.position != position:
            video.position = position
            session.add(video)


def _looks_like_video(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in VIDEO_SUFFIXES


def _source_dir(group: list[Entry]) -> Path:
    """The folder a playlist was added from (its source, when no manifest names it)."""
    assert group[0].path is not None
    return group[0].path.parent


def _add_entries(engine: Engine, entries: list[Entry], report: AddReport, *, by_name: bool,
                 source: str | None = None, allow_duplicate: bool = False) -> AddReport:
    groups: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        if entry.path is None:
            report.skipped.append(Skipped(entry.url or entry.title, "no local file (url only)"))
            continue
        groups.setdefault((entry.domain, entry.playlist), []).append(entry)
    seen: dict[str, tuple[str, str, str]] = {}  # sha256 → where this add put it first
    for (domain, playlist), group in groups.items():
        existing = _existing(engine, domain, playlist)
        checked: list[_Checked] = []
        for entry in group:
            assert entry.path is not None
            path = str(entry.path.resolve())
            known = existing.get(path)
            if known is not None and known[0] != "skipped":
                status, sha, size, mtime = known
                moved = content_moved(path, sha, size, mtime)
                (report.changed if moved else report.unchanged).append(path)
                continue
            item = _check(entry)
            checked.append(item)
            if item.info is None:
                report.skipped.append(Skipped(item.path, item.reason or "unusable"))
            else:
                report.warnings.extend(item.info.warnings)
        kept = _refuse_same_content(engine, domain, playlist, checked, seen, report, allow_duplicate)
        refused = {c.path for c in checked} - {c.path for c in kept}
        # a missing file or a non-video has nothing to record; a broken video is recorded as skipped
        storable = [c for c in kept if c.info is not None or _looks_like_video(Path(c.path))]
        explicit = {str(e.path.resolve()): e.position for e in group
                    if e.path and e.position is not None and str(e.path.resolve()) not in refused}
        if not storable and not explicit:
            continue
        with transaction(engine) as session:
            pl = _get_or_create(session, domain, playlist, source or str(Path(_source_dir(group))))
            appended: list[str] = []
            for item in storable:
                outcome = _write(session, pl, item)
                if outcome and item.info is not None:
                    report.added.append(item.path)
                if outcome == "inserted" and item.path not in explicit:
                    appended.append(item.path)
            session.flush()
            _renumber(session, pl, by_name, explicit, appended)
        name = f"{domain}/{playlist}"
        if name not in report.playlists:
            report.playlists.append(name)
    return report


def add_paths(engine: Engine, domain: str, paths: list[Path], *, allow_duplicate: bool = False) -> AddReport:
    """Add folders (each a playlist; videos by name, then by episode number) and single files."""
    report = AddReport()
    return _add_entries(engine, _path_entries(domain, paths, report), report, by_name=True,
                        allow_duplicate=allow_duplicate)


def add_manifest(engine: Engine, file: str | Path, *, allow_duplicate: bool = False) -> AddReport:
    """Add the rows of a CSV/JSON manifest (domain, playlist, title, path, optional url and position)."""
    file = Path(file).resolve()
    report = AddReport()
    manifest = read_manifest(file)
    report.merged = manifest.merged
    return _add_entries(engine, manifest.entries, report, by_name=False, source=str(file),
                        allow_duplicate=allow_duplicate)
