"""Serving an ASGI app on a free loopback port from a background thread (the shadow demo, tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serve_in_thread(
    app: object, host: str = "127.0.0.1", join_timeout: float = 15.0, port: int = 0, **config: Any
) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread on ``port`` of ``host`` (0: a free one); yields the base URL
    and stops the server (lifespan shutdown included) on exit.

    By default the server adds no ``server``/``date`` headers of its own, so a proxy passes the upstream's on
    unchanged; ``config`` overrides any ``uvicorn.Config`` option.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    options: dict[str, Any] = {
        "log_level": "warning",
        "timeout_graceful_shutdown": 1,
        "server_header": False,
        "date_header": False,
        **config,
    }
    server = uvicorn.Server(uvicorn.Config(app, **options))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError(f"the server on {host}:{port} did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=join_timeout)
        sock.close()
