"""Work claims: several worker processes, on one machine or many, share one job through the store.

A job's items are a *queue* (a name such as ``shadow-judge``, ``replay:<run id>`` for the cases of one
replay run, or ``eval:<eval id>`` for the rows of one eval run). A worker claims a batch of items in one short
transaction: first the items whose claim has expired (their worker died or lost the store), then new items
in the job's order after the worker's cursor that nobody holds. A claim is a row of ``work_claims`` with the
worker's id and the end of its lease (seconds since the epoch, on the store's clock, so machines whose clocks
differ agree). The worker renews its leases while it works and deletes a claim once the item's result is
committed; an item done is never claimed again (the job's own table says it is done).

On PostgreSQL the candidates are locked ``FOR UPDATE SKIP LOCKED`` while a claim is written, so workers
claiming at the same moment pass each other by instead of waiting; on SQLite the claim's ``BEGIN IMMEDIATE``
transaction serialises them. Either way a claim row is inserted only where none exists (``ON CONFLICT DO
NOTHING ... RETURNING``) and taken over only while expired, so no item is held by two live workers.

An item a worker tried and recorded as failed may be *parked* (:meth:`WorkClaimsRepository.park`): its claim
stays, owned by nobody and never expiring, so no worker tries it again in this attempt of the job and none
waits for it; the job's next attempt deletes the parked claims.

``rate_buckets`` holds one token bucket per provider, shared by every worker: :meth:`take_tokens` refills and
takes from it atomically.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, and_, delete, exists, func, or_, select, text, update

from ragreplay.core.runs import ResultRecord, ResultStatus
from ragreplay.core.shadow import ShadowRow
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.claim_queues import PARKED_UNTIL, PARKED_WORKER, eval_queue, run_queue
from ragreplay.store.evals import EvalRowRecord, row_record
from ragreplay.store.runs import result_record
from ragreplay.store.schema import cases, eval_rows, rate_buckets, results, shadow_rows, work_claims
from ragreplay.store.shadow import _row as shadow_row

T = TypeVar("T")

SHADOW_JUDGE_QUEUE = "shadow-judge"
"""The queue of ``shadow judge``: the unjudged shadow rows, oldest first."""
MAX_BATCH = 1000
"""The most items one claim may take."""


@dataclass(frozen=True)
class ClaimBatch(Generic[T]):
    """What one claim got: the items (taken over first, then new ones), the cursor after the new ones, and how
    many items other workers hold under a live lease (the job is not over while they do)."""

    items: list[T]
    after: Any
    others_live: int


@dataclass(frozen=True)
class _Source(Generic[T]):
    """Where a queue's items come from: ``pending(conn, ids)`` the items of ``ids`` still to do (by id),
    ``fresh(conn, after, n)`` up to ``n`` items still to do after the cursor that nobody holds, each with its id,
    locked where the engine can, and ``cursor(item)`` the cursor after an item."""

    pending: Callable[[Connection, Sequence[str]], dict[str, T]]
    fresh: Callable[[Connection, Any, int], list[tuple[str, T]]]
    cursor: Callable[[T], Any]


class WorkClaimsRepository(StoreBase):
    """Claiming, renewing and releasing a queue's items, and the shared rate buckets."""

    def db_now(self, conn: Connection) -> float:
        """Seconds since the epoch on the store's clock."""
        if conn.dialect.name == "postgresql":
            return float(conn.execute(text("SELECT extract(epoch from clock_timestamp())")).scalar_one())
        return float(conn.execute(text("SELECT (julianday('now') - 2440587.5) * 86400.0")).scalar_one())

    def claim_shadow_rows(
        self,
        worker: str,
        n: int,
        lease_s: float,
        since: datetime | None = None,
        after: tuple[datetime, str] | None = None,
    ) -> ClaimBatch[ShadowRow]:
        """Claim up to ``n`` unjudged shadow rows with ``ts >= since`` for ``worker`` (leased ``lease_s``
        seconds): expired claims first, then rows after the cursor ``after`` (``(ts, id)``) nobody holds."""

        def pending(conn: Connection, ids: Sequence[str]) -> dict[str, ShadowRow]:
            query = select(shadow_rows).where(shadow_rows.c.id.in_(ids), shadow_rows.c.judged_at.is_(None))
            if since is not None:
                query = query.where(shadow_rows.c.ts >= since)
            return {r.id: shadow_row(r) for r in conn.execute(query)}

        def fresh(conn: Connection, cursor: Any, size: int) -> list[tuple[str, ShadowRow]]:
            held = exists().where(
                work_claims.c.queue == SHADOW_JUDGE_QUEUE, work_claims.c.item_id == shadow_rows.c.id
            )
            query = (
                select(shadow_rows)
                .where(shadow_rows.c.judged_at.is_(None), ~held)
                .order_by(shadow_rows.c.ts, shadow_rows.c.id)
                .limit(size)
                .with_for_update(of=shadow_rows, skip_locked=True)
            )
            if since is not None:
                query = query.where(shadow_rows.c.ts >= since)
            if cursor is not None:
                ts, row_id = cursor
                query = query.where(
                    or_(shadow_rows.c.ts > ts, and_(shadow_rows.c.ts == ts, shadow_rows.c.id > row_id))
                )
            return [(r.id, shadow_row(r)) for r in conn.execute(query)]

        source = _Source(pending, fresh, lambda row: (row.ts, row.id))
        return self._claim(SHADOW_JUDGE_QUEUE, worker, n, lease_s, after, source)

    def claim_run_results(
        self, worker: str, run_id: str, n: int, lease_s: float, after: str | None = None
    ) -> ClaimBatch[ResultRecord]:
        """Claim up to ``n`` results of replay run ``run_id`` that are not done, whose case is still in the
        store, for ``worker`` (leased ``lease_s`` seconds): expired claims first, then results after the case id
        ``after`` nobody holds (parked ones included: see :meth:`park`), in case id order."""
        done = ResultStatus.DONE.value
        queue = run_queue(run_id)

        def pending(conn: Connection, ids: Sequence[str]) -> dict[str, ResultRecord]:
            query = select(results).where(
                results.c.run_id == run_id, results.c.case_id.in_(ids), results.c.status != done
            )
            return {r.case_id: result_record(r) for r in conn.execute(query)}

        def fresh(conn: Connection, cursor: Any, size: int) -> list[tuple[str, ResultRecord]]:
            held = exists().where(work_claims.c.queue == queue, work_claims.c.item_id == results.c.case_id)
            query = (
                select(results)
                .join(cases, cases.c.id == results.c.case_id)
                .where(results.c.run_id == run_id, results.c.status != done, ~held)
                .order_by(results.c.case_id)
                .limit(size)
                .with_for_update(of=results, skip_locked=True)
            )
            if cursor is not None:
                query = query.where(results.c.case_id > cursor)
            return [(r.case_id, result_record(r)) for r in conn.execute(query)]

        source = _Source(pending, fresh, lambda result: result.case_id)
        return self._claim(queue, worker, n, lease_s, after, source)

    def claim_eval_rows(
        self, worker: str, eval_id: str, n: int, lease_s: float, after: str | None = None
    ) -> ClaimBatch[EvalRowRecord]:
        """Claim up to ``n`` rows of eval run ``eval_id`` not scored yet (stored with an error: placeholders,
        rows answered but not judged, errored rows) for ``worker`` (leased ``lease_s`` seconds): expired claims
        first, then rows after the row id ``after`` nobody holds (parked ones included), in row id order."""
        queue = eval_queue(eval_id)

        def pending(conn: Connection, ids: Sequence[str]) -> dict[str, EvalRowRecord]:
            query = select(eval_rows).where(
                eval_rows.c.eval_id == eval_id, eval_rows.c.row_id.in_(ids), eval_rows.c.error.is_(True)
            )
            return {r.row_id: row_record(r) for r in conn.execute(query)}

        def fresh(conn: Connection, cursor: Any, size: int) -> list[tuple[str, EvalRowRecord]]:
            held = exists().where(work_claims.c.queue == queue, work_claims.c.item_id == eval_rows.c.row_id)
            query = (
                select(eval_rows)
                .where(eval_rows.c.eval_id == eval_id, eval_rows.c.error.is_(True), ~held)
                .order_by(eval_rows.c.row_id)
                .limit(size)
                .with_for_update(of=eval_rows, skip_locked=True)
            )
            if cursor is not None:
                query = query.where(eval_rows.c.row_id > cursor)
            return [(r.row_id, row_record(r)) for r in conn.execute(query)]

        source = _Source(pending, fresh, lambda row: row.row_id)
        return self._claim(queue, worker, n, lease_s, after, source)

    def park(self, queue: str, worker: str, item_ids: Sequence[str]) -> int:
        """Turn ``worker``'s claims of ``item_ids`` into parked ones (``PARKED_UNTIL``): items it tried and
        recorded as failed, not to be claimed again in this attempt of the job; returns how many."""
        parked = 0
        with self._write() as conn:
            for part in chunked(list(item_ids)):
                parked += int(
                    conn.execute(
                        update(work_claims)
                        .where(
                            work_claims.c.queue == queue,
                            work_claims.c.worker == worker,
                            work_claims.c.item_id.in_(part),
                        )
                        .values(worker=PARKED_WORKER, lease_until=PARKED_UNTIL)
                    ).rowcount
                )
        return parked

    def live_claims(self, queue: str, other_than: str | None = None) -> int:
        """How many claims of ``queue`` are held under a live lease (parked ones left out), by workers other
        than ``other_than`` when given."""
        with self._read() as conn:
            now = self.db_now(conn)
            query = (
                select(func.count())
                .select_from(work_claims)
                .where(
                    work_claims.c.queue == queue,
                    work_claims.c.lease_until >= now,
                    work_claims.c.lease_until < PARKED_UNTIL,
                )
            )
            if other_than is not None:
                query = query.where(work_claims.c.worker != other_than)
            return int(conn.execute(query).scalar_one())

    def parked(self, queue: str) -> int:
        """How many items of ``queue`` are parked (see :meth:`park`)."""
        query = (
            select(func.count())
            .select_from(work_claims)
            .where(work_claims.c.queue == queue, work_claims.c.lease_until >= PARKED_UNTIL)
        )
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def _claim(
        self, queue: str, worker: str, n: int, lease_s: float, after: Any, source: _Source[T]
    ) -> ClaimBatch[T]:
        n = max(1, min(n, MAX_BATCH))
        with self._write() as conn:
            now = self.db_now(conn)
            until = now + lease_s
            items = self._take_over(conn, queue, worker, n, now, until, source)
            cursor = after
            if len(items) < n:
                found = source.fresh(conn, after, n - len(items))
                if found:
                    cursor = source.cursor(found[-1][1])
                    granted = self._insert_claims(conn, queue, worker, until, [i for i, _ in found])
                    items += [item for item_id, item in found if item_id in granted]
            others = conn.execute(
                select(func.count())
                .select_from(work_claims)
                .where(
                    work_claims.c.queue == queue,
                    work_claims.c.worker != worker,
                    work_claims.c.lease_until >= now,
                    work_claims.c.lease_until < PARKED_UNTIL,
                )
            ).scalar_one()
        return ClaimBatch(items, cursor, int(others))

    def _take_over(
        self,
        conn: Connection,
        queue: str,
        worker: str,
        n: int,
        now: float,
        until: float,
        source: _Source[T],
    ) -> list[T]:
        """Expired claims of ``queue`` taken over by ``worker``; those whose item is done meanwhile deleted."""
        expired = list(
            conn.execute(
                select(work_claims.c.item_id)
                .where(work_claims.c.queue == queue, work_claims.c.lease_until < now)
                .order_by(work_claims.c.lease_until, work_claims.c.item_id)
                .limit(n)
                .with_for_update(skip_locked=True)
            ).scalars()
        )
        if not expired:
            return []
        pending = source.pending(conn, expired)
        done = [i for i in expired if i not in pending]
        if done:
            conn.execute(
                delete(work_claims).where(
                    work_claims.c.queue == queue,
                    work_claims.c.item_id.in_(done),
                    work_claims.c.lease_until < now,
                )
            )
        ids = [i for i in expired if i in pending]
        if not ids:
            return []
        taken = conn.execute(
            update(work_claims)
            .where(
                work_claims.c.queue == queue,
                work_claims.c.item_id.in_(ids),
                work_claims.c.lease_until < now,
            )
            .values(worker=worker, lease_until=until)
            .returning(work_claims.c.item_id)
        ).scalars()
        return [pending[i] for i in taken]

    def _insert_claims(
        self, conn: Connection, queue: str, worker: str, until: float, ids: Sequence[str]
    ) -> set[str]:
        """Claims for ``ids`` where none exists; returns the ids claimed."""
        rows = [{"queue": queue, "item_id": i, "worker": worker, "lease_until": until} for i in ids]
        statement = (
            self._insert(work_claims)
            .values(rows)
            .on_conflict_do_nothing(index_elements=["queue", "item_id"])
            .returning(work_claims.c.item_id)
        )
        granted = set(conn.execute(statement).scalars())
        return granted

    def renew(self, queue: str, worker: str, lease_s: float) -> int:
        """Extend every claim ``worker`` holds in ``queue`` by ``lease_s`` from now; returns how many it holds."""
        with self._write() as conn:
            until = self.db_now(conn) + lease_s
            done = conn.execute(
                update(work_claims)
                .where(work_claims.c.queue == queue, work_claims.c.worker == worker)
                .values(lease_until=until)
            )
            return int(done.rowcount)

    def release(self, queue: str, worker: str, item_ids: Sequence[str] | None = None) -> int:
        """Delete ``worker``'s claims of ``item_ids`` in ``queue`` (all of them when ``None``); returns how many."""
        deleted = 0
        with self._write() as conn:
            base = delete(work_claims).where(work_claims.c.queue == queue, work_claims.c.worker == worker)
            if item_ids is None:
                return int(conn.execute(base).rowcount)
            for part in chunked(list(item_ids)):
                deleted += int(conn.execute(base.where(work_claims.c.item_id.in_(part))).rowcount)
        return deleted

    def claims(self, queue: str) -> dict[str, tuple[str, float]]:
        """The claims of ``queue``: item id -> (worker, lease end)."""
        query = select(work_claims.c.item_id, work_claims.c.worker, work_claims.c.lease_until).where(
            work_claims.c.queue == queue
        )
        with self._read() as conn:
            return {item: (worker, float(until)) for item, worker, until in conn.execute(query)}

    def take_tokens(self, name: str, want: float, rate: float, capacity: float) -> tuple[float, float]:
        """Take up to ``want`` whole tokens from the shared bucket ``name`` (refilled at ``rate`` a second up to
        ``capacity``; made full on first use); returns ``(taken, wait_s)``: ``wait_s`` is how long until ``want``
        tokens (or a full bucket) are there when none was taken (else 0), as asking sooner would find too few.
        One transaction; the bucket row is locked while it changes, so workers never take the same token."""
        if rate <= 0 or capacity < 1:
            raise ValueError("a rate bucket needs a positive rate and a capacity of at least 1")
        with self._write() as conn:
            now = self.db_now(conn)
            conn.execute(
                self._insert(rate_buckets)
                .on_conflict_do_nothing(index_elements=["name"])
                .values(name=name, tokens=capacity, rate=rate, capacity=capacity, stamp=now)
            )
            tokens, stamp = conn.execute(
                select(rate_buckets.c.tokens, rate_buckets.c.stamp)
                .where(rate_buckets.c.name == name)
                .with_for_update()
            ).one()
            level = min(capacity, float(tokens) + rate * max(0.0, now - float(stamp)))
            taken = float(min(math.floor(want), math.floor(level))) if level >= 1 else 0.0
            conn.execute(
                update(rate_buckets)
                .where(rate_buckets.c.name == name)
                .values(tokens=level - taken, stamp=now, rate=rate, capacity=capacity)
            )
        return taken, 0.0 if taken else max(0.0, min(math.floor(want), capacity) - level) / rate
