"""Run an ASGI app with uvicorn in a thread on a free loopback port, for tests that need a real HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ragreplay.asgi.serving import serve_in_thread


def serve(app: object, join_timeout: float = 15.0, **config: Any) -> Iterator[str]:
    """Yield the base URL of ``app`` served on 127.0.0.1; the server stops when the generator is closed
    (see :func:`ragreplay.asgi.serving.serve_in_thread`)."""
    with serve_in_thread(app, join_timeout=join_timeout, **config) as url:
        yield url
