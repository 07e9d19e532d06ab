"""The review screen under ``/review``: login by token link, the queues with progress, one blind item at a time.

``GET /review?token=...`` (the link ``ragreplay review reviewer add`` prints) checks the token, starts a session
kept in the store (a random id in an HttpOnly, SameSite=Strict cookie; the store keeps only its hash; the token
is never in a later URL) and redirects to ``/review``, the queues with each reviewer's progress and, on queues
with two reviewers or more per item, the agreement between reviewers over the items you reviewed. ``GET
/review/QUEUE`` shows the item the reviewer holds (or reserves the next one): the history, the question, each
side's chunks and answer as A and B in the order stored on the reservation; nothing on the page names a
configuration, the judge's decision or the item's key (items are named by an opaque handle,
:mod:`ragreplay.web.review_handles`). ``POST /review/QUEUE`` saves a review (or skips) and goes on;
``/review/QUEUE/item/HANDLE`` edits one already reviewed (the screen's "back"); ``POST /review/logout`` ends the
session. Every POST carries the session's CSRF token (403 without it). Keys come from
``/review/static/keys.js``, the only script (CSP ``script-src 'self'``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ragreplay.core.review import Review, ReviewItem, Side, Taxonomy
from ragreplay.judges.pairwise import DEFAULT_AXES
from ragreplay.review.agreement import DEFAULT_MIN_OVERLAP, QueueAgreement, queue_agreement
from ragreplay.store import Store, StoreError
from ragreplay.store.review_sessions import ReviewSessionsRepository
from ragreplay.store.reviews import QueueRecord
from ragreplay.web.review_handles import ItemHandles

COOKIE = "rr_review"
SESSION_TTL_S = 12 * 3600.0
SESSION_IDLE_S = 2 * 3600.0
MAX_FORM_BYTES = 256 * 1024
AXES: tuple[str, ...] = tuple(axis.name for axis in DEFAULT_AXES)
RESERVED_KEYS = frozenset("abtsc")
"""Letters the screen uses itself (A, B, tie, skip, correct answer): never a tag's key."""


@dataclass(frozen=True)
class Session:
    """A logged-in reviewer: who, and the form (CSRF) token of the session."""

    reviewer: str
    csrf: str


def csrf_of(session_id: str) -> str:
    """The session's form token: derived from its id (so never stored), and telling nothing of the id."""
    digest = hmac.new(session_id.encode("utf-8"), b"ragreplay review csrf", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class Sessions:
    """Review sessions kept in the store (:mod:`ragreplay.store.review_sessions`): they outlive a restart, every
    replica sees them, and one ends ``ttl_s`` after login, after ``idle_s`` unused (``None``: never idle), at
    logout, or as soon as its reviewer is disabled or their token rotated."""

    def __init__(
        self,
        repository: ReviewSessionsRepository,
        ttl_s: float = SESSION_TTL_S,
        idle_s: float | None = SESSION_IDLE_S,
    ) -> None:
        self.repository = repository
        self.ttl_s = ttl_s
        self.idle = None if idle_s is None else timedelta(seconds=idle_s)

    def start(self, token: str) -> str | None:
        """A new session for the enabled reviewer with this token: its id; ``None`` for a bad token."""
        started = self.repository.start(token, timedelta(seconds=self.ttl_s), self.idle)
        return None if started is None else started[0]

    def get(self, sid: str | None) -> Session | None:
        """The live session with id ``sid``, else ``None``."""
        if not sid:
            return None
        found = self.repository.find(sid, self.idle)
        return None if found is None else Session(found.reviewer, csrf_of(sid))

    def of(self, request: Request) -> Session | None:
        """The session of ``request``'s cookie (reads the store: call it off the event loop)."""
        return self.get(request.cookies.get(COOKIE))

    def end(self, request: Request) -> None:
        """End the session of ``request``'s cookie."""
        sid = request.cookies.get(COOKIE)
        if sid:
            self.repository.end(sid)


def tag_keys(tags: Sequence[str]) -> dict[str, str]:
    """A key letter for each failure tag: the first letter of its name not taken (nor one the screen uses), else
    any free letter; tags past the 21 free letters get none."""
    keys: dict[str, str] = {}
    taken = set(RESERVED_KEYS)
    for tag in tags:
        letters = [c for c in tag if c.isascii() and c.isalpha()] + list("defghijklmnopqruvwxyz")
        free = next((c for c in letters if c not in taken), None)
        if free is not None:
            taken.add(free)
            keys[tag] = free
    return keys


def _scores(form: dict[str, list[str]], prefix: str) -> dict[str, int]:
    out = {}
    for axis in AXES:
        value = form.get(f"{prefix}.{axis}", [""])[0].strip()
        if value:
            out[axis] = int(value) if value.isdigit() else -1  # -1: the model says why it is refused
    return out


class ReviewPages:
    """The review routes over one open store, with the dashboard's Jinja2 environment. Items are named on the
    screen by ``handles``; agreement between reviewers shows from ``min_overlap`` shared items."""

    def __init__(
        self,
        store: Store,
        env: Environment,
        tax: Taxonomy,
        sessions: Sessions,
        handles: ItemHandles,
        min_overlap: int = DEFAULT_MIN_OVERLAP,
    ) -> None:
        self.store = store
        self.env = env
        self.tax = tax
        self.keys = tag_keys(tax.tags)
        self.sessions = sessions
        self.handles = handles
        self.min_overlap = min_overlap

    # --- rendering ------------------------------------------------------------------------------------------

    def page(self, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """``template`` rendered with ``context`` (autoescaped), never cached."""
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status_code, headers={"cache-control": "no-store"})

    def problem(self, status: int, title: str, message: str) -> HTMLResponse:
        """An error page."""
        return self.page("review_error.html.j2", status, status=status, title=title, message=message)

    def login_needed(self) -> HTMLResponse:
        """The 401 page: how to log in."""
        return self.problem(
            401,
            "Login needed",
            "Open your review link (the one `ragreplay review reviewer add NAME` printed) to log in. "
            "Fix: ask whoever runs ragreplay for a link if you have none",
        )

    def item_page(
        self,
        session: Session,
        queue: QueueRecord,
        item: ReviewItem,
        a_side: Side,
        *,
        edit: bool,
        given: Review | None = None,
        error: str | None = None,
        status_code: int = 200,
    ) -> HTMLResponse:
        """The item as A and B, with the form (filled in with ``given`` when editing)."""
        side_a, side_b = item.sides(a_side)
        handle = self.handles.of(queue.id, item.key)
        progress = self.store.reviews.progress(queue.id)
        mine = next((p for p in progress.reviewers if p.reviewer == session.reviewer), None)
        return self.page(
            "review_item.html.j2",
            status_code,
            queue=queue,
            item=item,
            handle=handle,
            sides=[("A", side_a), ("B", side_b)],
            axes=AXES,
            tags=[(t, self.keys.get(t)) for t in self.tax.tags],
            csrf=session.csrf,
            action=f"/review/{queue.id}/item/{handle}" if edit else f"/review/{queue.id}",
            back=self._back(queue.id, session.reviewer, item.key if edit else None),
            given=given,
            error=error,
            reviewer=session.reviewer,
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            done=mine.done if mine else 0,
            items=progress.items,
        )

    # --- endpoints ------------------------------------------------------------------------------------------

    def queues(self, request: Request) -> Response:
        """``/review``: log in with ``?token=`` or list the queues with progress and reviewer agreement."""
        token = request.query_params.get("token")
        if token is not None:
            sid = self.sessions.start(token)
            if sid is None:
                return self.problem(
                    401,
                    "Unknown link",
                    "This review link is not valid (or its reviewer was disabled). "
                    "Fix: ask for a new link (`ragreplay review reviewer add NAME`)",
                )
            response = RedirectResponse("/review", status_code=303)
            response.set_cookie(
                COOKIE,
                sid,
                max_age=int(self.sessions.ttl_s),
                path="/",
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return response
        session = self.sessions.of(request)
        if session is None:
            return self.login_needed()
        rows: list[tuple[QueueRecord, Any, Any, QueueAgreement | None]] = []
        for queue in self.store.reviews.list_queues():
            progress = self.store.reviews.progress(queue.id)
            mine = next((p for p in progress.reviewers if p.reviewer == session.reviewer), None)
            agreement = None
            if queue.k >= 2:
                agreement = queue_agreement(self.store, queue.id, session.reviewer, self.min_overlap)
            rows.append((queue, progress, mine, agreement))
        return self.page("review_queues.html.j2", reviewer=session.reviewer, csrf=session.csrf, rows=rows)

    def _queue(self, request: Request) -> QueueRecord | None:
        queue_id = request.path_params["queue"]
        if not queue_id.startswith("rq_"):
            return None
        found = self.store.reviews.get_queue(queue_id)
        return found if found is not None and found.id == queue_id else None

    def _back(self, queue_id: str, reviewer: str, before: str | None) -> str | None:
        """The link to the reviewer's review before item ``before`` (their latest when ``None``)."""
        keys = [
            s.review.item_key
            for s in self.store.reviews.load_reviews(queue_id)
            if s.review.reviewer == reviewer
        ]
        if before is not None:
            keys = keys[: keys.index(before)] if before in keys else keys
        return f"/review/{queue_id}/item/{self.handles.of(queue_id, keys[-1])}" if keys else None

    def current(self, request: Request) -> Response:
        """``GET /review/QUEUE``: the item the reviewer holds, or the next one reserved now."""
        session = self.sessions.of(request)
        if session is None:
            return self.login_needed()
        queue = self._queue(request)
        if queue is None:
            return self.problem(
                404, "No such queue", "There is no such review queue. Fix: pick one at /review"
            )
        assignment = self.store.reviews.next_item_for(queue.id, session.reviewer)
        if assignment is None:
            back = self._back(queue.id, session.reviewer, None)
            return self.page(
                "review_done.html.j2", queue=queue, reviewer=session.reviewer, csrf=session.csrf, back=back
            )
        return self.item_page(session, queue, assignment.item, assignment.a_side, edit=False)

    def edit(self, request: Request) -> Response:
        """``GET /review/QUEUE/item/HANDLE``: an item the reviewer reviewed already, with their answers."""
        session = self.sessions.of(request)
        if session is None:
            return self.login_needed()
        queue = self._queue(request)
        found = self._reviewed(queue, request.path_params["handle"], session.reviewer) if queue else None
        if queue is None or found is None:
            return self.problem(404, "Not found", "You have not reviewed that item. Fix: start from /review")
        item, given = found
        return self.item_page(session, queue, item, given.a_side, edit=True, given=given)

    def _reviewed(self, queue: QueueRecord, handle: str, reviewer: str) -> tuple[ReviewItem, Review] | None:
        key = self.handles.key(queue.id, handle)
        item = None if key is None else self.store.reviews.get_item(queue.id, key)
        given = next(
            (
                s.review
                for s in self.store.reviews.load_reviews(queue.id)
                if s.review.reviewer == reviewer and s.review.item_key == key
            ),
            None,
        )
        return None if item is None or given is None else (item, given)

    def posted(
        self, handler: Callable[[Request, Session, dict[str, list[str]]], Response]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A POST endpoint: a session and its CSRF token first (401, 403), then ``handler`` in the thread pool."""

        async def endpoint(request: Request) -> Response:
            session = await run_in_threadpool(self.sessions.of, request)
            if session is None:
                return self.login_needed()
            body = await request.body()
            form = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"), keep_blank_values=True)
            sent = form.get("csrf", [""])[0]
            if len(body) > MAX_FORM_BYTES or not secrets.compare_digest(sent.encode(), session.csrf.encode()):
                return self.problem(
                    403, "Form refused", "The form's check token is missing or stale. Fix: reload the page"
                )
            return await run_in_threadpool(handler, request, session, form)

        return endpoint

    def logout(self, request: Request, session: Session, form: dict[str, list[str]]) -> Response:
        """``POST /review/logout``: end the session (in the store) and drop the cookie."""
        self.sessions.end(request)
        response = self.page(
            "review_error.html.j2",
            status=200,
            title="Logged out",
            message="You are logged out. Open your review link again to log back in",
        )
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def submit_current(self, request: Request, session: Session, form: dict[str, list[str]]) -> Response:
        """``POST /review/QUEUE``: save (``action=submit``) or skip (``action=skip``) the held item, then the next."""
        queue = self._queue(request)
        if queue is None:
            return self.problem(
                404, "No such queue", "There is no such review queue. Fix: pick one at /review"
            )
        sent = form.get("item", [""])[0]
        held = self.store.reviews.next_item_for(queue.id, session.reviewer)
        if held is None or not secrets.compare_digest(self.handles.of(queue.id, held.item.key), sent):
            return self.problem(
                409, "Item moved on", "That item is no longer yours (its hold lapsed). Fix: reload the queue"
            )
        if form.get("action", ["submit"])[0] == "skip":
            self.store.reviews.release(queue.id, held.item.key, session.reviewer, skip=True)
            return RedirectResponse(f"/review/{queue.id}", status_code=303)
        return self._save(session, queue, held.item, held.a_side, form, edit=False)

    def submit_edit(self, request: Request, session: Session, form: dict[str, list[str]]) -> Response:
        """``POST /review/QUEUE/item/HANDLE``: replace an earlier review, then back to the queue."""
        queue = self._queue(request)
        found = self._reviewed(queue, request.path_params["handle"], session.reviewer) if queue else None
        if queue is None or found is None:
            return self.problem(404, "Not found", "You have not reviewed that item. Fix: start from /review")
        item, given = found
        return self._save(session, queue, item, given.a_side, form, edit=True)

    def _save(
        self,
        session: Session,
        queue: QueueRecord,
        item: ReviewItem,
        a_side: Side,
        form: dict[str, list[str]],
        *,
        edit: bool,
    ) -> Response:
        first = {name: values[0] for name, values in form.items() if values}
        correct = first.get("correct_answer", "").strip()
        shown = first.get("shown_at", "")
        try:
            shown_at = datetime.fromisoformat(shown) if shown else None
            if shown_at is not None and shown_at.tzinfo is None:
                shown_at = shown_at.replace(tzinfo=UTC)
            tags = [t for t in form.get("tag", []) if t]
            unknown = self.tax.check(tags)
            if unknown:
                raise ValueError(f"unknown failure tag {unknown[0]!r}")
            review = Review(
                reviewer=session.reviewer,
                item_key=item.key,
                a_side=a_side,
                choice=first.get("choice", ""),
                scores_a=_scores(form, "a"),
                scores_b=_scores(form, "b"),
                correct_answer=correct or None,
                failure_tags=tags,
                taxonomy_version=self.tax.version,
                shown_at=shown_at,
                submitted_at=datetime.now(UTC),
            )
        except (ValidationError, ValueError) as exc:
            message = _why(exc)
            return self.item_page(session, queue, item, a_side, edit=edit, error=message, status_code=400)
        try:
            self.store.reviews.save_review(queue.id, review)
        except StoreError:
            # the store's message names the item's key and the sides: not for the page
            return self.problem(
                409, "Not saved", "This review no longer matches the item you hold. Fix: reload the queue"
            )
        return RedirectResponse(f"/review/{queue.id}", status_code=303)

    def keys_js(self, request: Request) -> Response:
        """The screen's only script: the keyboard."""
        text = resources.files("ragreplay.web").joinpath("static/keys.js").read_text("utf-8")
        return Response(text, media_type="text/javascript", headers={"cache-control": "no-cache"})

    def routes(self) -> list[Route]:
        """The screen's routes."""
        return [
            Route("/review", self.queues),
            Route("/review/static/keys.js", self.keys_js),
            Route("/review/logout", self.posted(self.logout), methods=["POST"]),
            Route("/review/{queue}", self.current),
            Route("/review/{queue}", self.posted(self.submit_current), methods=["POST"]),
            Route("/review/{queue}/item/{handle}", self.edit),
            Route("/review/{queue}/item/{handle}", self.posted(self.submit_edit), methods=["POST"]),
        ]


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "review"
        if where == "choice":
            return "Pick A, B or tie (keys a, b, t) before submitting"
        return f"{where}: {first['msg']}"
    return str(exc)
