"""The review screen under ``/review``: login by token link, the queues with progress, one blind item at a time.

``GET /review?token=...`` (the link ``ragreplay review reviewer add`` prints) checks the token, starts a
server-side session (a random id in an HttpOnly, SameSite=Strict cookie; the token is never in a later URL) and
redirects to ``/review``, the queues with each reviewer's progress. ``GET /review/QUEUE`` shows the item the
reviewer holds (or reserves the next one): the history, the question, each side's chunks and answer as A and B
in the order stored on the reservation; nothing on the page names a configuration or the judge's decision.
``POST /review/QUEUE`` saves a review (or skips) and goes on; ``/review/QUEUE/item/KEY`` edits one already
reviewed (the screen's "back"). Every POST carries the session's CSRF token (403 without it). Keys come from
``/review/static/keys.js``, the only script (CSP ``script-src 'self'``).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ragreplay.core.review import Review, ReviewItem, Side, Taxonomy
from ragreplay.judges.pairwise import DEFAULT_AXES
from ragreplay.store import Store, StoreError
from ragreplay.store.reviews import QueueRecord

COOKIE = "rr_review"
SESSION_TTL_S = 12 * 3600.0
MAX_FORM_BYTES = 256 * 1024
AXES: tuple[str, ...] = tuple(axis.name for axis in DEFAULT_AXES)
RESERVED_KEYS = frozenset("abtsc")
"""Letters the screen uses itself (A, B, tie, skip, correct answer): never a tag's key."""


@dataclass(frozen=True)
class Session:
    """A logged-in reviewer: who, the form token of the session, and when it lapses (monotonic seconds)."""

    reviewer: str
    csrf: str
    expires: float


class Sessions:
    """Server-side sessions by random id (kept in memory: a restart logs everyone out; the link logs in again)."""

    def __init__(self, ttl_s: float = SESSION_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._by_id: dict[str, Session] = {}

    def start(self, reviewer: str) -> str:
        """A new session for ``reviewer``: its id."""
        sid = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now}
            self._by_id[sid] = Session(reviewer, secrets.token_urlsafe(32), now + self.ttl_s)
        return sid

    def get(self, sid: str | None) -> Session | None:
        """The live session with id ``sid``, else ``None``."""
        if not sid:
            return None
        with self._lock:
            found = self._by_id.get(sid)
        return found if found is not None and found.expires > time.monotonic() else None

    def of(self, request: Request) -> Session | None:
        """The session of ``request``'s cookie."""
        return self.get(request.cookies.get(COOKIE))


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
    """The review routes over one open store, with the dashboard's Jinja2 environment."""

    def __init__(self, store: Store, env: Environment, tax: Taxonomy, sessions: Sessions) -> None:
        self.store = store
        self.env = env
        self.tax = tax
        self.keys = tag_keys(tax.tags)
        self.sessions = sessions

    # --- rendering ------------------------------------------------------------------------------------------

    def page(self, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status_code, headers={"cache-control": "no-store"})

    def problem(self, status: int, title: str, message: str) -> HTMLResponse:
        return self.page("review_error.html.j2", status, status=status, title=title, message=message)

    def login_needed(self) -> HTMLResponse:
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
        action: str,
        back: str | None,
        given: Review | None = None,
        error: str | None = None,
        status_code: int = 200,
    ) -> HTMLResponse:
        side_a, side_b = item.sides(a_side)
        progress = self.store.reviews.progress(queue.id)
        mine = next((p for p in progress.reviewers if p.reviewer == session.reviewer), None)
        return self.page(
            "review_item.html.j2",
            status_code,
            queue=queue,
            item=item,
            sides=[("A", side_a), ("B", side_b)],
            axes=AXES,
            tags=[(t, self.keys.get(t)) for t in self.tax.tags],
            csrf=session.csrf,
            action=action,
            back=back,
            given=given,
            error=error,
            reviewer=session.reviewer,
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            done=mine.done if mine else 0,
            items=progress.items,
        )

    # --- endpoints ------------------------------------------------------------------------------------------

    def queues(self, request: Request) -> Response:
        """``/review``: log in with ``?token=`` or list the queues with progress."""
        token = request.query_params.get("token")
        if token is not None:
            reviewer = self.store.reviews.reviewer_for_token(token)
            if reviewer is None:
                return self.problem(
                    401,
                    "Unknown link",
                    "This review link is not valid (or its reviewer was disabled). "
                    "Fix: ask for a new link (`ragreplay review reviewer add NAME`)",
                )
            response = RedirectResponse("/review", status_code=303)
            response.set_cookie(
                COOKIE,
                self.sessions.start(reviewer),
                max_age=int(SESSION_TTL_S),
                path="/",
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return response
        session = self.sessions.of(request)
        if session is None:
            return self.login_needed()
        rows = []
        for queue in self.store.reviews.list_queues():
            progress = self.store.reviews.progress(queue.id)
            mine = next((p for p in progress.reviewers if p.reviewer == session.reviewer), None)
            rows.append((queue, progress, mine))
        return self.page("review_queues.html.j2", reviewer=session.reviewer, rows=rows)

    def _queue(self, request: Request) -> QueueRecord | None:
        queue_id = request.path_params["queue"]
        if not queue_id.startswith("rq_"):
            return None
        found = self.store.reviews.get_queue(queue_id)
        return found if found is not None and found.id == queue_id else None

    def _back(self, queue_id: str, reviewer: str, before: str | None) -> str | None:
        """The link to the reviewer's review before ``before`` (their latest when ``None``)."""
        keys = [
            s.review.item_key
            for s in self.store.reviews.load_reviews(queue_id)
            if s.review.reviewer == reviewer
        ]
        if before is not None:
            keys = keys[: keys.index(before)] if before in keys else keys
        return f"/review/{queue_id}/item/{quote(keys[-1], safe='')}" if keys else None

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
        back = self._back(queue.id, session.reviewer, None)
        if assignment is None:
            return self.page("review_done.html.j2", queue=queue, reviewer=session.reviewer, back=back)
        return self.item_page(
            session, queue, assignment.item, assignment.a_side, action=f"/review/{queue.id}", back=back
        )

    def edit(self, request: Request) -> Response:
        """``GET /review/QUEUE/item/KEY``: an item the reviewer reviewed already, with their answers."""
        session = self.sessions.of(request)
        if session is None:
            return self.login_needed()
        queue = self._queue(request)
        found = self._reviewed(queue, request.path_params["key"], session.reviewer) if queue else None
        if queue is None or found is None:
            return self.problem(404, "Not found", "You have not reviewed that item. Fix: start from /review")
        item, given = found
        return self.item_page(
            session,
            queue,
            item,
            given.a_side,
            action=f"/review/{queue.id}/item/{quote(item.key, safe='')}",
            back=self._back(queue.id, session.reviewer, item.key),
            given=given,
        )

    def _reviewed(self, queue: QueueRecord, key: str, reviewer: str) -> tuple[ReviewItem, Review] | None:
        item = self.store.reviews.get_item(queue.id, key)
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
            session = self.sessions.of(request)
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

    def submit_current(self, request: Request, session: Session, form: dict[str, list[str]]) -> Response:
        """``POST /review/QUEUE``: save (``action=submit``) or skip (``action=skip``) the held item, then the next."""
        queue = self._queue(request)
        if queue is None:
            return self.problem(
                404, "No such queue", "There is no such review queue. Fix: pick one at /review"
            )
        key = form.get("key", [""])[0]
        held = self.store.reviews.next_item_for(queue.id, session.reviewer)
        if held is None or held.item.key != key:
            return self.problem(
                409, "Item moved on", "That item is no longer yours (its hold lapsed). Fix: reload the queue"
            )
        if form.get("action", ["submit"])[0] == "skip":
            self.store.reviews.release(queue.id, key, session.reviewer, skip=True)
            return RedirectResponse(f"/review/{queue.id}", status_code=303)
        action = f"/review/{queue.id}"
        back = self._back(queue.id, session.reviewer, None)
        return self._save(session, queue, held.item, held.a_side, form, action, back, f"/review/{queue.id}")

    def submit_edit(self, request: Request, session: Session, form: dict[str, list[str]]) -> Response:
        """``POST /review/QUEUE/item/KEY``: replace an earlier review, then back to the queue."""
        queue = self._queue(request)
        found = self._reviewed(queue, request.path_params["key"], session.reviewer) if queue else None
        if queue is None or found is None:
            return self.problem(404, "Not found", "You have not reviewed that item. Fix: start from /review")
        item, given = found
        action = f"/review/{queue.id}/item/{quote(item.key, safe='')}"
        back = self._back(queue.id, session.reviewer, item.key)
        return self._save(session, queue, item, given.a_side, form, action, back, f"/review/{queue.id}")

    def _save(
        self,
        session: Session,
        queue: QueueRecord,
        item: ReviewItem,
        a_side: Side,
        form: dict[str, list[str]],
        action: str,
        back: str | None,
        then: str,
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
            return self.item_page(
                session, queue, item, a_side, action=action, back=back, error=message, status_code=400
            )
        try:
            self.store.reviews.save_review(queue.id, review)
        except StoreError as exc:
            return self.problem(409, "Not saved", f"{exc} Fix: reload the queue")
        return RedirectResponse(then, status_code=303)

    def keys_js(self, request: Request) -> Response:
        """The screen's only script: the keyboard."""
        text = resources.files("ragreplay.web").joinpath("static/keys.js").read_text("utf-8")
        return Response(text, media_type="text/javascript", headers={"cache-control": "no-cache"})

    def routes(self) -> list[Route]:
        return [
            Route("/review", self.queues),
            Route("/review/static/keys.js", self.keys_js),
            Route("/review/{queue}", self.current),
            Route("/review/{queue}", self.posted(self.submit_current), methods=["POST"]),
            Route("/review/{queue}/item/{key:path}", self.edit),
            Route("/review/{queue}/item/{key:path}", self.posted(self.submit_edit), methods=["POST"]),
        ]


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "review"
        if where == "choice":
            return "Pick A, B or tie (keys a, b, t) before submitting"
        return f"{where}: {first['msg']}"
    return str(exc)
