"""`ragreplay shadow dashboard`: serve the read-only shadow dashboard over the store."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from ragreplay.asgi.limits import DEFAULT_LIMITS, ServerLimits, fit_open_files
from ragreplay.asgi.serving import serve
from ragreplay.cli.common import ConfigOption, DbOption, err_console, settings_from
from ragreplay.cli.listen import check_listen

DEFAULT_PORT = 8788


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dashboard(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on")] = DEFAULT_PORT,
    config: ConfigOption = None,
    header_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds a client has to send a request's headers, then 408")
    ] = DEFAULT_LIMITS.header_timeout_s,
    body_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds a client has to send a request's body, then 408")
    ] = DEFAULT_LIMITS.body_timeout_s,
    idle_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds a kept-alive connection may sit idle between requests")
    ] = DEFAULT_LIMITS.idle_timeout_s,
    max_connections: Annotated[
        int, typer.Option(min=1, help="Connections served at once; a request over them gets a 503")
    ] = DEFAULT_LIMITS.max_connections,
) -> None:
    """Serve the read-only shadow dashboard: agreement and preference per challenger, the grid, per-tag and
    per-day tables, the questions the judge could not score, and every judged row; each page has a JSON
    twin (/index.json, /rows.json, /rows/ID.json). Run `ragreplay shadow judge` to add new rows to it."""
    from ragreplay.web import create_app

    limits = ServerLimits(
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        idle_timeout_s=idle_timeout,
        max_connections=max_connections,
    )
    settings = settings_from(config, db=db)
    check_listen(host, port)
    r = settings.review
    app = create_app(
        settings.db,
        failure_tags=r.failure_tags,
        login_for_dashboard=not _loopback(host),
        session_ttl_s=r.session_hours * 3600,
        session_idle_s=None if r.session_idle_minutes is None else r.session_idle_minutes * 60,
        min_overlap=r.min_overlap,
    )
    shown = f"[{host}]" if ":" in host else host
    err_console.print(
        f"shadow dashboard on http://{shown}:{port}/ (store {app.state.store.url}); Ctrl-C stops it",
        highlight=False,
    )
    if not _loopback(host):
        err_console.print(
            "note: off loopback every page needs a reviewer's login (their token link, "
            "`ragreplay review reviewer add NAME`); serve it over HTTPS (a proxy in front) so the session "
            "cookie is not sent in the clear",
            highlight=False,
        )
    warning = fit_open_files(limits)
    if warning is not None:
        err_console.print(f"warning: {warning}", highlight=False)
    serve(app, host, port, limits)
