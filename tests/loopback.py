"""Run an ASGI app with uvicorn in a thread on a free loopback port, for tests that need a real HTTP server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn


def serve(app: object, join_timeout: float = 15.0, **config: Any) -> Iterator[str]:
    """Yield the base URL of ``app`` served on 127.0.0.1; the server stops when the generator is closed.

    By default the server adds no ``server``/``date`` headers of its own, so a proxy under test passes the
    upstream's on unchanged; ``config`` overrides any ``uvicorn.Config`` option.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
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
        assert time.monotonic() < deadline, "test server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=join_timeout)
        sock.close()
