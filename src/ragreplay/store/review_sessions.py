"""The review screen's sessions in the store: they outlive a restart of the web app and every replica sees them.

Only the sha256 of a session id is kept (the id itself lives in the reviewer's cookie). A session belongs to a
reviewer and to the token they logged in with: :meth:`ReviewSessionsRepository.find` answers a session only
while that reviewer is enabled and still has that token, before its end and within the idle timeout, so
disabling a reviewer or rotating their token ends their sessions at the next request even where a session row
is left (the reviews repository also deletes them).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, or_, select, update

from ragreplay.store.base import StoreBase
from ragreplay.store.reviews import token_hash
from ragreplay.store.schema import review_sessions, reviewers

TOUCH_EVERY = timedelta(minutes=1)
"""How stale ``last_seen`` may get before a request writes it again (not every request writes)."""


def session_hash(session_id: str) -> str:
    """What the store keeps of a session id: its sha256, hex."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SessionRecord:
    """A live session: whose, and when it started, lapses and was last used."""

    reviewer: str
    created_at: datetime
    expires_at: datetime
    last_seen: datetime


class ReviewSessionsRepository(StoreBase):
    """Sessions of the review screen, by the hash of their id."""

    def start(
        self, token: str, ttl: timedelta, idle: timedelta | None = None, now: datetime | None = None
    ) -> tuple[str, str] | None:
        """A new session for the enabled reviewer whose token this is: ``(session id, reviewer)``; ``None`` for
        an unknown token or a disabled reviewer. Sessions that have lapsed (``ttl`` or ``idle``) are removed."""
        if not token:
            return None
        now = now or datetime.now(UTC)
        hashed = token_hash(token)
        session_id = secrets.token_urlsafe(32)
        with self._write() as conn:
            self._purge(conn, now, idle)
            reviewer = conn.execute(
                select(reviewers.c.name).where(
                    reviewers.c.token_hash == hashed, reviewers.c.disabled.is_(False)
                )
            ).scalar_one_or_none()
            if reviewer is None:
                return None
            row = {
                "id_hash": session_hash(session_id),
                "reviewer": reviewer,
                "token_hash": hashed,
                "created_at": now,
                "expires_at": now + ttl,
                "last_seen": now,
            }
            conn.execute(review_sessions.insert(), [row])
        return session_id, reviewer

    def find(
        self, session_id: str, idle: timedelta | None = None, now: datetime | None = None
    ) -> SessionRecord | None:
        """The live session with this id, else ``None``: not lapsed, used within ``idle``, and its reviewer
        enabled with the token the session was started with. A hit older than :data:`TOUCH_EVERY` records now
        as its last use."""
        if not session_id:
            return None
        now = now or datetime.now(UTC)
        hashed = session_hash(session_id)
        query = (
            select(
                review_sessions.c.reviewer,
                review_sessions.c.created_at,
                review_sessions.c.expires_at,
                review_sessions.c.last_seen,
            )
            .join(
                reviewers,
                (reviewers.c.name == review_sessions.c.reviewer)
                & (reviewers.c.token_hash == review_sessions.c.token_hash),
            )
            .where(
                review_sessions.c.id_hash == hashed,
                reviewers.c.disabled.is_(False),
                review_sessions.c.expires_at > now,
            )
        )
        with self._read() as conn:
            row = conn.execute(query).first()
        if row is None or (idle is not None and row.last_seen <= now - idle):
            return None
        last_seen = row.last_seen
        if now - last_seen >= TOUCH_EVERY:
            with self._write() as conn:
                conn.execute(
                    update(review_sessions).where(review_sessions.c.id_hash == hashed).values(last_seen=now)
                )
            last_seen = now
        return SessionRecord(row.reviewer, row.created_at, row.expires_at, last_seen)

    def end(self, session_id: str) -> bool:
        """Delete the session (logout); ``False`` when there was none."""
        with self._write() as conn:
            result = conn.execute(
                delete(review_sessions).where(review_sessions.c.id_hash == session_hash(session_id))
            )
        return bool(result.rowcount)

    def count(self, reviewer: str | None = None) -> int:
        """Session rows kept (of ``reviewer``), lapsed or not."""
        query = select(review_sessions.c.id_hash)
        if reviewer is not None:
            query = query.where(review_sessions.c.reviewer == reviewer)
        with self._read() as conn:
            return len(conn.execute(query).all())

    def _purge(self, conn: Connection, now: datetime, idle: timedelta | None) -> None:
        lapsed = review_sessions.c.expires_at <= now
        if idle is not None:
            lapsed = or_(lapsed, review_sessions.c.last_seen <= now - idle)
        conn.execute(delete(review_sessions).where(lapsed))
