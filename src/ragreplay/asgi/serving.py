"""Serving an ASGI app with uvicorn under :class:`ServerLimits`: in the foreground (the CLI's servers) or on a
free loopback port from a background thread (the shadow demo, tests)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from ragreplay.asgi.deadlines import LIMITS_ENV, protocol_for
from ragreplay.asgi.limits import DEFAULT_LIMITS, ServerLimits

WORKER_PROTOCOL = "ragreplay.asgi.deadlines:WorkerProtocol"


def server_options(limits: ServerLimits, *, workers: bool = False) -> dict[str, Any]:
    """The ``uvicorn.Config`` options that apply ``limits``: header and body deadlines, the idle timeout, the
    connection limit and the listen backlog. ``workers``: for worker processes, which import the protocol by
    name and read the limits from the environment (set here, inherited by them)."""
    if workers:
        os.environ[LIMITS_ENV] = limits.model_dump_json()
    return {
        "http": WORKER_PROTOCOL if workers else protocol_for(limits),
        # uvicorn counts the asking connection itself: over limit_concurrency - 1 others it answers 503
        "limit_concurrency": limits.max_connections + 1,
        "backlog": limits.backlog,
    }


def serve(app: object, host: str, port: int, limits: ServerLimits = DEFAULT_LIMITS, **config: Any) -> None:
    """Serve ``app`` on ``host:port`` under ``limits`` until stopped (Ctrl-C); ``config`` overrides any
    ``uvicorn.run`` option (``workers=N`` with ``app`` named as an import string serves N processes)."""
    options = server_options(limits, workers=int(config.get("workers") or 1) > 1)
    uvicorn.run(app, host=host, port=port, **{"log_level": "warning", **options, **config})  # type: ignore[arg-type]


@contextmanager
def serve_in_thread(
    app: object,
    host: str = "127.0.0.1",
    join_timeout: float = 15.0,
    port: int = 0,
    limits: ServerLimits = DEFAULT_LIMITS,
    **config: Any,
) -> Iterator[str]:
    """Serve ``app`` with uvicorn under ``limits`` in a daemon thread on ``port`` of ``host`` (0: a free one);
    yields the base URL and stops the server (lifespan shutdown included) on exit.

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
        **server_options(limits),
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
