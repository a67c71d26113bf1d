"""Who holds a lease: a worker process's identity, and the one conclusion a pid may support (issue 44).

A lease owner used to be ``host:pid``. Containers with the host's network (Docker ``--network host``,
Kubernetes ``hostNetwork``) share the host's name but each has its own PID namespace: two workers could
both be ``host:1``, and each, checking the other's pid in its own namespace, found it dead and took its
live leases at every sweep. Now an identity is ``host:pid:place.nonce``:

- ``place`` is the PID namespace (the inode of /proc/self/ns/pid) and the boot (the first digits of the
  kernel's boot id): a pid means something only inside the namespace of the boot it was read in;
- ``nonce`` is drawn per process (anew in a forked child), so two processes never share an identity, even
  with one pid in two namespaces or a pid reused after a death.

A lease is judged dead by its missing renewals (store/items.py, actors/leases.py, index/leases.py). The one
shortcut kept: a holder whose ``place`` is this process's own and whose pid no longer exists there is dead
(signal 0 looks into the very namespace the pid was read in). A holder of another place, or of an identity
from before this format, is never judged by its pid.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int  # -1 when the identity has none readable
    place: str  # "<pid namespace inode>.<boot id prefix>"; "" for an identity of the old ``host:pid`` form
    nonce: str


@lru_cache(maxsize=1)
def place() -> str:
    """This process's PID namespace and boot; "" where /proc cannot tell (then no pid is ever checked)."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip().replace("-", "")[:8]
    except OSError:
        return ""
    inode = link.rpartition("[")[2].rstrip("]")
    return f"{inode}.{boot}" if inode.isdigit() and boot else ""


class _Nonce:
    """This process's random part, drawn anew in a forked child (a fork copies its parent's)."""

    def __init__(self) -> None:
        self.renew()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.value = secrets.token_hex(4)
        place.cache_clear()  # a child forked by `unshare --pid --fork` lives in another namespace


_NONCE = _Nonce()


def this_process() -> str:
    """The identity this process writes as a lease owner: ``host:pid:place.nonce``."""
    where = place()
    return f"{socket.gethostname()}:{os.getpid()}:{where}.{_NONCE.value}" if where else \
        f"{socket.gethostname()}:{os.getpid()}:.{_NONCE.value}"


def parse(owner: str) -> Holder:
    """The parts of a lease owner (``host:pid:place.nonce``, with a ``/token`` or ``:role`` after it, or an
    old ``host:pid``)."""
    process = owner.split("/", 1)[0]
    host, _, rest = process.partition(":")
    parts = rest.split(":")
    pid = int(parts[0]) if parts[0].isdigit() else -1
    where, nonce = "", ""
    if len(parts) > 1 and "." in parts[1]:
        where, _, nonce = parts[1].rpartition(".")
    return Holder(host, pid, where, nonce)


def process_of(owner: str) -> str:
    """The process part of an owner (``host:pid:place.nonce``), without a lease token or role after it."""
    held = parse(owner)
    return f"{held.host}:{held.pid}:{held.place}.{held.nonce}" if held.nonce else owner.split("/", 1)[0]


def is_gone(owner: str) -> bool:
    """Whether the holder is known dead without waiting for its renewals to stop: only a process of this very
    PID namespace and boot can be checked; any other holder is judged by its heartbeat."""
    held, where = parse(owner), place()
    if not where or held.place != where or held.host != socket.gethostname() or held.pid <= 0:
        return False
    if held.pid == os.getpid():
        return held.nonce != _NONCE.value  # an earlier process that had our pid: gone
    try:
        os.kill(held.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
