"""Checks before a command starts a server: the address it will listen on must be free and this machine's."""

from __future__ import annotations

import socket

from ragreplay.errors import ConfigError


def check_listen(host: str, port: int) -> None:
    """Fail with a fix when ``host:port`` cannot be listened on (taken, or not an address of this machine).

    Called before any banner is printed, so a busy port is one clear error (exit 2), not a banner followed by
    the server's own traceback.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(
            f"--host {host!r} is not a known host name or address ({exc.strerror}). Fix: use 127.0.0.1 "
            "(this machine only) or 0.0.0.0 (every interface)"
        ) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}. Fix: choose another --port, or "
                "stop what uses that one"
            ) from None
