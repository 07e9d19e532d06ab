"""Shadow rows in the store: written in batches by the shadow log, read back in time order for judging."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, and_, func, or_, select, update

from ragreplay.core.shadow import ShadowAnswer, ShadowRow
from ragreplay.store import shadow_rollups as rollups
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked
from ragreplay.store.schema import dumps, shadow_rows, to_json


class ShadowRowsRepository(StoreBase):
    """Writing shadow rows (idempotent on id), reading them in ``(ts, id)`` order, marking them judged."""

    def write_shadow_rows(self, rows: Sequence[ShadowRow]) -> None:
        """Insert ``rows`` in one transaction; a row whose id is stored already is left as it is, so a
        retried batch never duplicates. A new row whose judgment was saved before it (rare) goes into the
        rollups then."""
        if not rows:
            return
        values = [_values(row) for row in rows]
        with self._write() as conn:
            early = rollups.judged_before_written(conn, {row.id: row.request_id for row in rows})
            conn.execute(self._insert_ignore(shadow_rows, ["id"]), values)
            if early is not None:
                rollups.after_judgments(conn, early.row_ids, early.before)

    def iter_shadow_rows(
        self, since: datetime | None = None, unjudged_only: bool = False, limit: int | None = None
    ) -> Iterator[ShadowRow]:
        """Rows with ``ts >= since`` (all when ``None``), oldest first (ties by id), only those not yet
        judged with ``unjudged_only``, at most ``limit``. Reads in pages, so memory stays flat."""
        remaining = limit
        after: tuple[datetime, str] | None = None
        while remaining is None or remaining > 0:
            page = BATCH_SIZE if remaining is None else min(BATCH_SIZE, remaining)
            query = select(shadow_rows).order_by(shadow_rows.c.ts, shadow_rows.c.id).limit(page)
            if since is not None:
                query = query.where(shadow_rows.c.ts >= since)
            if unjudged_only:
                query = query.where(shadow_rows.c.judged_at.is_(None))
            if after is not None:
                ts, row_id = after
                query = query.where(
                    or_(shadow_rows.c.ts > ts, and_(shadow_rows.c.ts == ts, shadow_rows.c.id > row_id))
                )
            with self._read() as conn:
                found = [_row(r) for r in conn.execute(query)]
            yield from found
            if len(found) < page:
                return
            after = (found[-1].ts, found[-1].id)
            if remaining is not None:
                remaining -= len(found)

    def count_shadow_rows(self, unjudged_only: bool = False) -> int:
        """How many shadow rows the store holds (only those not yet judged with ``unjudged_only``)."""
        query = select(func.count()).select_from(shadow_rows)
        if unjudged_only:
            query = query.where(shadow_rows.c.judged_at.is_(None))
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def shadowed_request_ids(self, request_ids: Iterable[str]) -> set[str]:
        """Those of ``request_ids`` that have at least one shadow row."""
        found: set[str] = set()
        with self._read() as conn:
            for part in chunked(list(dict.fromkeys(request_ids))):
                query = select(shadow_rows.c.request_id).where(shadow_rows.c.request_id.in_(part)).distinct()
                found.update(conn.execute(query).scalars())
        return found

    def mark_shadow_judged(self, ids: Sequence[str], at: datetime) -> int:
        """Set ``judged_at`` on the rows with these ids, in one transaction; returns how many exist."""
        marked = 0
        with self._write() as conn:
            for part in chunked(list(ids)):
                done = conn.execute(
                    update(shadow_rows).where(shadow_rows.c.id.in_(part)).values(judged_at=at)
                )
                marked += done.rowcount
        return marked


def _values(row: ShadowRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "ts": row.ts,
        "request_id": row.request_id,
        "challenger": row.challenger,
        "query": row.query,
        "user_hash": row.user_hash,
        "tags": dumps(row.tags),
        "champion_answer": to_json(row.champion_answer),
        "challenger_answer": to_json(row.challenger_answer),
        "judged_at": None,
    }


def _row(r: Row[Any]) -> ShadowRow:
    return ShadowRow(
        id=r.id,
        ts=r.ts,
        request_id=r.request_id,
        query=r.query,
        user_hash=r.user_hash,
        tags=json.loads(r.tags),
        challenger=r.challenger,
        champion_answer=ShadowAnswer.model_validate_json(r.champion_answer),
        challenger_answer=ShadowAnswer.model_validate_json(r.challenger_answer),
    )
