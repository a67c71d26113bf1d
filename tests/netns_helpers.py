"""Hosts of the test's own for faults between machines (issue 25, deliverable 7): a network namespace joined to
this one by a veth pair — the "worker host" — whose link can be cut (``ip link set … down``) and restored,
and a TCP relay on this side's veth address to the local PostgreSQL (which listens on 127.0.0.1 only), so a
worker in the namespace reaches Redis and PostgreSQL only across the link. Needs root and ``ip netns``; the
tests skip cleanly without them."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass, field


def netns_problem() -> str | None:
    """Why the namespace tests cannot run here, or None."""
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"pe25probe{secrets.token_hex(2)}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class Host:
    """A namespace ``name`` at ``10.225.<n>.2``, joined to this side (``10.225.<n>.1``) by veth ``outer``."""

    name: str = field(default_factory=lambda: f"pe25h{secrets.token_hex(3)}")
    subnet: int = field(default_factory=lambda: 16 + secrets.randbelow(200))

    @property
    def outer(self) -> str:
        return f"v{self.name[-8:]}o"

    @property
    def inner(self) -> str:
        return f"v{self.name[-8:]}i"

    @property
    def here(self) -> str:
        """This side's address, as the host sees it (Redis and the PostgreSQL relay listen on it)."""
        return f"10.225.{self.subnet}.1"

    def up(self) -> Host:
        _ip("netns", "add", self.name)
        _ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
        _ip("link", "set", self.inner, "netns", self.name)
        _ip("addr", "add", f"{self.here}/24", "dev", self.outer)
        _ip("link", "set", self.outer, "up")
        _ip("netns", "exec", self.name, "ip", "addr", "add", f"10.225.{self.subnet}.2/24", "dev", self.inner)
        _ip("netns", "exec", self.name, "ip", "link", "set", self.inner, "up")
        _ip("netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        return self

    def cut(self) -> None:
        """The host loses its network: no packet crosses the link until ``restore``."""
        _ip("link", "set", self.outer, "down")

    def restore(self) -> None:
        _ip("link", "set", self.outer, "up")

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def down(self) -> None:
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


class Relay:
    """A TCP relay: connections to ``listen`` are piped to ``target`` (one thread per direction)."""

    def __init__(self, listen_host: str, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server((listen_host, 0))
        self.port = int(self.server.getsockname()[1])
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True, name="relay").start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop.set()
        self.server.close()
