"""Human review in the store: reviewer accounts, queues of items, reservations and reviews.

A reviewer's token is returned once by :meth:`ReviewsRepository.add_reviewer` and only its sha256 is kept.
:meth:`ReviewsRepository.next_item_for` hands a reviewer the next item of a queue and reserves it in the same
locked transaction (``BEGIN IMMEDIATE`` on SQLite, a row lock on the queue on PostgreSQL), so two reviewers racing
never both get an item a queue wants reviewed once; a reservation lapses at its ``until``. The side order drawn for
a reviewer and an item is stored with the reservation and kept with the review.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, and_, delete, func, select, update

from ragreplay.core.review import SIDES, Review, ReviewItem, Side
from ragreplay.store.base import BATCH_SIZE, StoreBase, unique_by_prefix
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import (
    dumps,
    review_queue_items,
    review_queues,
    review_reservations,
    review_sessions,
    reviewers,
    reviews,
)

DEFAULT_HOLD = timedelta(minutes=30)
"""How long an item stays reserved for the reviewer it was handed to."""


def token_hash(token: str) -> str:
    """What the store keeps of a reviewer's token: its sha256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def random_side(_key: str) -> Side:
    """A side drawn uniformly at random (the default draw of the side shown as A)."""
    return SIDES[secrets.randbelow(2)]


class ReviewerRecord(BaseModel):
    """A reviewer account (its token is not kept)."""

    model_config = ConfigDict(frozen=True)

    name: str
    created_at: datetime
    disabled: bool


class QueueRecord(BaseModel):
    """A review queue: its kind (where its items came from), ``k`` reviewers wanted per item, the recipe that
    built it, and how many items it holds."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    created_at: datetime
    k: int
    recipe: dict[str, Any]
    n_items: int = 0


@dataclass(frozen=True)
class Assignment:
    """An item handed to a reviewer: what to show, which side is A, and until when it is theirs."""

    queue_id: str
    item: ReviewItem
    a_side: Side
    until: datetime


@dataclass(frozen=True)
class StoredReview:
    """A review with the queue it belongs to."""

    queue_id: str
    review: Review


@dataclass(frozen=True)
class ReviewerProgress:
    """One reviewer on one queue: reviews done, items held now, items skipped."""

    reviewer: str
    done: int
    held: int
    skipped: int


@dataclass(frozen=True)
class QueueProgress:
    """A queue's progress: items, reviews wanted (``items * k``), reviews in, items with ``k`` reviews, and
    each reviewer's part."""

    queue_id: str
    items: int
    k: int
    reviews: int
    complete_items: int
    reviewers: list[ReviewerProgress]

    @property
    def wanted(self) -> int:
        return self.items * self.k


class ReviewsRepository(StoreBase):
    """Reviewers, review queues, reservations and reviews."""

    # --- reviewers ----------------------------------------------------------------------------------------

    def add_reviewer(self, name: str) -> str:
        """Create reviewer ``name`` and return their token (shown once: only its hash is stored).
        :class:`StoreError` if the name is taken or blank."""
        name = name.strip()
        if not name:
            raise StoreError(
                "A reviewer needs a name. Fix: pass one, e.g. `ragreplay review reviewer add ann`."
            )
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            if conn.execute(select(reviewers.c.name).where(reviewers.c.name == name)).first():
                raise StoreError(f"A reviewer named {name!r} already exists. Fix: pick another name.")
            conn.execute(
                reviewers.insert(),
                [
                    {
                        "name": name,
                        "token_hash": token_hash(token),
                        "created_at": datetime.now(UTC),
                        "disabled": False,
                    }
                ],
            )
        return token

    def reviewer_for_token(self, token: str) -> str | None:
        """The enabled reviewer whose token this is, else ``None``."""
        if not token:
            return None
        query = select(reviewers.c.name).where(
            reviewers.c.token_hash == token_hash(token), reviewers.c.disabled.is_(False)
        )
        with self._read() as conn:
            return conn.execute(query).scalar_one_or_none()

    def set_reviewer_disabled(self, name: str, disabled: bool = True) -> bool:
        """Disable (or enable again) reviewer ``name``; ``False`` if there is none. Disabling ends their review
        screen sessions in the same transaction (they are logged out at their next request)."""
        with self._write() as conn:
            result = conn.execute(update(reviewers).where(reviewers.c.name == name).values(disabled=disabled))
            if disabled:
                conn.execute(delete(review_sessions).where(review_sessions.c.reviewer == name))
        return bool(result.rowcount)

    def rotate_token(self, name: str) -> str | None:
        """A new token for reviewer ``name`` (shown once, like the first): the old link stops working and their
        sessions end. ``None`` if there is no such reviewer."""
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            result = conn.execute(
                update(reviewers).where(reviewers.c.name == name).values(token_hash=token_hash(token))
            )
            conn.execute(delete(review_sessions).where(review_sessions.c.reviewer == name))
        return token if result.rowcount else None

    def list_reviewers(self) -> list[ReviewerRecord]:
        """Every reviewer, by name."""
        query = select(reviewers.c.name, reviewers.c.created_at, reviewers.c.disabled).order_by(
            reviewers.c.name
        )
        with self._read() as conn:
            return [ReviewerRecord(name=n, created_at=c, disabled=d) for n, c, d in conn.execute(query)]

    # --- queues -------------------------------------------------------------------------------------------

    def create_queue(
        self, kind: str, items: Sequence[ReviewItem], k: int = 1, recipe: Mapping[str, Any] | None = None
    ) -> QueueRecord:
        """Store a new queue with ``items`` (in that order) in one transaction and return it. ``k`` reviewers are
        wanted per item. :class:`StoreError` if ``k < 1`` or two items share a key."""
        if k < 1:
            raise StoreError(f"A queue needs at least one reviewer per item, got k={k}.")
        keys = [item.key for item in items]
        if len(set(keys)) != len(keys):
            twice = sorted({x for x in keys if keys.count(x) > 1})
            raise StoreError(f"A review queue cannot hold the same key twice: {', '.join(twice[:5])}.")
        record = QueueRecord(
            id="rq_" + uuid.uuid4().hex[:16],
            kind=kind,
            created_at=datetime.now(UTC),
            k=k,
            recipe=dict(recipe or {}),
            n_items=len(items),
        )
        with self._write() as conn:
            conn.execute(
                review_queues.insert(),
                [
                    {
                        "id": record.id,
                        "kind": kind,
                        "created_at": record.created_at,
                        "k": k,
                        "recipe": dumps(record.recipe),
                    }
                ],
            )
            values = [
                {"queue_id": record.id, "key": item.key, "position": i, "payload": item.model_dump_json()}
                for i, item in enumerate(items)
            ]
            for start in range(0, len(values), BATCH_SIZE):
                conn.execute(review_queue_items.insert(), values[start : start + BATCH_SIZE])
        return record

    def get_queue(self, ref: str) -> QueueRecord | None:
        """The queue named by ``ref`` (``latest``, an id or a unique id prefix), else ``None``."""
        ref = ref.strip()
        with self._read() as conn:
            if ref == "latest":
                found = conn.execute(
                    select(review_queues.c.id).order_by(review_queues.c.created_at.desc()).limit(1)
                ).scalar_one_or_none()
            else:
                found = unique_by_prefix(conn, review_queues.c.id, ref, "review queue")
            if found is None:
                return None
            return self._queues(conn, review_queues.c.id == found)[0]

    def list_queues(self, kind: str | None = None) -> list[QueueRecord]:
        """Every queue (of ``kind`` when given), newest first."""
        with self._read() as conn:
            return self._queues(conn, None if kind is None else review_queues.c.kind == kind)

    def _queues(self, conn: Connection, where: Any) -> list[QueueRecord]:
        counts = (
            select(review_queue_items.c.queue_id, func.count().label("n"))
            .group_by(review_queue_items.c.queue_id)
            .subquery()
        )
        query = (
            select(review_queues, func.coalesce(counts.c.n, 0).label("n_items"))
            .outerjoin(counts, counts.c.queue_id == review_queues.c.id)
            .order_by(review_queues.c.created_at.desc(), review_queues.c.id)
        )
        if where is not None:
            query = query.where(where)
        return [
            QueueRecord(
                id=r.id,
                kind=r.kind,
                created_at=r.created_at,
                k=r.k,
                recipe=json.loads(r.recipe),
                n_items=r.n_items,
            )
            for r in conn.execute(query)
        ]

    def load_items(self, queue_id: str) -> list[ReviewItem]:
        """A queue's items, in queue order."""
        query = (
            select(review_queue_items.c.payload)
            .where(review_queue_items.c.queue_id == queue_id)
            .order_by(review_queue_items.c.position)
        )
        with self._read() as conn:
            return [ReviewItem.model_validate_json(p) for p in conn.execute(query).scalars()]

    def item_keys(self, queue_id: str) -> list[str]:
        """The keys of a queue's items, in queue order."""
        query = (
            select(review_queue_items.c.key)
            .where(review_queue_items.c.queue_id == queue_id)
            .order_by(review_queue_items.c.position)
        )
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def get_item(self, queue_id: str, key: str) -> ReviewItem | None:
        """One item of a queue, else ``None``."""
        query = select(review_queue_items.c.payload).where(
            review_queue_items.c.queue_id == queue_id, review_queue_items.c.key == key
        )
        with self._read() as conn:
            payload = conn.execute(query).scalar_one_or_none()
        return None if payload is None else ReviewItem.model_validate_json(payload)

    # --- reservations ---------------------------------------------------------------------------------------

    def next_item_for(
        self,
        queue_id: str,
        reviewer: str,
        *,
        hold: timedelta = DEFAULT_HOLD,
        draw_side: Callable[[str], Side] = random_side,
        now: datetime | None = None,
    ) -> Assignment | None:
        """The item ``reviewer`` should review next in ``queue_id``, reserved for them until ``now + hold``;
        ``None`` when there is nothing left for them.

        An item they hold already comes first (a reload shows the same item). Otherwise the first item, in queue
        order, that they have neither reviewed nor skipped and whose reviews plus live reservations by others
        are under the queue's ``k``. The side shown as A is ``draw_side(key)`` the first time this reviewer is
        handed this item, and the stored one afterwards. :class:`StoreError` if the queue does not exist.
        """
        now = now or datetime.now(UTC)
        until = now + hold
        with self._write() as conn:
            lock = select(review_queues.c.k).where(review_queues.c.id == queue_id)
            if self._engine.dialect.name == "postgresql":
                lock = lock.with_for_update()
            k = conn.execute(lock).scalar_one_or_none()
            if k is None:
                raise StoreError(f"No review queue {queue_id!r} in the store at {self.url}.")
            mine = conn.execute(
                select(review_reservations.c.key, review_reservations.c.a_side)
                .where(
                    review_reservations.c.queue_id == queue_id,
                    review_reservations.c.reviewer == reviewer,
                    review_reservations.c.until > now,
                    review_reservations.c.skipped.is_(False),
                )
                .limit(1)
            ).first()
            if mine is not None:
                key, a_side = mine.key, mine.a_side
            else:
                picked = self._pick(conn, queue_id, reviewer, int(k), now)
                if picked is None:
                    return None
                key = picked
                earlier = conn.execute(
                    select(review_reservations.c.a_side).where(
                        review_reservations.c.queue_id == queue_id,
                        review_reservations.c.key == key,
                        review_reservations.c.reviewer == reviewer,
                    )
                ).scalar_one_or_none()
                a_side = earlier if earlier is not None else draw_side(key)
            row = {
                "queue_id": queue_id,
                "key": key,
                "reviewer": reviewer,
                "a_side": a_side,
                "until": until,
                "skipped": False,
            }
            conn.execute(self._upsert(review_reservations, ["queue_id", "key", "reviewer"]), [row])
            payload = conn.execute(
                select(review_queue_items.c.payload).where(
                    review_queue_items.c.queue_id == queue_id, review_queue_items.c.key == key
                )
            ).scalar_one()
        return Assignment(queue_id, ReviewItem.model_validate_json(payload), a_side, until)

    def _pick(self, conn: Connection, queue_id: str, reviewer: str, k: int, now: datetime) -> str | None:
        done = select(reviews.c.key).where(reviews.c.queue_id == queue_id, reviews.c.reviewer == reviewer)
        skipped = select(review_reservations.c.key).where(
            review_reservations.c.queue_id == queue_id,
            review_reservations.c.reviewer == reviewer,
            review_reservations.c.skipped.is_(True),
        )
        n_reviews = (
            select(func.count())
            .select_from(reviews)
            .where(reviews.c.queue_id == queue_id, reviews.c.key == review_queue_items.c.key)
            .scalar_subquery()
        )
        n_held = (
            select(func.count())
            .select_from(review_reservations)
            .where(
                review_reservations.c.queue_id == queue_id,
                review_reservations.c.key == review_queue_items.c.key,
                review_reservations.c.reviewer != reviewer,
                review_reservations.c.until > now,
                review_reservations.c.skipped.is_(False),
                # a reservation whose reviewer has reviewed the item counts once, as the review
                ~select(reviews.c.key)
                .where(
                    reviews.c.queue_id == queue_id,
                    reviews.c.key == review_reservations.c.key,
                    reviews.c.reviewer == review_reservations.c.reviewer,
                )
                .exists(),
            )
            .scalar_subquery()
        )
        query = (
            select(review_queue_items.c.key)
            .where(
                review_queue_items.c.queue_id == queue_id,
                review_queue_items.c.key.not_in(done),
                review_queue_items.c.key.not_in(skipped),
                (n_reviews + n_held) < k,
            )
            .order_by(review_queue_items.c.position)
            .limit(1)
        )
        return conn.execute(query).scalar_one_or_none()

    def release(self, queue_id: str, key: str, reviewer: str, *, skip: bool = False) -> None:
        """Give the item back (its reservation lapses now); with ``skip`` the reviewer is not handed it again.
        The side order drawn for them is kept."""
        now = datetime.now(UTC)
        with self._write() as conn:
            conn.execute(
                update(review_reservations)
                .where(
                    review_reservations.c.queue_id == queue_id,
                    review_reservations.c.key == key,
                    review_reservations.c.reviewer == reviewer,
                )
                .values(until=now, skipped=skip)
            )

    # --- reviews --------------------------------------------------------------------------------------------

    def save_review(self, queue_id: str, review: Review) -> None:
        """Save ``review`` of an item of ``queue_id`` (replacing the reviewer's earlier one of that item) and end
        their reservation of it. :class:`StoreError` if the item is not in the queue, or the side order differs
        from the one drawn for this reviewer (the review would not be of what they were shown)."""
        with self._write() as conn:
            self._put_review(conn, queue_id, review)

    def save_reviews(self, stored: Sequence[StoredReview]) -> None:
        """Save several reviews in one transaction (all or none), as :meth:`save_review` does each."""
        with self._write() as conn:
            for one in stored:
                self._put_review(conn, one.queue_id, one.review)

    def _put_review(self, conn: Connection, queue_id: str, review: Review) -> None:
        exists = conn.execute(
            select(review_queue_items.c.key).where(
                review_queue_items.c.queue_id == queue_id, review_queue_items.c.key == review.item_key
            )
        ).first()
        if exists is None:
            raise StoreError(f"Review queue {queue_id!r} has no item {review.item_key!r}.")
        where = and_(
            review_reservations.c.queue_id == queue_id,
            review_reservations.c.key == review.item_key,
            review_reservations.c.reviewer == review.reviewer,
        )
        drawn = conn.execute(select(review_reservations.c.a_side).where(where)).scalar_one_or_none()
        if drawn is not None and drawn != review.a_side:
            raise StoreError(
                f"Reviewer {review.reviewer!r} was shown {drawn} as A on item {review.item_key!r}, "
                f"but the review says {review.a_side}."
            )
        row = {
            "queue_id": queue_id,
            "key": review.item_key,
            "reviewer": review.reviewer,
            "a_side": review.a_side,
            "review": review.model_dump_json(),
            "created_at": review.submitted_at,
        }
        conn.execute(self._upsert(reviews, ["queue_id", "key", "reviewer"]), [row])
        conn.execute(delete(review_reservations).where(where))

    def load_reviews(
        self, queue_id: str | None = None, since: datetime | None = None, kind: str | None = None
    ) -> list[StoredReview]:
        """Reviews (of ``queue_id``, of queues of ``kind``, submitted at or after ``since``), oldest first."""
        query = select(reviews.c.queue_id, reviews.c.review).order_by(
            reviews.c.created_at, reviews.c.queue_id, reviews.c.key, reviews.c.reviewer
        )
        if queue_id is not None:
            query = query.where(reviews.c.queue_id == queue_id)
        if since is not None:
            query = query.where(reviews.c.created_at >= since)
        if kind is not None:
            query = query.where(
                reviews.c.queue_id.in_(select(review_queues.c.id).where(review_queues.c.kind == kind))
            )
        with self._read() as conn:
            return [StoredReview(q, Review.model_validate_json(r)) for q, r in conn.execute(query)]

    def progress(self, queue_id: str, now: datetime | None = None) -> QueueProgress:
        """How far ``queue_id`` is, overall and per reviewer. :class:`StoreError` if there is no such queue."""
        now = now or datetime.now(UTC)
        with self._read() as conn:
            k = conn.execute(
                select(review_queues.c.k).where(review_queues.c.id == queue_id)
            ).scalar_one_or_none()
            if k is None:
                raise StoreError(f"No review queue {queue_id!r} in the store at {self.url}.")
            n_items = conn.execute(
                select(func.count()).where(review_queue_items.c.queue_id == queue_id)
            ).scalar_one()
            per_item = conn.execute(
                select(reviews.c.key, reviews.c.reviewer).where(reviews.c.queue_id == queue_id)
            ).all()
            held = conn.execute(
                select(
                    review_reservations.c.reviewer, review_reservations.c.until, review_reservations.c.skipped
                ).where(review_reservations.c.queue_id == queue_id)
            ).all()
        done: dict[str, int] = {}
        by_key: dict[str, int] = {}
        for key, reviewer in per_item:
            done[reviewer] = done.get(reviewer, 0) + 1
            by_key[key] = by_key.get(key, 0) + 1
        holding: dict[str, int] = {}
        skipping: dict[str, int] = {}
        for reviewer, until, skipped in held:
            if skipped:
                skipping[reviewer] = skipping.get(reviewer, 0) + 1
            elif until > now:
                holding[reviewer] = holding.get(reviewer, 0) + 1
        names = sorted(set(done) | set(holding) | set(skipping))
        return QueueProgress(
            queue_id=queue_id,
            items=int(n_items),
            k=int(k),
            reviews=len(per_item),
            complete_items=sum(1 for n in by_key.values() if n >= k),
            reviewers=[
                ReviewerProgress(n, done.get(n, 0), holding.get(n, 0), skipping.get(n, 0)) for n in names
            ],
        )
