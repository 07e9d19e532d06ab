"""The read-only shadow dashboard: server-rendered pages over the store, each with a JSON twin.

``GET /`` (``/index.json``): the headline numbers, grid, per-tag table, feedback, warnings and per-day trend of a
window (``?since=7d``). ``GET /rows`` (``/rows.json``): judged rows newest first, filtered, keyset-paged.
``GET /rows/{id}`` (``/rows/{id}.json``): one row whole. ``GET /healthz``: ``ok``. Every dashboard endpoint
only reads; the review screen under ``/review`` (:mod:`ragreplay.web.review_pages`) is the one part that
writes (reviews). Dashboard pages are self-contained (inline CSS and SVG, no script, nothing fetched from
elsewhere) and every piece of user text is escaped.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragreplay.core.costs import cost_text
from ragreplay.core.review import taxonomy
from ragreplay.report.labels import pct
from ragreplay.review.agreement import DEFAULT_MIN_OVERLAP
from ragreplay.store import Store, StoreError
from ragreplay.web.queries import (
    ANSWER_PREVIEW,
    BadRequest,
    index_data,
    row_data,
    rows_data,
    since_start,
    store_label,
)
from ragreplay.web.review_handles import SECRET_NAME, ItemHandles
from ragreplay.web.review_pages import SESSION_IDLE_S, SESSION_TTL_S, ReviewPages, Sessions

logger = logging.getLogger(__name__)


def _number(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "–" if value is None else f"{value:.{digits}f}{suffix}"


def _signed(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "–" if value is None else f"{value:+.{digits}f}{suffix}"


def _attr(value: float | None) -> str:
    """A number for a ``data-*`` attribute: Python's round-tripping repr, or empty when there is none."""
    return "" if value is None else repr(float(value))


def environment() -> Environment:
    """The dashboard's Jinja2 environment: package templates, autoescaping on for every template."""
    env = Environment(
        loader=PackageLoader("ragreplay.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = pct
    env.filters["number"] = _number
    env.filters["signed"] = _signed
    env.filters["attr"] = _attr
    env.globals["cost_text"] = cost_text
    env.globals["preview"] = ANSWER_PREVIEW
    return env


def overview_clock() -> float:
    """The clock that ages kept overviews (a module function so that tests can move it on)."""
    return time.monotonic()


class RecentOverviews:
    """The overview of each recently asked window, reused for ``ttl_s`` seconds: its summary reads every judged
    row of the window, which takes seconds on a busy week, and a dashboard is reloaded often."""

    def __init__(self, ttl_s: float, size: int = 8) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[float, dict[str, Any]]] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The kept overview for ``key`` while fresh, else ``build()`` (kept for next time)."""
        if self.ttl_s <= 0:
            return build()
        with self._lock:
            found = self._kept.get(key)
            if found is not None and overview_clock() - found[0] < self.ttl_s:
                self._kept.move_to_end(key)
                return found[1]
        data = build()
        with self._lock:
            self._kept[key] = (overview_clock(), data)
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return data


class DashboardPages:
    """The dashboard's endpoints over one open store: each page and its JSON twin, and the error pages."""

    def __init__(self, store: Store, cache_s: float) -> None:
        self.store = store
        self.env = environment()
        self.overviews = RecentOverviews(cache_s)

    def page(self, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """``template`` rendered with ``context`` (autoescaped)."""
        html = self.env.get_template(template).render(store_label=store_label(self.store.url), **context)
        return HTMLResponse(html, status_code=status_code)

    def problem(self, status: int, title: str, message: str, json_twin: bool) -> Response:
        """An error page, or its JSON twin."""
        if json_twin:
            return JSONResponse({"error": message, "status": status}, status_code=status)
        return self.page("error.html.j2", status, status=status, title=title, message=message)

    def guarded(
        self, build: Callable[[Request], Any], template: str, json_twin: bool
    ) -> Callable[[Request], Response]:
        """An endpoint that renders what ``build`` returns, with a 400, 404 or 503 page for what can go wrong.

        Sync endpoints: Starlette runs them in its thread pool, so a slow query never blocks the loop.
        """

        def endpoint(request: Request) -> Response:
            try:
                data = build(request)
            except BadRequest as exc:
                return self.problem(400, "Bad request", str(exc), json_twin)
            except (StoreError, SQLAlchemyError) as exc:
                return self.problem(503, "Store unavailable", self._unavailable(exc), json_twin)
            if data is None:
                row_id = request.path_params.get("row_id", "")
                message = (
                    f"There is no shadow row with id {row_id!r}. Fix: pick a row from the list of rows; rows "
                    "older than the retention period are purged"
                )
                return self.problem(404, "Not found", message, json_twin)
            if json_twin:
                return JSONResponse(data)
            return self.page(template, d=data)

        return endpoint

    def _unavailable(self, exc: Exception) -> str:
        # the page may face the network: name neither the database's host and user nor its error text
        logger.warning("dashboard: the store could not be read: %s", exc)
        return (
            "The store could not be read. Fix: check that the database is up and reachable (the dashboard's "
            "log says why), then reload"
        )

    def overview(self, full: bool) -> Callable[[Request], Any]:
        """The overview of the asked window (``full``: with the rows' texts, for the JSON twin)."""

        def index(request: Request) -> Any:
            since, _ = since_start(
                request.query_params.get("since"), datetime.now(UTC)
            )  # 400 before the cache
            return self.overviews.get((since, full), lambda: index_data(self.store, since, full=full))

        return index

    def rows(self, request: Request) -> Any:
        """A filtered page of rows."""
        return rows_data(self.store, dict(request.query_params))

    def one_row(self, request: Request) -> Any:
        """One row whole, or None."""
        return row_data(self.store, request.path_params["row_id"])

    async def not_found(self, request: Request, exc: Exception) -> Response:
        """404 and 405 pages (the dashboard is read-only)."""
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        twin = request.url.path.endswith(".json")
        message = f"Nothing lives at {request.url.path}. Fix: start from the overview at /"
        if status == 405:
            message = "The dashboard is read-only: only GET (and HEAD) requests are answered"
        if _under_review(request.url.path):
            message = f"Nothing lives at {request.url.path} for {request.method}. Fix: start from /review"
        return self.problem(status, "Not found" if status == 404 else "Method not allowed", message, twin)

    def routes(self) -> list[Route]:
        """Every page with its JSON twin."""
        return [
            Route("/", self.guarded(self.overview(full=False), "index.html.j2", False)),
            Route("/index.json", self.guarded(self.overview(full=True), "", True)),
            Route("/rows", self.guarded(self.rows, "rows.html.j2", False)),
            Route("/rows.json", self.guarded(self.rows, "", True)),
            Route("/rows/{row_id:path}.json", self.guarded(self.one_row, "", True)),
            Route("/rows/{row_id:path}", self.guarded(self.one_row, "row.html.j2", False)),
            Route("/healthz", lambda request: PlainTextResponse("ok")),
        ]


REVIEW_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The review screen's policy: the dashboard's plus its one script, served by the app itself (no inline)."""

SECURITY_HEADERS = {
    # server-rendered pages with no script: nothing but the page's own inline style may load, and no one may
    # frame it
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response (pages, JSON twins, errors)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Add the headers to the response start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if _under_review(scope["path"]):
                    headers["content-security-policy"] = REVIEW_CSP
            await send(message)

        await self.app(scope, receive, with_headers)


def _under_review(path: str) -> bool:
    return path == "/review" or path.startswith("/review/")


class LoginRequired:
    """ASGI middleware: the dashboard's pages only with a review session (401 otherwise); the review screen
    checks its own sessions, and ``/healthz`` stays open for probes."""

    def __init__(self, app: ASGIApp, sessions: Sessions, refuse: Callable[[], Response]) -> None:
        self.app = app
        self.sessions = sessions
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 401."""
        path = scope.get("path", "")
        if scope["type"] != "http" or _under_review(path) or path == "/healthz":
            await self.app(scope, receive, send)
            return
        if await run_in_threadpool(self.sessions.of, Request(scope)) is None:
            await self.refuse()(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(
    store_url: str,
    *,
    cache_s: float = 30.0,
    failure_tags: Sequence[str] = (),
    login_for_dashboard: bool = False,
    session_ttl_s: float = SESSION_TTL_S,
    session_idle_s: float | None = SESSION_IDLE_S,
    min_overlap: int = DEFAULT_MIN_OVERLAP,
) -> Starlette:
    """The dashboard and the review screen over the store at ``store_url``, opened now (a bad URL raises
    :class:`StoreError`) and closed when the app shuts down. The overview of a window is recomputed at most
    every ``cache_s`` seconds (0: on every request); lists of rows and single rows are always read afresh.
    ``failure_tags``: the team's own tags for reviewers. ``login_for_dashboard`` (served off loopback): the
    dashboard's pages need a reviewer's session too; the review screen always does. Review sessions, kept in
    the store, end ``session_ttl_s`` after login or ``session_idle_s`` unused (``None``: no idle timeout);
    agreement between reviewers shows from ``min_overlap`` shared items."""
    store = Store.open(store_url)
    pages = DashboardPages(store, cache_s)
    sessions = Sessions(store.review_sessions, session_ttl_s, session_idle_s)
    secret, _ = store.secrets.get_or_create(SECRET_NAME, lambda: secrets.token_hex(32))
    handles = ItemHandles(secret, store.reviews.item_keys)
    review = ReviewPages(store, pages.env, taxonomy(failure_tags), sessions, handles, min_overlap)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    handlers = {404: pages.not_found, 405: pages.not_found}
    middleware = [Middleware(SecurityHeaders)]
    if login_for_dashboard:
        middleware.append(Middleware(LoginRequired, sessions=sessions, refuse=review.login_needed))
    app = Starlette(
        routes=[*review.routes(), *pages.routes()],
        lifespan=lifespan,
        exception_handlers=handlers,
        middleware=middleware,
    )
    app.state.store = store
    return app
