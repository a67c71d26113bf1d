"""Serving the viewer: the port is bound before anything is printed (issue 22: a busy port is one line and
exit 2, never a URL that does not work), then uvicorn runs on that very socket until Ctrl-C.
"""

from __future__ import annotations

import socket

from playlisteval.errors import PlaylistEvalError


class PortBusy(PlaylistEvalError):
    """The address cannot be bound (in use, not this machine's, or not allowed)."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: any free one); PortBusy with one line if not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise PortBusy(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno in (98, 48, 10048) else exc.strerror or str(exc)
        raise PortBusy(f"cannot serve on {host}:{port}: {why} (choose another with --port)") from exc
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def run(app: object, sock: socket.socket) -> None:
    """uvicorn on the bound socket; no access log (the first URL carries the token)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False)  # type: ignore[arg-type]
    uvicorn.Server(config).run(sockets=[sock])
