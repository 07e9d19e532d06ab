"""`ragreplay shadow serve`: put the shadow proxy in front of the champion RAG app.

For now the proxy only forwards and counts (mirror=None); mirroring to challengers is wired here once the
Shadow library's configuration (challengers, sampling, store) is read from the settings file.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

import typer

from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.shadow.proxy import create_proxy

shadow_app = typer.Typer(
    help="Shadow live traffic: challengers answer the same questions off the user's path."
)


def check_champion_url(url: str) -> str:
    """The champion URL if it is an absolute http(s) URL without query or fragment; else a `ConfigError`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(
            f"--champion {url!r} is not a base URL. Fix: give the champion app's address, "
            "e.g. http://127.0.0.1:8000 (paths and queries of each request are appended)."
        )
    return url


@shadow_app.command()
def serve(
    champion: Annotated[
        str, typer.Option(help="Base URL of the champion RAG app, e.g. http://127.0.0.1:8000")
    ],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8787,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the champion before answering 504.")
    ] = 60.0,
) -> None:
    """Forward every request to the champion and return its response unchanged; counters at /_shadow/stats.

    Challenger mirroring is not wired yet: the proxy forwards and counts only.
    """
    check_champion_url(champion)
    try:
        import uvicorn
    except ImportError as exc:  # uvicorn is not a core dependency
        raise RagreplayError("`ragreplay shadow serve` needs uvicorn. Fix: pip install uvicorn") from exc
    proxy = create_proxy(champion, mirror=None, timeout_s=timeout)
    typer.echo(f"shadow proxy on http://{host}:{port} -> {champion} (stats at /_shadow/stats)", err=True)
    # no server/date headers of the proxy's own: the champion's pass through unchanged
    uvicorn.run(proxy, host=host, port=port, log_level="warning", server_header=False, date_header=False)
