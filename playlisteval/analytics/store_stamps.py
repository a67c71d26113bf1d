"""The SQLite store's files as ``os.stat`` sees them: how the analytics file's mirror (mirror.py) tells that the
store has had no commit since its last sync without opening the store (issue 26)."""

from __future__ import annotations

import os
import time

Stamp = tuple[tuple[int, int, int] | None, ...]
_FRESH_NS = 20_000_000  # a file modified this recently may be modified again within the same clock tick


def stamp_of(database: str) -> Stamp:
    """The store file and its WAL as ``os.stat`` sees them (inode, size, modification time): a commit in
    WAL mode writes frames to the -wal (size or time changes), a checkpoint or a reset the file or the
    inode. Read without opening either file: a descriptor of ours closed would drop the locks of the
    SQLite that has it open (store/engine.py, foreign_sqlite), as PRAGMA data_version's connection did."""
    out: list[tuple[int, int, int] | None] = []
    for name in (database, database + "-wal"):
        try:
            st = os.stat(name)
        except FileNotFoundError:
            out.append(None)
            continue
        # an empty -wal is no -wal: the last connection to close deletes it, the next to open makes it
        # (the scanner's own reads do); a commit that went into the file since changed the file itself
        out.append((st.st_ino, st.st_size, st.st_mtime_ns) if st.st_size or name == database else None)
    return tuple(out)


def settled_stamp(database: str) -> Stamp:
    """``stamp_of``, taken once the files' last modification is older than a clock tick: the kernel stamps a
    write with a coarse clock (a few ms), so a commit right after a stamp taken in the same tick as the
    previous write could leave size and time as they were (a WAL reset overwrites in place)."""
    stamp = stamp_of(database)
    for _ in range(5):  # bounded: a file system whose clock runs ahead of ours must not hold the sync
        newest = max((part[2] for part in stamp if part is not None), default=0)
        wait_ns = newest + _FRESH_NS - time.time_ns()
        if wait_ns <= 0:
            break
        time.sleep(min(wait_ns, _FRESH_NS) / 1e9)
        stamp = stamp_of(database)
    return stamp
